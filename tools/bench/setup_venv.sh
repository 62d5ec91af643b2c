#!/usr/bin/env bash
# Creates (once) one of the benchmark peers' virtualenvs and prints its python path. The AVX2-only
# llama.cpp, torch and sentence-transformers come from tools/refgen/setup_venv.sh; these are the others:
#   llama-avx512 (default)  llama-cpp-python built for AVX-512 (F, BW, DQ, VL, VBMI, VNNI, BF16) on top of
#                           AVX2/FMA/F16C with AMX off: what a non-AMX x86 server runs. ~10-15 minutes.
#   llama-amx               the same sources built -march=native (GGML_NATIVE=ON): on this CPU that adds
#                           AMX int8/bf16 and llama.cpp's AMX buffer type (it requests the tile permission
#                           itself). With -fno-dse: GCC 12's _tile_loadconfig declares that it reads only 8
#                           bytes of the tile configuration, so its dead-store pass drops llama.cpp's stores
#                           of the tile shapes and the first tile load dies (SIGILL; docs/benchmarks.md,
#                           "llama.cpp's AMX build"). -g keeps backtraces usable. ~15 minutes.
#   onnx                    ONNX Runtime (the engine under FastEmbed and Infinity) with torch, transformers,
#                           onnx and onnxscript for the one-time export (tools/bench/onnx_export.py). ~3 minutes.
# Versions are pinned in requirements.txt (llama builds) and requirements-onnx.txt.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${EMBED_CACHE:-$HOME/.cache/embed}"
kind="${1:-llama-avx512}"
case "$kind" in
  llama-avx512)
    venv="${EMBED_BENCH_VENV:-$cache/venv-bench}"
    requirements="$here/requirements.txt"
    flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
    flags="$flags -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AVX_VNNI=ON"
    flags="$flags -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" ;;
  llama-amx)
    venv="$cache/venv-bench-amx"
    requirements="$here/requirements.txt"
    flags="-DGGML_NATIVE=ON"
    cflags="-g -fno-dse" ;;
  onnx)
    venv="$cache/venv-bench-onnx"
    requirements="$here/requirements-onnx.txt"
    flags="" ;;
  *)
    echo "setup_venv.sh: unknown kind '$kind' (llama-avx512, llama-amx, onnx)" >&2
    exit 2 ;;
esac
cflags="${cflags:-}"
stamp="$venv/.requirements.sha256"
want="$( (cat "$requirements"; echo "$flags"; if [ -n "$cflags" ]; then echo "$cflags"; fi) | sha256sum | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup_venv.sh: building the $kind virtualenv in $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
  CMAKE_ARGS="$flags" CFLAGS="$cflags" CXXFLAGS="$cflags" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$venv/bin/python" -m pip install --quiet --no-cache-dir --force-reinstall -r "$requirements" >&2
  echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
