#!/usr/bin/env bash
# The one script a GPU machine runs (docs/frameworks.md, "GPUs"): from the repository root,
# offline, in about 7 minutes. It builds Stoker there and records, step by step, what the
# machine is, the extension's std:: symbols that bind without a version, a minimal Loader
# (under a debugger, and with the dynamic linker's bindings), the CUDA tests, host-to-device
# copies (benchmarks/cuda_transfer.py, benchmarks/pinned_copy.py), the engine's thread scaling
# (benchmarks/cpp/scaling_benchmark.cc) and a training loop's GPU use
# (benchmarks/gpu_utilization.py) and a fleet of servers in network namespaces
# (benchmarks/fleet_netns.py). A step that fails, times out or crashes is recorded and the
# next one runs.
#
#   OUT=DIR WHEELS=DIR scripts/device_check.sh
#
#   OUT       where everything goes (default ./device-out): summary.tsv (step, exit status,
#             seconds), device_check.log (every step's output), symbols.txt, ld_bindings.txt,
#             and each benchmark's JSON. At most 8 files, for the device tool brings back no
#             more.
#   WHEELS    wheels from scripts/device_wheels.sh (default ./device-wheels), installed into a
#             venv that also sees the machine's packages (torch, numpy, cmake, ninja).
#   DEVICE_CHECK_BUDGET_S   seconds for the whole run (default 480): a step gets at most what
#             is left, and none starts with under 10 s left.
#   DEVICE_CHECK_NO_GPU=1   only the steps that need no GPU (to try the script elsewhere).
#   The extension is also built a second time linked the old way (STOKER_LINK_STDCXX_FIRST=OFF:
#             pyarrow's libraries before libstdc++), and the symbol report, the reproducer and
#             the bindings run on both: the cause of the crash, with one variable changed.
#   DEVICE_CHECK_REF=COMMIT also builds COMMIT (a git worktree: the carried tree needs .git) or
#             a tree in a .tar/.tar.gz (`git archive COMMIT | gzip`), and runs the symbol report
#             and the reproducer on it too: the crash before a fix. Adds a build (minutes).
#   DEVICE_CHECK_ONLY=REGEX only the steps whose names match (bash regex; the others are
#             recorded as skipped), e.g. 'machine|toolchain|venv|build|data|symbols|repro|cuda'.
#   DEVICE_CHECK_ROWS       rows of the criteo data for the scaling and training steps
#             (default 4,000,000).
#   DEVICE_CHECK_TRANSFER_ROWS  embedding rows of cuda_transfer.py (default 1,000,000);
#   DEVICE_CHECK_GPU_STEPS      timed steps of gpu_utilization.py (default 1,000).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=$(realpath -m "${OUT:-$root/device-out}")
wheels=$(realpath -m "${WHEELS:-$root/device-wheels}")
budget=${DEVICE_CHECK_BUDGET_S:-480}
rows=${DEVICE_CHECK_ROWS:-4000000}
transfer_rows=${DEVICE_CHECK_TRANSFER_ROWS:-1000000}
gpu_steps=${DEVICE_CHECK_GPU_STEPS:-1000}
no_gpu=${DEVICE_CHECK_NO_GPU:-0}
ref=${DEVICE_CHECK_REF:-}
work=$(mktemp -d /tmp/stoker-device-check.XXXX)  # venvs, data, build logs: not brought back
mkdir -p "$out"
log=$out/device_check.log
summary=$out/summary.tsv
deadline=$((SECONDS + budget))
jobs=$(nproc)
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 CMAKE_BUILD_PARALLEL_LEVEL=$jobs
printf 'step\tstatus\tseconds\n' >"$summary"
: >"$log"

# step NAME CAP_S COMMAND: runs COMMAND (bash -c) for at most CAP_S seconds, or what is left of
# the budget, appending its output to the log and its exit status and time to the summary.
# 124: timed out; 128+N: killed by signal N (139: SIGSEGV).
step() {
  local name=$1 cap=$2 cmd=$3 left=$((deadline - SECONDS))
  if [[ -n "${DEVICE_CHECK_ONLY:-}" && ! "$name" =~ ${DEVICE_CHECK_ONLY} ]]; then
    printf '%s\tskipped: not in DEVICE_CHECK_ONLY\t0\n' "$name" >>"$summary"
    return 0
  fi
  if ((left < 10)); then
    printf '%s\tskipped: out of time\t0\n' "$name" >>"$summary"
    return 1
  fi
  ((left < cap)) && cap=$left
  printf '\n===== %s (at most %s s)\n$ %s\n' "$name" "$cap" "$cmd" >>"$log"
  local start=$SECONDS
  timeout -k 5 "$cap" bash -c "$cmd" >>"$log" 2>&1
  local status=$?
  local what=$status
  ((status == 124)) && what="124 (timed out)"
  ((status > 128 && status != 124)) && what="$status (signal $((status - 128)))"
  printf '%s\t%s\t%s\n' "$name" "$what" "$((SECONDS - start))" >>"$summary"
  printf '===== %s: exit %s, %s s\n' "$name" "$what" "$((SECONDS - start))" | tee -a "$log"
  return "$status"
}

# The venv at $1: the carried wheels over the machine's own packages. The machine's python3 is
# itself a venv's (torch's), whose packages --system-site-packages does not show (only the base
# interpreter's): a .pth names its site-packages, after the venv's own. A second names devtools/,
# where the benchmarks' helpers are (stoker_devtools, as the Makefile's venvs list it).
make_venv() {
  # Without ensurepip (Ubuntu's python3 lacks it unless python3-venv is installed), a venv
  # without pip: the machine's pip, seen through the .pth below, installs into it all the same.
  "$machine_python" -m venv --system-site-packages "$1" ||
    "$machine_python" -m venv --system-site-packages --without-pip "$1" || return
  local purelib
  purelib=$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$machine_python" -c 'import site; print("\n".join(site.getsitepackages()))' \
    >"$purelib/machine-packages.pth"
  echo "$root/devtools" >"$purelib/stoker-devtools.pth"
  if compgen -G "$wheels/*.whl" >/dev/null; then
    "$1/bin/python" -m pip install -q --no-index --no-deps --no-compile "$wheels"/*.whl
  else
    echo "no wheels in $wheels: using the machine's own packages"
  fi
}

# symbols DIR: the std:: symbols the extension in DIR's venv imports without a version (they
# bind to whichever library exports them first), and its NEEDED libraries in load order.
symbols() {
  local py=$1/bin/python so
  so=$("$py" -c 'import stoker._core as c; print(c.__file__)') || return 1
  echo "# $so"
  echo "## std:: symbols imported without a GLIBCXX version"
  nm -D --undefined-only "$so" | grep -v @ | c++filt | grep -E '^ +U (std::|vtable for std|VTT for std)'
  echo "## NEEDED, in load order"
  readelf -d "$so" | grep NEEDED
}

# repro VENV: one Loader over a small dataset, its config() (where the crash was) and a batch,
# with torch imported first as on the machine where it crashed, under Python's faulthandler;
# when it fails, again under a debugger when one is there (gdb, else cuda-gdb) for a backtrace.
repro() {
  local py=$1/bin/python script
  script="import torch, json, stoker; l = stoker.Loader('$work/small', batch_size=1000, output='torch'); print(json.loads(l._core.config())['batch_size'], next(iter(l))['label'].shape)"
  echo "## python -X faulthandler"
  "$py" -X faulthandler -c "$script"
  local status=$?
  local debugger
  debugger=$(command -v gdb || command -v cuda-gdb || true)
  if ((status != 0)) && [[ -n "$debugger" ]]; then
    echo "## $debugger"
    # at most a minute: a debugger reads the symbols of every library torch loads
    timeout 60 "$debugger" -q -batch -ex run -ex bt --args "$py" -c "$script" 2>&1 | tail -60
  fi
  return "$status"
}

ld_bindings() {  # the dynamic linker's bindings of the std::string-stream symbols
  local py=$1/bin/python
  LD_DEBUG=bindings "$py" -c "import torch, stoker; stoker.Loader('$work/small', batch_size=1000, output='torch')" 2>&1 >/dev/null |
    grep -E 'ostringstream|stringbuf|istringstream|bad_array_new_length' | c++filt
}

machine_python=$(command -v python3)
export -f symbols repro ld_bindings
export work wheels out root machine_python

venv=$work/venv
py=$venv/bin/python
export PATH=$venv/bin:$PATH

step machine 30 "lscpu; nvidia-smi; uname -a; g++ --version; python3 --version; cat /etc/os-release; python3 -c 'import torch; print(\"torch\", torch.__version__, torch.version.cuda)'; cmake --version; ls -d .git 2>&1"
# Where the compiler finds libstdc++: a missing libstdc++.so makes -lstdc++ take the archive.
step toolchain 20 "for f in libstdc++.so libstdc++.a libstdc++.so.6; do echo \"\$f: \$(g++ -print-file-name=\$f)\"; ls -lL \"\$(g++ -print-file-name=\$f)\" 2>&1; done; ls -l /usr/lib/gcc/x86_64-linux-gnu/*/ | grep -i stdc; dpkg -l | grep -E 'libstdc|g\+\+' ; env | grep -E 'FLAGS|^CC|^CXX' || true"
step venv 120 "$(declare -f make_venv); make_venv $venv && $py -c 'import pyarrow, numpy; print(pyarrow.__version__, numpy.__version__)'"

# The extension and the C++ benchmarks build at the same time: neither waits for the other.
cpp_build=build/device-cpp
step build 360 "
  ($py -m pip install -q --no-build-isolation --no-deps --config-settings=cmake.define.STOKER_LINK_STDCXX_FIRST=ON . >$work/build-ext.log 2>&1; echo \$? >$work/build-ext.rc) &
  (cmake -S . -B $cpp_build -G Ninja -DPython_EXECUTABLE=$py -DSTOKER_BUILD_PYTHON=OFF \
     -DSTOKER_BUILD_TESTS=OFF -DSTOKER_BUILD_EXAMPLES=OFF -DSTOKER_BUILD_BENCHMARKS=ON >$work/build-cpp.log 2>&1 &&
   cmake --build $cpp_build --target scaling_benchmark >>$work/build-cpp.log 2>&1; echo \$? >$work/build-cpp.rc) &
  wait
  echo extension: exit \$(cat $work/build-ext.rc); tail -30 $work/build-ext.log
  echo scaling_benchmark: exit \$(cat $work/build-cpp.rc); tail -30 $work/build-cpp.log
  [[ \$(cat $work/build-ext.rc) == 0 && \$(cat $work/build-cpp.rc) == 0 ]]"

# The same tree linked the old way (libstdc++ after pyarrow's libraries): does the crash come
# back with that one change? Built by the same interpreter in the same build folder, so only the
# link runs again (the main build passed ON explicitly: the cache's OFF cannot leak into it),
# and installed into a venv of its own.
oldlink=$work/venv-oldlink
step oldlink-build 180 "$(declare -f make_venv); make_venv $oldlink &&
  $py -m pip wheel -q --no-build-isolation --no-deps -w $work/oldlink-wheel --config-settings=cmake.define.STOKER_LINK_STDCXX_FIRST=OFF . &&
  $oldlink/bin/python -m pip install -q --no-index --no-deps $work/oldlink-wheel/*.whl"

# The criteo data (one core; minutes) is written while the steps before the scaling run.
(
  log=$work/criteo-data.log
  step criteo-data 300 "$venv/bin/stoker gen $work/criteo --preset criteo --rows $rows --files 16 --overwrite"
) &
gen_pid=$!

step small-data 60 "$venv/bin/stoker gen $work/small --preset criteo --rows 50000 --files 2 --overwrite"
step symbols 30 "symbols $venv >$out/symbols.txt; status=\$?; cat $out/symbols.txt; exit \$status"
step repro 120 "repro $venv"
step ld-bindings 90 "ld_bindings $venv >$out/ld_bindings.txt; wc -l $out/ld_bindings.txt; head -40 $out/ld_bindings.txt"
step oldlink-symbols 30 "symbols $oldlink"
step oldlink-repro 120 "repro $oldlink"
step oldlink-ld-bindings 90 "ld_bindings $oldlink | head -60"
step linkage-test 60 "$py -m pytest -q -p no:cacheprovider tests/python/test_linkage.py"

if [[ "$no_gpu" != 1 ]]; then
  step test-cuda 150 "$py -m pytest -q -p no:cacheprovider --timeout=120 tests/python/test_cuda.py"
  step pinned-copy 60 "$py benchmarks/pinned_copy.py --json $work/pinned_copy.json"
  # batches of ~34 MB: a pageable copy outgrows the driver's staging buffer and blocks the host
  step pinned-copy-large 60 "$py benchmarks/pinned_copy.py --batch-size 65536 --json $work/pinned_copy_large.json"
  step cuda-transfer 120 "$py benchmarks/cuda_transfer.py --rows $transfer_rows --json $work/cuda_transfer.json"
fi
wait "$gen_pid"
cat "$work/criteo-data.log" >>"$log"
step scaling 180 "$cpp_build/benchmarks/cpp/scaling_benchmark $work/criteo --max-threads $jobs --epochs 3 --arrow --json $work/scaling.jsonl"
if [[ "$no_gpu" != 1 ]]; then
  step gpu-utilization 150 "$py benchmarks/gpu_utilization.py --data $work/criteo --steps $gpu_steps --workers 4 --json $work/gpu_utilization.json"
else
  step gpu-utilization-cpu 120 "$py benchmarks/gpu_utilization.py --data $work/criteo --device cpu --steps 3 --workers 1 --json $work/gpu_utilization.json"
fi

# A fleet on one machine (benchmarks/fleet_netns.py): K = 1, 2, 4, 8 servers, each in its own
# network namespace on one core of its own (CPUs 1-8), the trainer in another on CPUs 0 and
# 9-15; where namespaces cannot be made here (not root, no iproute2), recorded as skipped.
if ((jobs < 16)); then
  why="$jobs cores: the step places 9 hosts on 16"
  printf 'fleet-netns\tskipped: %s\t0\n' "$why" >>"$summary"
elif why=$("$py" benchmarks/fleet_netns.py --check 2>&1); then
  step fleet-netns 180 "$py benchmarks/fleet_netns.py $work/criteo --servers 1,2,4,8 --server-cpus 1-8 --trainer-cpus 0,9-15 --repeats 3 --out $work/fleet_netns.json"
  # The autoscaler's growth (docs/ray.md): a trainer on the whole of CPU 0 (no quota), its
  # demand and the servers' links calibrated from its own rate; servers on CPUs 1-8.
  step autoscale-netns 120 "$py benchmarks/autoscale_netns.py $work/criteo --seconds 60 --trainer-cpu-share 0 --trainer-cpus 0 --server-cpus 1-8 --out $work/autoscale_netns.json"
else
  printf 'fleet-netns\tskipped: %s\t0\n' "${why//$'\n'/ }" >>"$summary"
  echo "fleet-netns: skipped: $why" | tee -a "$log"
fi

# What receiving costs the trainer against a plain pyarrow.flight DoGet (benchmarks/
# receive_cost.py): a server on CPUs 1-4, each trainer epoch on CPU 0.
step receive-cost 120 "$py benchmarks/receive_cost.py $work/criteo --repeats 3 --server-cpus 1-4 --server-threads 4 --client-cpus 0 --out $work/receive_cost.json"

# The reference build: the same symbol report and reproducer on an older tree.
if [[ -n "$ref" ]]; then
  reftree=$work/ref
  if [[ -f "$ref" ]]; then
    step ref-tree 30 "mkdir -p $reftree && tar -xf $ref -C $reftree"
  elif git rev-parse --git-dir >/dev/null 2>&1; then
    step ref-tree 30 "git worktree add --detach $reftree $ref"
  else
    echo "DEVICE_CHECK_REF=$ref: the carried tree has no .git; carry a tarball (git archive $ref | gzip) and name it instead" |
      tee -a "$log"
    printf 'ref-tree\tskipped: no .git\t0\n' >>"$summary"
  fi
  if [[ -d "$reftree" ]]; then
    step ref-venv 120 "$(declare -f make_venv); make_venv $work/venv-ref"
    step ref-build 300 "$work/venv-ref/bin/python -m pip install -q --no-build-isolation --no-deps $reftree"
    step ref-symbols 30 "symbols $work/venv-ref"
    step ref-repro 120 "repro $work/venv-ref"
    step ref-ld-bindings 90 "ld_bindings $work/venv-ref | head -60"
    [[ ! -f "$ref" ]] && git worktree remove --force "$reftree"
  fi
fi

# The JSON results, one file (the device tool brings back at most 8).
"$py" - "$work" "$out/results.json" <<'EOF' >>"$log" 2>&1
import json, pathlib, sys
work, results = pathlib.Path(sys.argv[1]), {}
for name in ("pinned_copy", "pinned_copy_large", "cuda_transfer", "gpu_utilization",
             "fleet_netns", "autoscale_netns", "receive_cost"):
    path = work / f"{name}.json"
    if path.exists():
        results[name] = json.loads(path.read_text())
if (work / "scaling.jsonl").exists():
    results["scaling"] = [json.loads(line) for line in (work / "scaling.jsonl").read_text().splitlines()]
pathlib.Path(sys.argv[2]).write_text(json.dumps(results, indent=2) + "\n")
EOF
echo
column -t -s $'\t' "$summary" 2>/dev/null || cat "$summary"
echo "results in $out (the log: $log)"
