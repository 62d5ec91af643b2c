#!/usr/bin/env bash
# Creates ~/.cache/embed/venv-server with the pinned clients of tools/server/requirements.txt
# (the official openai client, requests, numpy) for tools/server/check_openai.py. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${EMBED_CACHE:-$HOME/.cache/embed}/venv-server"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r "$here/requirements.txt"
echo "$venv/bin/python"
