#!/usr/bin/env bash
# Run HERE (the development machine), before handing the repository to a lent GPU machine: puts
# into two folders under the git-ignored .cache/ what tools/device/cuda_check.sh needs there and
# the machine lacks (it has nvcc, CMake, ninja and PyTorch, but no network and maybe not our
# Debian libraries):
#   .cache/device-deps/   the build's library packages (tools/setup.sh), unpacked with dpkg -x
#   .cache/device-models/ GGUF models to benchmark and check (everything that travels, the
#                         repository included, must stay under 64 MiB)
# Then call the device tool with carry [".cache/device-deps", ".cache/device-models"]; see docs/cuda.md.
#   tools/device/prepare.sh [MODEL.gguf ...]     (default: the f16 MiniLM of tools/models.sh, if it can be made)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# Library packages of tools/setup.sh that the build links or includes, their runtime libraries,
# and pkg-config itself (CMake's pkg_check_modules needs the program).
packages=(catch2 nlohmann-json3-dev libcli11-dev libutf8proc-dev libutf8proc2 libpcre2-dev libpcre2-8-0 libpcre2-16-0
          libpcre2-32-0 libpcre2-posix3 pkgconf pkgconf-bin libpkgconf3)
rm -rf .cache/device-deps
mkdir -p .cache/device-deps/debs .cache/device-deps/root
(cd .cache/device-deps/debs && apt-get download "${packages[@]}" >/dev/null)
for deb in .cache/device-deps/debs/*.deb; do dpkg -x "$deb" .cache/device-deps/root; done
rm -rf .cache/device-deps/debs .cache/device-deps/root/usr/share/doc .cache/device-deps/root/usr/share/man
echo "prepare: .cache/device-deps $(du -sh .cache/device-deps | cut -f1)"

rm -rf .cache/device-models
mkdir -p .cache/device-models
models=("$@")
if ((${#models[@]} == 0)); then
  # tools/models.sh default converts MiniLM with `embed convert` once (then it is cached).
  if default="$(tools/models.sh default 2>/dev/null)"; then
    models=("$default")
  else
    echo "prepare: no MiniLM GGUF (tools/models.sh default needs 'embed convert'); the benchmark uses synthetic models only" >&2
  fi
fi
for m in "${models[@]}"; do cp "$m" .cache/device-models/; done
tracked=$(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)
carried=$(du -sb .cache/device-deps .cache/device-models | awk '{s += $1} END {print s}')
total=$(((tracked + carried) >> 20))
echo "prepare: .cache/device-models $(du -sh .cache/device-models | cut -f1); the tree that travels is about ${total} MiB (limit 64)"
if ((total > 60)); then
  echo "prepare: too large to travel: remove a model from .cache/device-models" >&2
  exit 1
fi
