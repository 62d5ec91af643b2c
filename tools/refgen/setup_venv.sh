#!/usr/bin/env bash
# Creates (once) the virtualenv with the pinned reference implementations used by tools/refgen/
# and tools/bench/, and prints its python path. llama-cpp-python builds llama.cpp from source
# (about 10 minutes on 2 cores) for AVX2/FMA/F16C, not -march=native: the reference must not depend on
# the build machine (and GCC 12's native build crashes in llama.cpp's AMX kernels; docs/benchmarks.md
# has why and tools/bench/setup_venv.sh llama-amx the working build). CI never runs this: reference data is committed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${EMBED_REFGEN_VENV:-${EMBED_CACHE:-$HOME/.cache/embed}/venv-refgen}"
stamp="$venv/.requirements.sha256"
want="$(cat "$here/requirements.txt" "$here/requirements-nodeps.txt" | sha256sum | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
  # Everything but llama-cpp-python first (wheels: minutes), then llama-cpp-python, which compiles
  # llama.cpp (about 10 minutes alone on 2 cores): the torch references are usable before that build
  # and do not wait behind it (they did once, for a whole session on a loaded machine).
  grep -v '^llama-cpp-python==' "$here/requirements.txt" > "$venv/.requirements-wheels.txt"
  "$venv/bin/python" -m pip install --quiet -r "$venv/.requirements-wheels.txt" >&2
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}" "$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt" >&2
  "$venv/bin/python" -m pip install --quiet --no-deps -r "$here/requirements-nodeps.txt" >&2
  echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
