#!/usr/bin/env bash
# Creates ~/.cache/embed/venv-server with the pinned clients of tools/server/requirements.txt
# (the official openai and ollama clients, langchain-ollama, requests, numpy) for
# tools/server/check_openai.py and tests/server/test_ollama_clients.py. Idempotent; prints the interpreter.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${EMBED_CACHE:-$HOME/.cache/embed}/venv-server"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r "$here/requirements.txt" >&2
echo "$venv/bin/python"
