#!/usr/bin/env bash
# The whole side-by-side server benchmark in one command, for a quiet machine (docs/benchmarks.md,
# server section): wrk from Debian, the peers' venvs (setup_peers.sh), the model files, then
# run.py for embed serve, llama.cpp's server and Infinity on the same 2 cores, MiniLM f16, STS-B
# texts: saturation vs `embed bench`, 64 clients x 60 s with RSS, short-query p50/p99 alone and
# under bulk load. Writes build/server_bench/results.{json,md}. Extra arguments go to run.py
# (e.g. --duration 5 --clients 8 for a quick check).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null 2>&1 || sudo apt-get install -y -qq wrk; }
[ -x build/tools/embed ] || { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build -j2; }
tools/server/bench/setup_peers.sh >/dev/null
export EMBED_MINILM_DIR="$(tools/models.sh minilm)"
export EMBED_MINILM_GGUF_F16="$(tools/models.sh minilm-gguf f16)"
exec python3 tools/server/bench/run.py --engines embed,llama,infinity --threads 2 --duration 60 --clients 64 "$@"
