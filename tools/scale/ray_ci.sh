#!/usr/bin/env bash
# The Ray Data path in CI (tools/test.sh runs it after tools/python_test.sh has built the wheel):
# installs ~/.cache/embed/venv-ray (ray[data], pyarrow, numpy pinned in requirements-ray.txt; a
# no-op once there) with the wheel of build/python-wheel on top, then runs ray_embed.py --check:
# the STS-B dev sentences embedded by an actor pool of embed.Model on a local Ray cluster of two
# worker nodes, every vector equal to the `embed` command's bit for bit. What it adds to CI is
# printed at the end (docs/python.md has the figure measured here).
#   tools/scale/ray_ci.sh [MODEL.gguf]     (default: MiniLM f32 from tools/models.sh)
# EMBED_WHEEL names another wheel; EMBED_PYTHONPATH instead puts an embed package folder (python/embed
# with a built _core module) on the path, for a checkout without a wheel.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
start=$(date +%s)
venv="${EMBED_CACHE:-$HOME/.cache/embed}/venv-ray"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r tools/scale/requirements-ray.txt
if [ -n "${EMBED_PYTHONPATH:-}" ]; then
  export PYTHONPATH="$EMBED_PYTHONPATH${PYTHONPATH:+:$PYTHONPATH}"
else
  wheel="${EMBED_WHEEL:-$(ls build/python-wheel/embed-*.whl 2>/dev/null | head -1)}"
  [ -f "$wheel" ] || { echo "ray_ci.sh: no embed wheel in build/python-wheel: run tools/python_test.sh first (tools/test.sh does)" >&2; exit 1; }
  "$venv/bin/pip" install -q --force-reinstall --no-deps "$wheel"
fi
installed=$(date +%s)
model="${1:-${EMBED_MINILM_GGUF_F32:-$(tools/models.sh minilm-gguf f32)}}"
"$venv/bin/python" tools/scale/ray_embed.py "$model" --check --nodes 2 --actors 2 --threads 1 --repeat 1 --batch-size 256 \
  --embed-bin "${EMBED_BIN:-build/tools/embed}"
echo "ray_ci.sh: passed; $((installed - start)) s installing, $(($(date +%s) - installed)) s on the cluster"
