"""How Stoker's shared objects bind the C++ standard library.

The pyarrow wheel's libraries (built on manylinux_2_28, whose system libstdc++ is GCC 8's) carry
static copies of the libstdc++ functions GCC 8 lacks — string streams' C++20 members, among
others — and export them, unversioned, with default visibility. A module that links those
libraries before libstdc++ binds its own calls of such functions to pyarrow's copies: one
string stream then runs code from two different builds of the library. The invariant checked
here, for every shared object Stoker installs: each C++ runtime symbol it imports carries a
libstdc++/libgcc version (the linker took it from libstdc++), and libstdc++ precedes every
pyarrow library in its DT_NEEDED list (so the loader, too, finds libstdc++'s copy first).
docs/architecture.md, "Building on the pyarrow wheel", says why.
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


def linkage_problems(path: Path) -> list[str]:
    """What breaks the invariant in `path`: unversioned runtime imports, and pyarrow libraries
    listed before libstdc++."""
    problems = [f"imports {name} without a libstdc++ version (binds to whichever library "
                f"the loader finds first)" for name in unbound_runtime_imports(path)]
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


@needs_binutils
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_the_check_catches_a_module_linked_before_libstdcxx(tmp_path: Path) -> None:
    """The check can fail: a module that uses string streams and links pyarrow's
    libarrow_compute ahead of libstdc++ (the order Stoker's extension had) is caught; the
    same module linked the way the engine links (libstdc++ first) passes."""
    source = tmp_path / "probe.cc"
    source.write_text(_PROBE)
    compute = next(Path(pyarrow.__file__).parent.glob("libarrow_compute.so.*"))

    def build(name: str, *link: str) -> Path:
        # -O0: the streams' members are called, not inlined, as at the engine's call sites.
        out = tmp_path / name
        subprocess.run(["g++", "-std=c++20", "-O0", "-fPIC", "-shared", "-o", str(out),
                        *link, str(source), str(compute)], check=True)
        return out

    bad = build("bad.so")
    good = build("good.so", "-Wl,--push-state,--no-as-needed", "-lstdc++", "-Wl,--pop-state")
    assert any("without a libstdc++ version" in p for p in linkage_problems(bad)), \
        linkage_problems(bad)
    assert any("before libstdc++" in p for p in linkage_problems(bad))
    assert linkage_problems(good) == []
