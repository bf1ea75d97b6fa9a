"""How Stoker's shared objects bind the C++ standard library.

Two ways one process ends up running two builds of libstdc++, both seen:

- The pyarrow wheel's libraries (built on manylinux_2_28, whose system libstdc++ is GCC 8's)
  carry static copies of the libstdc++ functions GCC 8 lacks — string streams' C++20 members,
  among others — and export them, unversioned, with default visibility. A module that links
  those libraries before libstdc++ binds its own calls of such functions to pyarrow's copies.
- A toolchain whose `-lstdc++` finds only the static archive (Ubuntu 24.04's g++ 13 on the GPU
  host) links a copy of the C++ runtime into the extension, which then exported it: pyarrow's
  libraries bound their string streams to the extension's copy, and every Loader crashed in
  the first `std::ostringstream` (docs/design.md, "Building on the pyarrow wheel").

The invariant checked here, for every shared object Stoker installs: it lists libstdc++.so.6
among its needed libraries, ahead of every pyarrow library; each C++ runtime symbol it imports
carries a libstdc++/libgcc version (the linker took it from libstdc++); and a Python extension
exports its PyInit_ function and nothing else (no code of its can interpose on the libraries
loaded beside it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pyarrow
import pytest
import stoker

# Mangled names of the C++ runtime: namespace std (St, and the abbreviations Sa Sb Ss Si So Sd)
# in functions, vtables, VTTs and type_info; operator new/delete; the C++ ABI; the unwinder.
_RUNTIME = re.compile(
    r"^(_Z(N|NK|NV|NVK|T[VTIS])?S[tabsiod]|_ZTVN10__cxxabiv1|_Z(nw|na|dl|da)[a-zA-Z]"
    r"|__cxa_|__gxx_|__dynamic_cast|_Unwind_)")
# glibc's own C++ hooks (versioned GLIBC_, or weak and unversioned from crtbegin.o).
_GLIBC_HOOKS = {"__cxa_finalize", "__cxa_atexit", "__cxa_thread_atexit_impl"}
# The versions libstdc++ and libgcc_s define.
_RUNTIME_VERSION = re.compile(r"^(GLIBCXX|CXXABI|GCC)_")
_PYARROW_LIB = re.compile(r"^lib(arrow|parquet)\w*\.so")


def _readelf(path: Path, *flags: str) -> str:
    return subprocess.run(["readelf", "-W", *flags, str(path)], check=True,
                          capture_output=True, text=True).stdout


def unbound_runtime_imports(path: Path) -> list[str]:
    """The C++ runtime symbols `path` imports without a libstdc++/libgcc version."""
    bad = []
    for line in _readelf(path, "--dyn-syms").splitlines():
        fields = line.split()
        if len(fields) < 8 or fields[6] != "UND":
            continue
        name, _, version = fields[7].partition("@")
        if name in _GLIBC_HOOKS or not _RUNTIME.match(name):
            continue
        if not _RUNTIME_VERSION.match(version.lstrip("@")):
            bad.append(fields[7])
    return bad


def needed(path: Path) -> list[str]:
    """`path`'s DT_NEEDED entries, in order."""
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", _readelf(path, "-d"))


def exported_symbols(path: Path) -> list[str]:
    """The functions and objects `path` defines with default visibility in its dynamic symbol
    table: what other libraries in the process can bind to."""
    names = []
    for line in _readelf(path, "--dyn-syms").splitlines():
        fields = line.split()
        if (len(fields) >= 8 and fields[6] != "UND" and fields[3] in ("FUNC", "OBJECT")
                and fields[4] in ("GLOBAL", "WEAK", "UNIQUE") and fields[5] == "DEFAULT"):
            names.append(fields[7].partition("@")[0])
    return names


def linkage_problems(path: Path) -> list[str]:
    """What breaks the invariant in `path`: unversioned runtime imports, libstdc++ missing
    from or listed after pyarrow's libraries, and an extension exporting more than its
    PyInit_ function."""
    problems = [f"imports {name} without a libstdc++ version (binds to whichever library "
                f"the loader finds first)" for name in unbound_runtime_imports(path)]
    exported = exported_symbols(path)
    init = [name for name in exported if name.startswith("PyInit_")]
    if init:
        extra = sorted(set(exported) - set(init))
        if extra:
            runtime = [name for name in extra if _RUNTIME.match(name)]
            problems.append(f"exports {len(extra)} symbols besides {init[0]} "
                            f"({len(runtime)} of the C++ runtime), e.g. {extra[:3]}")
    libs = needed(path)
    arrow = [i for i, lib in enumerate(libs) if _PYARROW_LIB.match(lib)]
    if arrow:
        if "libstdc++.so.6" not in libs:
            problems.append("links pyarrow's libraries but does not list libstdc++.so.6")
        elif libs.index("libstdc++.so.6") > arrow[0]:
            problems.append(f"lists {libs[arrow[0]]} before libstdc++.so.6: {libs}")
    return problems


def stoker_shared_objects() -> list[Path]:
    """Every shared object of the installed package (vendored system libraries excluded:
    auditwheel puts those in stoker.libs/, and they link no pyarrow)."""
    found = sorted(p for p in Path(stoker.__file__).parent.rglob("*.so*") if p.is_file())
    assert found, f"no shared object under {Path(stoker.__file__).parent}"
    return found


needs_binutils = pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf")


@needs_binutils
@pytest.mark.parametrize("path", stoker_shared_objects(), ids=lambda p: p.name)
def test_stoker_binds_the_cxx_runtime_to_libstdcxx(path: Path) -> None:
    assert linkage_problems(path) == []


_PROBE = r"""
#include <sstream>
#include <string>
extern "C" int probe(long value) {
  std::ostringstream out;
  out << value;
  std::istringstream in(out.str());
  long back = 0;
  in >> back;
  return back == value ? static_cast<int>(out.str().size()) : -1;
}
"""


def _build_probe(tmp_path: Path, name: str, *link: str, source: str = _PROBE) -> Path:
    """`source` as a module linking pyarrow's libarrow_compute (as the engine does), with
    `link` before it on the link line."""
    code = tmp_path / f"{name}.cc"
    code.write_text(source)
    compute = next(Path(pyarrow.__file__).parent.glob("libarrow_compute.so.*"))
    out = tmp_path / name
    # -O0: the streams' members are called, not inlined, as at the engine's call sites.
    subprocess.run(["g++", "-std=c++20", "-O0", "-fPIC", "-shared", "-o", str(out), *link,
                    str(code), str(compute)], check=True, capture_output=True, text=True)
    return out


# How the engine links its extension: libstdc++.so.6 first, by name (src/CMakeLists.txt), and
# a version script that exports the entry point alone (src/python/exports.map).
_ENGINE_LINK = ("-Wl,--push-state,--no-as-needed", "-l:libstdc++.so.6", "-Wl,--pop-state")


@needs_binutils
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_the_check_catches_a_module_linked_before_libstdcxx(tmp_path: Path) -> None:
    """The check can fail: a module that uses string streams and links pyarrow's
    libarrow_compute ahead of libstdc++ (the order Stoker's extension had) is caught; the
    same module linked the way the engine links (libstdc++ first) passes."""
    bad = _build_probe(tmp_path, "bad.so")
    good = _build_probe(tmp_path, "good.so", *_ENGINE_LINK)
    assert any("without a libstdc++ version" in p for p in linkage_problems(bad)), \
        linkage_problems(bad)
    assert any("before libstdc++" in p for p in linkage_problems(bad))
    assert linkage_problems(good) == []


_PROBE_MODULE = _PROBE + '''
extern "C" void* PyInit_probe() { return nullptr; }
'''


@needs_binutils
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_the_check_catches_an_extension_carrying_its_own_cxx_runtime(tmp_path: Path) -> None:
    """The check can fail the way the GPU host's build did: a module that takes libstdc++ from
    the static archive (there because g++ 13 found no libstdc++.so; here -static-libstdc++ does
    the same) has no libstdc++.so.6 to need and exports the runtime it carries; linked the way
    the engine links, with the engine's version script, it passes."""
    archive = subprocess.run(["g++", "-print-file-name=libstdc++.a"], check=True,
                             capture_output=True,
                             text=True).stdout.strip()
    if not Path(archive).is_file():
        pytest.skip("this g++ has no static libstdc++ to link")

    def build(name: str, *link: str) -> Path:
        return _build_probe(tmp_path, name, *link, source=_PROBE_MODULE)

    static = linkage_problems(build("static.so", "-static-libstdc++"))
    assert any("does not list libstdc++.so.6" in p for p in static), static
    assert any("of the C++ runtime" in p for p in static), static
    exports = Path(__file__).resolve().parents[2] / "src" / "python" / "exports.map"
    script = tmp_path / "exports.map"
    script.write_text(exports.read_text().replace("PyInit__core", "PyInit_probe"))
    good = build("good.so", *_ENGINE_LINK, f"-Wl,--version-script={script}")
    assert linkage_problems(good) == []
    assert exported_symbols(good) == ["PyInit_probe"]
