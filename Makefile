# Stoker's entry points. Each target installs what it needs itself (system packages
# included) into .venv at the repository root.
#   make demo   set up (the runtime and torch only), build, generate a demo dataset, benchmark it
#   make test   set up, build, run the C++ (ctest) and Python (pytest) tests but the slow ones
#   make test-slow / test-all   the slow Python tests / everything
#   make test-matrix   the pairwise composition matrix (docs/combinations.md)
#   make test-petastorm   Petastorm's own reader tests against stoker.petastorm
#   make test-asan / test-tsan / fuzz   the sanitizer builds and the fuzz targets
#               (docs/reliability.md)
#   make wheel  the repaired manylinux wheel, in dist/
#   make test-trixie   build and test on a second platform (Debian 13 in a chroot) and compare
#               its batches with this one's

PYTHON   ?= python3
VENV     := .venv
PY       := $(VENV)/bin/python
JOBS     ?= $(shell nproc)
CPP_DIR  := build/cpp
DEPS     := $(VENV)/.deps-installed
SYSDEPS  := build/.system-deps-installed
DEMO_DIR := demo-data/criteo
DEMO_ROWS ?= 2000000
# What the venv installs: everything (requirements-dev.txt), or only the core (the second
# platform: requirements-core.txt).
REQUIREMENTS ?= requirements-dev.txt

.PHONY: all setup build build-cpp signatures test test-cpp test-python test-slow test-all test-matrix test-petastorm demo lint lint-threads clean \
        test-torchrec test-asan test-asan-cpp asan-cpp-build test-asan-python test-tsan fuzz wheel test-trixie platform-tests \
        bench-scaling

all: build

$(SYSDEPS): scripts/install-system-deps.sh
	bash scripts/install-system-deps.sh
	@mkdir -p $(dir $@) && touch $@

# Each venv that runs the tests' or the benchmarks' code lists devtools/ in its site-packages
# (stoker-devtools.pth), so that stoker_devtools, the support package they share, imports by
# name in every process, a script run by hand included (devtools/README.md).
DEVTOOLS_PTH = $(1) -c 'import site, sys; open(site.getsitepackages()[0] + "/stoker-devtools.pth", "w").write(sys.argv[1] + "\n")' $(abspath devtools)

$(DEPS): $(REQUIREMENTS) requirements-core.txt $(SYSDEPS)
	$(PYTHON) -m venv $(VENV)
	$(call DEVTOOLS_PTH,$(PY))
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r $(REQUIREMENTS)
	@touch $@

setup: $(DEPS)

# The Python package with its extension, built against the venv's pinned pyarrow, and in the
# same build tree (build/cpp) the C++ library's unit tests, micro-benchmarks and example: one
# compile of the engine serves the package and the C++ tests. The second platform builds the
# package alone (BUILD_TESTS=OFF). The C++ micro-benchmarks are built where they are run
# (`make bench-scaling`) and, so they keep compiling, by the Clang build of `make lint`.
BUILD_TESTS      ?= ON
BUILD_BENCHMARKS ?= OFF
build: $(DEPS)
	$(PY) -m pip install -q --no-build-isolation --no-deps . -C build-dir=$(CPP_DIR) \
	  -C cmake.define.STOKER_BUILD_TESTS=$(BUILD_TESTS) \
	  -C cmake.define.STOKER_BUILD_BENCHMARKS=$(BUILD_BENCHMARKS) \
	  -C cmake.define.STOKER_WARNINGS_AS_ERRORS=ON

# The loaders' signatures written from KEYWORDS, each option's one definition
# (python/stoker/_options/keywords.py; tests/python/test_keywords.py fails when they are not).
signatures: build
	$(PY) scripts/write_signatures.py

# The C++ library, tests, benchmarks and example (the same tree as `make build`).
build-cpp: build

test-cpp: build
	PATH=$(abspath $(VENV))/bin:$$PATH ctest --test-dir $(CPP_DIR) --output-on-failure -j $(JOBS)

# `make test` runs every test but those marked slow (the Ray cluster, torchrun and Ray Train
# jobs, Spark, Keras fits, the wheel install: pyproject.toml's markers), aiming at 20 minutes
# from a fresh clone on 2 cores, setup included (measured: docs/reliability.md, "In CI");
# `make test-slow` runs the slow ones (CI runs both: .ci/run). --durations names the slowest,
# so a test that grows is seen.
test-python: build
	$(PY) -m pytest -q --timeout=300 --durations=15 -m "not slow"

test-slow: build
	$(PY) -m pytest -q --timeout=600 --durations=15 -m slow

# TorchRec's own tests of output="torchrec" (tests/torchrec/) in an environment of their own,
# .torchrec-venv (tests/torchrec/requirements.txt: TorchRec 1.8.0 and fbgemm-gpu-cpu 1.8.0 on
# torch 2.13.0's CPU build, every package pinned, --no-deps), made once and reused (about a
# minute, 1.2 GB); the stoker package built by `make build` is copied into it (its extension
# finds that venv's pyarrow, the same pin).
TORCHREC_VENV := .torchrec-venv
TORCHREC_DEPS := $(TORCHREC_VENV)/.deps-installed
$(TORCHREC_DEPS): tests/torchrec/requirements.txt $(SYSDEPS)
	$(PYTHON) -m venv $(TORCHREC_VENV)
	$(call DEVTOOLS_PTH,$(TORCHREC_VENV)/bin/python)
	$(TORCHREC_VENV)/bin/pip install -q --no-cache-dir --no-deps -r tests/torchrec/requirements.txt
	@touch $@

test-torchrec-env: build $(TORCHREC_DEPS)
	rm -rf $(TORCHREC_VENV)/lib/python3.11/site-packages/stoker
	cp -r $(VENV)/lib/python3.11/site-packages/stoker $(TORCHREC_VENV)/lib/python3.11/site-packages/

test-torchrec: test-torchrec-env
	$(TORCHREC_VENV)/bin/python -m pytest -q --timeout=600 -p no:cacheprovider tests/torchrec

test: test-cpp test-python test-torchrec

test-all: test test-slow

# The pairwise composition matrix (tests/python/test_matrix.py, docs/combinations.md): every
# case, the Ray fleet's too; `make test` runs the cases without a fleet.
test-matrix: build
	$(PY) -m pytest -q --timeout=600 --durations=10 tests/python/test_matrix.py

# The wheel a user installs elsewhere: packed from `make build`'s extension, repaired by
# auditwheel to the manylinux policy it satisfies, libpng/libjpeg/zlib vendored, pyarrow's
# libraries left to the pyarrow dependency (scripts/build_wheel.py).
wheel: build
	$(PY) scripts/build_wheel.py dist

# The second platform: Debian 13 "trixie" (g++ 14, libstdc++ 14, glibc 2.41, Python 3.13) in a
# chroot that scripts/trixie-root.sh makes once and keeps in $(TRIXIE_ROOT). This host writes
# the dataset and digests its batches; the root builds Stoker from the same checkout, runs
# PLATFORM_TESTS and the repaired wheel's test, digests the same files; the digests must match
# (tests/platform/batch_digests.py). The dataset sits at the same absolute path in both.
TRIXIE_ROOT    ?= build/trixie-root
PLATFORM_DATA  := $(abspath build/platform/data)
# Construction and an epoch of each output the core venv has (numpy, arrow; torch, JAX and
# TensorFlow are thin layers over the same buffers, tested here), resume and its state, serve,
# the cache, the CLI, transforms and random ops, bad data, the linkage check, the wheel.
PLATFORM_TESTS ?= tests/python/test_loader.py tests/python/test_resume.py \
                  tests/python/test_state.py tests/python/test_serve.py \
                  tests/python/test_cache.py tests/python/test_cli.py \
                  tests/python/test_transforms.py tests/python/test_random_ops.py \
                  tests/python/test_bad_data.py tests/python/test_linkage.py \
                  tests/python/test_wheel.py
test-trixie: build
	rm -rf build/platform
	$(PY) tests/platform/batch_digests.py data $(PLATFORM_DATA)
	$(PY) tests/platform/batch_digests.py digest $(PLATFORM_DATA) build/platform/debian12.json
	bash scripts/trixie-root.sh $(TRIXIE_ROOT)
	rm -rf $(TRIXIE_ROOT)$(PLATFORM_DATA) && mkdir -p $(TRIXIE_ROOT)$(dir $(PLATFORM_DATA))
	cp -r $(PLATFORM_DATA) $(TRIXIE_ROOT)$(PLATFORM_DATA)
	bash scripts/trixie-root.sh $(TRIXIE_ROOT) run \
	  "make platform-tests PLATFORM_DATA=$(PLATFORM_DATA) 'PLATFORM_TESTS=$(PLATFORM_TESTS)'"
	$(PY) tests/platform/batch_digests.py compare build/platform/debian12.json \
	  $(TRIXIE_ROOT)/stoker/build/platform/trixie.json

# Run inside the second platform's root by test-trixie.
platform-tests:
	$(MAKE) build REQUIREMENTS=requirements-core.txt BUILD_TESTS=OFF
	$(PY) -m pytest -q --timeout=600 $(PLATFORM_TESTS)
	mkdir -p build/platform
	$(PY) tests/platform/batch_digests.py digest $(PLATFORM_DATA) build/platform/trixie.json

# The demo installs only what it runs (requirements-demo.txt: the core and torch's CPU build)
# into the same .venv; `make test` adds the rest later.
DEMO_DEPS := $(VENV)/.demo-deps-installed

$(DEMO_DEPS): requirements-demo.txt requirements-core.txt $(SYSDEPS)
	$(PYTHON) -m venv $(VENV)
	$(call DEVTOOLS_PTH,$(PY))
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-demo.txt
	@touch $@

demo: $(DEMO_DEPS)
	$(PY) -m pip install -q --no-build-isolation --no-deps .
	$(VENV)/bin/stoker gen $(DEMO_DIR) --preset criteo --rows $(DEMO_ROWS) --files 4 --overwrite
	$(VENV)/bin/stoker bench $(DEMO_DIR) --batch-size 4096 --output torch

CPP_SOURCES = $(wildcard include/stoker/*.h src/*/*.h src/*/*.cc src/*/*/*.h src/*/*/*.cc tests/cpp/*/*.h \
                         tests/cpp/*/*.cc tests/cpp/*/*/*.h tests/cpp/*/*/*.cc tests/fuzz/*.h tests/fuzz/*.cc \
                         examples/*.cc benchmarks/cpp/*.cc)

# clang-format, ruff and mypy; .pre-commit-config.yaml runs the same three, at the same pinned
# versions, on the files of each commit (README.md, "Working on Stoker").
lint: $(DEPS) lint-threads
	command -v clang-format >/dev/null || apt-get install -y -qq clang-format
	clang-format --dry-run --Werror $(CPP_SOURCES)
	$(VENV)/bin/ruff check python tests benchmarks devtools
	$(VENV)/bin/mypy

# The engine and its tests built by Clang, whose thread-safety analysis checks the lock
# annotations (GUARDED_BY, REQUIRES, ...: src/util/thread_annotations.h); any finding fails.
# It is the ASan build below (Debug, so the ARROW_DCHECKs compile as checks too; without the
# precompiled headers, so each file's own includes must be complete): one Clang build serves
# both, and after `make test-asan-cpp` this costs nothing.
lint-threads: asan-cpp-build

# Sanitizer builds (docs/reliability.md), by Debian's clang, each in a build folder
# of its own: build/cpp and the extension in .venv stay as `make build` made them. Every
# finding in Stoker's code is fixed; tests/sanitizers/*.supp hold only findings in the
# libraries of the pyarrow wheel, each with its reason.
SAN_SUPP    := $(abspath tests/sanitizers)
ASAN_CPP    := build/asan-cpp
ASAN_PY     := build/asan-py
TSAN_CPP    := build/tsan-cpp
ASAN_CFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
               -fno-omit-frame-pointer -O1 -g
# The C++ ASan build also runs Clang's thread-safety analysis (make lint-threads).
TSA_CFLAGS  := -Wthread-safety -Werror=thread-safety
TSAN_CFLAGS := -fsanitize=thread -fno-omit-frame-pointer -O1 -g
# Arrow's own allocations through malloc too, where ASan sees them (not its mimalloc/jemalloc).
ASAN_ENV    := ARROW_DEFAULT_MEMORY_POOL=system \
               ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1 \
               LSAN_OPTIONS=suppressions=$(SAN_SUPP)/lsan.supp:print_suppressions=0 \
               UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$(SAN_SUPP)/ubsan.supp
# ignore_noninstrumented_modules: the memory accesses of intercepted calls (memcpy, free, ...)
# made by code built without TSan — the pyarrow wheel's libraries, libstdc++ — are not
# checked; their locks still are. TSan cannot see those libraries' atomics, so it would take
# the accesses they order for races (tests/sanitizers/tsan.supp says which were read).
TSAN_ENV    := ARROW_DEFAULT_MEMORY_POOL=system \
               TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$(SAN_SUPP)/tsan.supp
# The C++ tests the thread sanitizer runs (a ctest -R pattern): all of them.
TSAN_TESTS  ?= .
CLANG       := build/.clang-installed
SAN_CMAKE   = PATH=$(abspath $(VENV))/bin:$$PATH CC=clang CXX=clang++ cmake -S . -G Ninja \
              -DPython_EXECUTABLE=$(abspath $(PY)) -DSTOKER_BUILD_EXAMPLES=OFF \
              -DSTOKER_WARNINGS_AS_ERRORS=ON -DCMAKE_BUILD_TYPE=Debug

# clang with its compiler-rt (the sanitizer and libFuzzer runtimes).
$(CLANG):
	command -v clang++ >/dev/null && [ -e "$$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] \
	  || apt-get install -y -qq clang libclang-rt-dev
	@mkdir -p $(dir $@) && touch $@

test-asan: test-asan-cpp test-asan-python

# The engine and its C++ tests under ASan + UBSan, leak checking on.
asan-cpp-build: $(DEPS) $(CLANG)
	$(SAN_CMAKE) -B $(ASAN_CPP) -DSTOKER_BUILD_PYTHON=OFF -DSTOKER_BUILD_TESTS=ON \
	  -DSTOKER_BUILD_BENCHMARKS=ON -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON -DCMAKE_CXX_FLAGS="$(ASAN_CFLAGS) $(TSA_CFLAGS)"
	PATH=$(abspath $(VENV))/bin:$$PATH cmake --build $(ASAN_CPP) -j $(JOBS)

test-asan-cpp: asan-cpp-build
	$(ASAN_ENV) PATH=$(abspath $(VENV))/bin:$$PATH \
	  ctest --test-dir $(ASAN_CPP) --output-on-failure -j $(JOBS)

# The Python tests against the extension built with ASan + UBSan, in the interpreter of .venv
# with the ASan runtime preloaded. The package is assembled in $(ASAN_PY)/site (the sources of
# python/stoker and the ASan _core), first on PYTHONPATH, so subprocesses (the CLI, torchrun
# workers, servers) run it too. Leak checking is off: CPython and the wheels' libraries keep
# their allocations until exit by design. Tests marked `not_under_asan` are left out: they
# bound resident memory, which ASan's allocator inflates by design.
test-asan-python: $(DEPS) $(CLANG)
	$(SAN_CMAKE) -B $(ASAN_PY) -DSTOKER_BUILD_PYTHON=ON -DSTOKER_BUILD_TESTS=OFF \
	  -DCMAKE_CXX_FLAGS="$(ASAN_CFLAGS)" -DCMAKE_MODULE_LINKER_FLAGS="-shared-libasan"
	PATH=$(abspath $(VENV))/bin:$$PATH cmake --build $(ASAN_PY) -j $(JOBS)
	rm -rf $(ASAN_PY)/site && mkdir -p $(ASAN_PY)/site
	cp -r python/stoker $(ASAN_PY)/site/ && cp $(ASAN_PY)/src/python/_core*.so $(ASAN_PY)/site/stoker/
	$(ASAN_ENV) ASAN_OPTIONS=detect_leaks=0:strict_string_checks=1 \
	  LD_PRELOAD=$$(clang -print-file-name=libclang_rt.asan-x86_64.so) \
	  PYTHONPATH=$(abspath $(ASAN_PY))/site \
	  $(PY) -m pytest -q --timeout=900 -p no:cacheprovider --durations=15 -m "not not_under_asan"

# The C++ tests with threads in them under ThreadSanitizer.
test-tsan: $(DEPS) $(CLANG)
	$(SAN_CMAKE) -B $(TSAN_CPP) -DSTOKER_BUILD_PYTHON=OFF -DSTOKER_BUILD_TESTS=ON \
	  -DCMAKE_CXX_FLAGS="$(TSAN_CFLAGS)"
	PATH=$(abspath $(VENV))/bin:$$PATH cmake --build $(TSAN_CPP) -j $(JOBS)
	$(TSAN_ENV) PATH=$(abspath $(VENV))/bin:$$PATH \
	  ctest --test-dir $(TSAN_CPP) --output-on-failure -j $(JOBS) -R "$(TSAN_TESTS)"

# `make fuzz`: each fuzz target (tests/fuzz/README.md) for FUZZ_SECONDS, from its seeds and
# the corpus earlier runs left in $(FUZZ_DIR)/corpus: the C++ ones under libFuzzer, built
# with clang, ASan and UBSan; the Python ones (tests/fuzz/python/) under atheris against the
# extension in .venv. A finding stops the run; its input lands in $(FUZZ_DIR)/findings. Fix
# it and keep the input under tests/fuzz/regressions/<target>/, which `make test` replays.
FUZZ_DIR     := build/fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= parquet filter ticket transform transform_spec state_dict codec summary
FUZZ_CFLAGS  := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
                -fno-omit-frame-pointer -O1 -g
ATHERIS      := $(FUZZ_DIR)/atheris/.installed

$(ATHERIS): tests/fuzz/requirements-fuzz.txt $(DEPS)
	rm -rf $(dir $@) && $(PY) -m pip install -q --target $(dir $@) -r $<
	@touch $@

fuzz: build $(CLANG) $(ATHERIS)
	$(SAN_CMAKE) -B $(FUZZ_DIR) -DSTOKER_BUILD_PYTHON=OFF -DSTOKER_BUILD_TESTS=OFF \
	  -DSTOKER_BUILD_FUZZERS=ON -DCMAKE_CXX_FLAGS="$(FUZZ_CFLAGS)"
	PATH=$(abspath $(VENV))/bin:$$PATH cmake --build $(FUZZ_DIR) -j $(JOBS)
	rm -rf $(FUZZ_DIR)/seeds && mkdir -p $(FUZZ_DIR)/seeds/parquet
	# Not large_string_map.brotli.parquet: 4 KiB that decode to 2 GiB before Arrow refuses them
	# (tests/python/test_corpus.py covers it), over libFuzzer's memory limit.
	find tests/data/parquet-testing -name '*.parquet' -size -64k ! -name large_string_map.brotli.parquet \
	  -exec cp {} $(FUZZ_DIR)/seeds/parquet/ \;
	$(PY) tests/fuzz/make_seeds.py $(FUZZ_DIR)/seeds
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/seeds/$$t $(FUZZ_DIR)/findings/$$t \
	    tests/fuzz/regressions/$$t; \
	  if [ -e tests/fuzz/python/$$t.py ]; then \
	    run="env PYTHONPATH=$(abspath $(FUZZ_DIR))/atheris $(PY) tests/fuzz/python/$$t.py"; \
	  else \
	    run="env $(ASAN_ENV) ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	      $(FUZZ_DIR)/tests/fuzz/$${t}_fuzzer -max_len=65536"; \
	  fi; \
	  dict=; [ -e tests/fuzz/$$t.dict ] && dict=-dict=tests/fuzz/$$t.dict; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  $$run $$dict -max_total_time=$(FUZZ_SECONDS) -timeout=60 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_DIR)/findings/$$t/ \
	    $(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/seeds/$$t tests/fuzz/regressions/$$t || exit 1; \
	done

clean:
	for m in dev/pts dev sys proc; do \
	  ! mountpoint -q $(TRIXIE_ROOT)/$$m || umount -l $(TRIXIE_ROOT)/$$m; done
	rm -rf build demo-data dist

# `make bench`: Stoker against the loaders users would pick instead (benchmarks/harness.py;
# the figures and how to read them: docs/benchmarks.md). Stoker, plain PyArrow and the PyTorch
# DataLoader run in .venv as `make build` installed it; the peers get environments of their
# own so the product's stays lean: .bench-venv (Ray Data, matplotlib, the harness itself),
# .bench-petastorm-venv (Petastorm 0.13 needs pyarrow < 15 and numpy < 2),
# .bench-streaming-venv (Mosaic Streaming needs numpy < 2.2 and torchvision, installed from the
# package index alone: see requirements-streaming.txt) and .bench-grain-venv (Grain). BENCH_ARGS
# passes options to the harness, e.g. BENCH_ARGS="--scale 0.1 --repeats 1" for a quick look.
# Then the mixture overhead (benchmarks/mixture_overhead.py: a 3-source mixture against the same
# rows from one source, and its realized proportions; docs/mixtures.md) and the serving
# throughput (benchmarks/serve_throughput.py --pin: a server and its client each on their own
# cores, against a local Loader; docs/serve.md) and a fleet of 1, 2 and 4 servers, each host in
# its own network namespace (benchmarks/fleet_netns.py; root, else it says why and skips), and
# what receiving costs the trainer against a plain pyarrow.flight DoGet (receive_cost.py).
BENCH_VENV      := .bench-venv
BENCH_PY        := $(BENCH_VENV)/bin/python
BENCH_DEPS      := $(BENCH_VENV)/.deps-installed
PETASTORM_VENV  := .bench-petastorm-venv
PETASTORM_PY    := $(PETASTORM_VENV)/bin/python
PETASTORM_DEPS  := $(PETASTORM_VENV)/.deps-installed
PETASTORM       := petastorm==0.13.1
STREAMING_VENV  := .bench-streaming-venv
STREAMING_PY    := $(STREAMING_VENV)/bin/python
STREAMING_DEPS  := $(STREAMING_VENV)/.deps-installed
GRAIN_VENV      := .bench-grain-venv
GRAIN_PY        := $(GRAIN_VENV)/bin/python
GRAIN_DEPS      := $(GRAIN_VENV)/.deps-installed
BENCH_ARGS      ?=
# The thread-scaling section (benchmarks/cpp/scaling_benchmark.cc): criteo rows in 16 files,
# epochs at 1, 2, 4, ... threads up to nproc, shuffled and not, beside Arrow's own scan.
SCALING_ROWS    ?= 2000000
SCALING_DATA    := build/bench-scaling/criteo-$(SCALING_ROWS)

.PHONY: bench bench-multihot test-torchrec-env

$(BENCH_DEPS): benchmarks/requirements-bench.txt benchmarks/constraints.txt $(SYSDEPS)
	$(PYTHON) -m venv $(BENCH_VENV)
	$(call DEVTOOLS_PTH,$(BENCH_PY))
	$(BENCH_PY) -m pip install -q --upgrade pip
	$(BENCH_PY) -m pip install -q -c benchmarks/constraints.txt -r benchmarks/requirements-bench.txt
	@touch $@

$(PETASTORM_DEPS): benchmarks/requirements-petastorm.txt benchmarks/constraints.txt $(SYSDEPS)
	$(PYTHON) -m venv $(PETASTORM_VENV)
	$(call DEVTOOLS_PTH,$(PETASTORM_PY))
	$(PETASTORM_PY) -m pip install -q --upgrade pip
	$(PETASTORM_PY) -m pip install -q -c benchmarks/constraints.txt \
	  -r benchmarks/requirements-petastorm.txt
	$(PETASTORM_PY) -m pip install -q --no-deps $(PETASTORM)
	@touch $@

# Petastorm 0.13.1's own reader tests against stoker.petastorm (docs/petastorm.md, "Petastorm's
# own tests"): its datasets written once by its own Spark writers (a JRE, Debian's), then its
# test files run in .venv with the reader and loaders pointing at stoker.petastorm. Prints
# pass/fail per file; fails below the share of passing tests measured last
# (tests/petastorm/run.py).
test-petastorm: build $(PETASTORM_DEPS)
	command -v java >/dev/null || apt-get install -y -qq --no-install-recommends \
	  openjdk-17-jre-headless
	bash tests/petastorm/run.sh

# --isolated: this environment's torch and torchvision come from the package index, never from
# a local wheel directory a machine's pip configuration may add (a CPU-only torch there cannot
# load the index's torchvision).
$(STREAMING_DEPS): benchmarks/requirements-streaming.txt benchmarks/constraints.txt $(SYSDEPS)
	$(PYTHON) -m venv $(STREAMING_VENV)
	$(STREAMING_PY) -m pip install -q --isolated --upgrade pip
	$(STREAMING_PY) -m pip install -q --isolated -c benchmarks/constraints.txt \
	  -r benchmarks/requirements-streaming.txt
	@touch $@

$(GRAIN_DEPS): benchmarks/requirements-grain.txt benchmarks/constraints.txt $(SYSDEPS)
	$(PYTHON) -m venv $(GRAIN_VENV)
	$(GRAIN_PY) -m pip install -q --upgrade pip
	$(GRAIN_PY) -m pip install -q -c benchmarks/constraints.txt -r benchmarks/requirements-grain.txt
	@touch $@

bench: build $(BENCH_DEPS) $(PETASTORM_DEPS) $(STREAMING_DEPS) $(GRAIN_DEPS)
	$(BENCH_PY) benchmarks/harness.py --default-python $(PY) \
	  --python ray-data=$(BENCH_PY) --python petastorm=$(PETASTORM_PY) \
	  --python streaming=$(STREAMING_PY) --python grain=$(GRAIN_PY) \
	  --charts docs/img --doc docs/benchmarks.md $(BENCH_ARGS)
	$(PY) benchmarks/petastorm_readers.py --petastorm-python $(PETASTORM_PY) \
	  --json benchmarks/results/petastorm_readers.json
	$(PY) benchmarks/mixture_overhead.py --out benchmarks/results/mixture.json
	$(PY) benchmarks/dlrm_parquet.py --out benchmarks/results/dlrm_parquet.json
	$(PY) benchmarks/roofline.py --out benchmarks/results/roofline.json
	$(PY) benchmarks/noisy_neighbour.py --out benchmarks/results/noisy_neighbour.json
	$(PY) benchmarks/serve_throughput.py build/bench-serve --pin --repeats 5 \
	  --out benchmarks/results/serve_throughput.json
	$(PY) benchmarks/fleet_netns.py build/bench-fleet --servers 1,2,4 --repeats 3 --loopback \
	  --out benchmarks/results/fleet_netns.json
	$(PY) benchmarks/receive_cost.py build/bench-serve --repeats 5 \
	  --out benchmarks/results/receive_cost.json
	$(MAKE) bench-scaling
	$(MAKE) bench-multihot

# Multi-hot rows as TorchRec takes them (benchmarks/torchrec_batches.py, docs/torchrec.md):
# PyArrow's floor, ragged numpy batches shuffled and not, the engine's KeyedJaggedTensor
# parts and output="torchrec", and the Python time per batch, in TorchRec's environment.
# Lance's PyTorch loader over a one-time Lance copy of the same rows is the peer, in its own
# environment (.bench-lance-venv, benchmarks/requirements-lance.txt).
MULTIHOT_DATA := build/bench-multihot/multihot-400k
SEQUENCES_DATA := build/bench-multihot/sequences-200k
LANCE_VENV    := .bench-lance-venv
LANCE_DEPS    := $(LANCE_VENV)/.deps-installed
$(LANCE_DEPS): benchmarks/requirements-lance.txt $(SYSDEPS)
	$(PYTHON) -m venv $(LANCE_VENV)
	$(call DEVTOOLS_PTH,$(LANCE_VENV)/bin/python)
	$(LANCE_VENV)/bin/pip install -q -r benchmarks/requirements-lance.txt
	@touch $@

bench-multihot: test-torchrec-env $(LANCE_DEPS)
	test -d $(MULTIHOT_DATA) || $(VENV)/bin/stoker gen $(MULTIHOT_DATA) --preset multihot \
	  --rows 400000 --files 8
	$(TORCHREC_VENV)/bin/python benchmarks/torchrec_batches.py $(MULTIHOT_DATA) --epochs 3 \
	  --json benchmarks/results/multihot.json
	$(LANCE_VENV)/bin/python benchmarks/lance_peer.py $(MULTIHOT_DATA) \
	  --lance-dir $(MULTIHOT_DATA).lance --epochs 3 --json benchmarks/results/multihot-lance.json
	test -d $(SEQUENCES_DATA) || $(VENV)/bin/stoker gen $(SEQUENCES_DATA) --preset sequences \
	  --rows 200000 --files 4
	$(PY) benchmarks/ragged_rates.py $(SEQUENCES_DATA) > benchmarks/results/sequences.json

bench-scaling: BUILD_BENCHMARKS := ON
bench-scaling: build-cpp
	test -d $(SCALING_DATA) || $(VENV)/bin/stoker gen $(SCALING_DATA) --preset criteo \
	  --rows $(SCALING_ROWS) --files 16
	$(CPP_DIR)/benchmarks/cpp/scaling_benchmark $(SCALING_DATA) --arrow --epochs 5 \
	  --json benchmarks/results/scaling.json
