#!/usr/bin/env bash
# Builds (once) the `embed` command of an earlier commit, for compare.py --baseline-embed (the
# "machines without AMX keep today's speed" rows), and prints its path. The commit's tree is
# exported with git archive into build/bench/baseline-<commit>/ (no worktree, nothing else touched)
# and only the embed target is built, Release, as the current build. ~5 minutes on 2 cores.
#   tools/bench/build_baseline.sh [COMMIT]   (default 8cc3741: main before issue 13's kernel levels)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
commit="$(git -C "$root" rev-parse --short=7 "${1:-8cc3741}^{commit}")"
dir="${EMBED_BUILD:-$root/build}/bench/baseline-$commit"
if [ ! -x "$dir/build/tools/embed" ]; then
  rm -rf "$dir/src"
  mkdir -p "$dir/src"
  git -C "$root" archive "$commit" | tar -x -C "$dir/src"
  cmake -S "$dir/src" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBED_BUILD_TESTS=OFF -DEMBED_CUDA=OFF >&2
  nice -n 10 cmake --build "$dir/build" --target embed -j2 >&2
fi
echo "$dir/build/tools/embed"
