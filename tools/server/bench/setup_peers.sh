#!/usr/bin/env bash
# Creates the peers' virtualenvs for the side-by-side server benchmark and prints their python
# paths (llama first, then infinity):
#   ~/.cache/embed/venv-server-llama     llama.cpp's server: llama-cpp-python[server] 0.3.36; the
#                                        llama.cpp build itself is the refgen venv's (read through a
#                                        .pth file; tools/refgen/setup_venv.sh must have run)
#   ~/.cache/embed/venv-server-infinity  infinity-emb[torch,server] 0.0.78 with its own torch
# Pinned in requirements-llama.txt and requirements-infinity.txt. Idempotent; never needed by CI.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${EMBED_CACHE:-$HOME/.cache/embed}"
refgen="$cache/venv-refgen"
[ -x "$refgen/bin/python" ] || { echo "setup_peers: run tools/refgen/setup_venv.sh first" >&2; exit 1; }
llama="$cache/venv-server-llama"
if [ ! -x "$llama/bin/python" ]; then
  python3 -m venv "$llama"
  site=$("$llama/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$refgen/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' > "$site/refgen.pth"
fi
"$llama/bin/pip" install -q -r "$here/requirements-llama.txt" >&2
"$llama/bin/python" -c 'import llama_cpp.server.app' >&2
infinity="$cache/venv-server-infinity"
[ -x "$infinity/bin/python" ] || python3 -m venv "$infinity"
"$infinity/bin/pip" install -q -r "$here/requirements-infinity.txt" >&2
"$infinity/bin/python" -c 'import infinity_emb, torch' >&2
echo "$llama/bin/python"
echo "$infinity/bin/python"
