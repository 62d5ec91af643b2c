# The installed package: the extension needs no shared library beyond glibc and the C++ runtime
# (utf8proc and the engine are linked in, CUDA is a plugin opened on demand), the version is the
# CMake project's, and importing embed pulls in neither PyTorch nor the framework adapters.
import pathlib
import re
import shutil
import subprocess
import sys

import embed
from conftest import ROOT

# glibc's libraries, the GCC C++ runtime and the dynamic loader.
ALLOWED = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "libstdc++.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2"}


def test_the_extension_needs_only_glibc_and_libstdcxx():
    readelf = shutil.which("readelf")
    assert readelf, "readelf (binutils) is needed to inspect the extension"
    ext = pathlib.Path(embed._core.__file__)
    dynamic = subprocess.run([readelf, "-d", str(ext)], capture_output=True, text=True, check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dynamic))
    assert needed and needed <= ALLOWED, f"unexpected libraries: {sorted(needed - ALLOWED)}"
    assert "RPATH" not in dynamic and "RUNPATH" not in dynamic
    # Only the module's init function is exported, not the engine's symbols.
    symbols = subprocess.run([readelf, "--dyn-syms", "-W", str(ext)], capture_output=True, text=True, check=True).stdout
    exported = [line.split()[-1] for line in symbols.splitlines() if " GLOBAL " in line and " UND " not in line]
    assert exported == ["PyInit__core"], exported[:10]


def test_version_is_the_cmake_project_version():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert embed.__version__ == re.search(r"project\(embed VERSION ([0-9.]+)", cmake).group(1)


def test_import_pulls_in_no_framework():
    code = "import sys, embed; print(sorted(m for m in ('torch', 'langchain_core', 'llama_index', 'ray', 'pyspark') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
