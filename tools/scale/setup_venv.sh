#!/usr/bin/env bash
# Makes the virtualenv of a scale-out example (outside CI: Ray and PySpark are large) and
# installs the embed wheel built from this checkout into it:
#   tools/scale/setup_venv.sh ray    -> ~/.cache/embed/venv-ray    (requirements-ray.txt)
#   tools/scale/setup_venv.sh spark  -> ~/.cache/embed/venv-spark  (requirements-spark.txt; needs java 17)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
kind="${1:?usage: setup_venv.sh ray|spark}"
case "$kind" in ray|spark) ;; *) echo "setup_venv.sh: unknown kind '$kind' (ray, spark)" >&2; exit 2 ;; esac
venv="$HOME/.cache/embed/venv-$kind"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r "tools/scale/requirements-$kind.txt"
wheels="$(mktemp -d)"
"$venv/bin/pip" wheel -q --no-deps -w "$wheels" .
"$venv/bin/pip" install -q --force-reinstall --no-deps "$wheels"/embed-*.whl
rm -rf "$wheels"
echo "$venv"
