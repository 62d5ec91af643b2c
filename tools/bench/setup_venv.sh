#!/usr/bin/env bash
# Creates (once) the benchmark virtualenv and prints its python path: llama-cpp-python built from
# PyPI for AVX-512 (F, BW, DQ, VL, VBMI, VNNI, BF16) on top of AVX2/FMA/F16C, with AMX off (this
# VM advertises AMX but a native build dies with SIGILL in AMX tile code). About 10 minutes on 2
# cores. The AVX2-only llama.cpp, torch and sentence-transformers come from tools/refgen/setup_venv.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${EMBED_BENCH_VENV:-${EMBED_CACHE:-$HOME/.cache/embed}/venv-bench}"
flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
flags="$flags -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AVX_VNNI=ON"
flags="$flags -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
stamp="$venv/.requirements.sha256"
want="$( (cat "$here/requirements.txt"; echo "$flags") | sha256sum | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
  CMAKE_ARGS="$flags" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$venv/bin/python" -m pip install --quiet --no-cache-dir --force-reinstall -r "$here/requirements.txt" >&2
  echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
