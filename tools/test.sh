#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (README command 2, .ci/run):
# install packages, build, fetch the real models into the cache, run every ctest label but
# `cuda` (CUDA tests skip themselves without a GPU anyway), build the Python wheel and run its
# tests, run the Ray Data path with that wheel on a local two-node Ray cluster, then run each fuzzer
# (the GGUF reader, the four tokenizers, the torch.save reader and the five route families of the
# server's requests) for a minute.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

tools/setup.sh
jobs="${EMBED_JOBS:-$(nproc)}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBED_WERROR=ON  # a warning fails CI (command 1 builds the same Release flags)
cmake --build build -j "$jobs"

# Real weights for the model tests (cached; never committed).
export EMBED_MINILM_DIR="$(tools/models.sh minilm)"
export EMBED_GEMMA_GGUF="$(tools/models.sh gemma3-270m)"
export EMBED_QWEN_VOCAB_DIR="$(tools/models.sh qwen-vocab)"
export EMBED_MINILM_GGUF_F32="$(tools/models.sh minilm-gguf f32)"
export EMBED_MINILM_GGUF_F16="$(tools/models.sh minilm-gguf f16)"
export EMBED_MINILM_GGUF_Q8_0="$(tools/models.sh minilm-gguf q8_0)"
# huggingface_hub's own client (pinned), for the cache-sharing tests of tests/hub (label hub).
export EMBED_HUB_PYTHON="$(tools/hub/setup_venv.sh)"
# The ollama client and LangChain's OllamaEmbeddings (pinned), for tests/server/test_ollama_clients.py.
export EMBED_SERVER_PYTHON="$(tools/server/setup_venv.sh)"

ctest --test-dir build -LE cuda --output-on-failure -j "$jobs"

# The Python package: wheel built in a fresh virtualenv, tests/python (pytest).
EMBED_JOBS="$jobs" tools/python_test.sh
# The Ray Data path on a local cluster of two worker nodes, with that wheel (its venv: pinned ray).
tools/scale/ray_ci.sh

if [ -x tools/fuzz/run.sh ]; then
  tools/fuzz/run.sh "${EMBED_FUZZ_SECONDS:-60}"
fi
echo "test.sh: all tests passed"
