#!/usr/bin/env bash
# The Python package's tests as CI runs them (tools/test.sh calls this after ctest): builds the
# wheel with pip in a fresh virtualenv (build requirements pinned in pyproject.toml, from PyPI),
# installs it with python/requirements-test.txt, and runs tests/python against the embed command
# of build/ and the cached MiniLM. Prints the wheel's size and the import time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

venv=build/python-venv
wheels=build/python-wheel
rm -rf "$venv" "$wheels"
python3 -m venv "$venv"
"$venv/bin/pip" install -q -r python/requirements-test.txt
CMAKE_BUILD_PARALLEL_LEVEL="${EMBED_JOBS:-$(nproc)}" "$venv/bin/pip" wheel -q --no-deps -w "$wheels" .
"$venv/bin/pip" install -q --no-deps "$wheels"/embed-*.whl

wheel="$(ls "$wheels"/embed-*.whl)"
import_us="$("$venv/bin/python" -X importtime -c 'import embed' 2>&1 | awk -F'|' '$3 ~ /^ *embed$/ {print $2+0}')"
echo "python_test.sh: $(basename "$wheel"): $(du -k "$wheel" | cut -f1) KiB; import embed: $((import_us / 1000)) ms (cumulative, numpy included)"

export EMBED_BIN="${EMBED_BIN:-$PWD/build/tools/embed}"
export EMBED_MINILM_GGUF_F32="${EMBED_MINILM_GGUF_F32:-$(tools/models.sh minilm-gguf f32)}"
"$venv/bin/python" -m pytest tests/python -q -rs
