#!/usr/bin/env bash
# Creates ~/.cache/embed/venv-hub with huggingface_hub pinned in tools/hub/requirements.txt, for
# tests/hub/test_hf_interop.py (tools/test.sh runs this and passes the interpreter on as
# EMBED_HUB_PYTHON). Idempotent; prints the virtualenv's python.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${EMBED_CACHE:-$HOME/.cache/embed}/venv-hub"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" >&2
"$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt" >&2
echo "$venv/bin/python"
