#!/usr/bin/env bash
# Builds the fuzzers (clang, libFuzzer + ASan + UBSan, in build-fuzz/) and runs each for SECONDS on
# one core over its seeds plus a local working corpus (fuzz-corpus-work/<target>/): the GGUF reader,
# the four tokenizers (their vocabularies come from tools/models.sh, as in the tests) and the
# torch.save state-dict reader of BGE-M3's heads and the request decoding of the server's six route
# families (over the committed tiny models).
# Exits non-zero on any finding (crash, sanitizer report, timeout, out-of-memory, leak).
#   tools/fuzz/run.sh SECONDS [TARGET...]   (default: every target)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

seconds="${1:?usage: tools/fuzz/run.sh SECONDS [TARGET...]}"
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gguf_reader_fuzz tokenizer_wordpiece_fuzz tokenizer_bpe_fuzz tokenizer_spm_fuzz tokenizer_unigram_fuzz
  torch_state_fuzz request_openai_fuzz request_tei_fuzz request_jina_fuzz request_llama_fuzz request_tokenize_fuzz request_ollama_fuzz)
build="${EMBED_FUZZ_BUILD:-build-fuzz}"
work="${EMBED_FUZZ_CORPUS:-fuzz-corpus-work}"

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DEMBED_FUZZ=ON -DEMBED_BUILD_TESTS=OFF -DEMBED_BUILD_TOOLS=OFF -DEMBED_CUDA=OFF >/dev/null
cmake --build "$build" -j "${EMBED_JOBS:-2}" --target "${targets[@]}" tokenizer_fuzz_seeds

# The tokenizers' vocabularies: the cached files the tests use (no-ops when already cached).
if [[ " ${targets[*]} " == *" tokenizer_"* ]]; then
  export EMBED_MINILM_DIR="${EMBED_MINILM_DIR:-$(tools/models.sh minilm)}"
  export EMBED_QWEN_VOCAB_DIR="${EMBED_QWEN_VOCAB_DIR:-$(tools/models.sh qwen-vocab)}"
  export EMBED_GEMMA_GGUF="${EMBED_GEMMA_GGUF:-$(tools/models.sh gemma3-270m)}"
  rm -rf "$build/tokenizer-seeds"
  "$build/tools/fuzz/tokenizer_fuzz_seeds" "$build/tokenizer-seeds" tests/fixtures/tokenizer/*.inp >/dev/null
fi

mkdir -p "$build/fuzz-artifacts"
for target in "${targets[@]}"; do
  mkdir -p "$work/$target"
  echo "fuzz: $target for ${seconds}s (findings go to $build/fuzz-artifacts/)"
  if [ "$target" = gguf_reader_fuzz ]; then
    # -rss_limit_mb and -malloc_limit_mb catch allocations driven by file values; -max_len lets
    # the fuzzer grow multi-tensor files.
    opts=(-rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=65536 -dict=tools/fuzz/gguf.dict)
    seeds=tools/fuzz/corpus
  elif [ "$target" = torch_state_fuzz ]; then
    # Seed: a small state dict in torch.save's layout (tools/fuzz/make_torch_seed.py).
    opts=(-rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=65536)
    seeds="$build/torch-seeds"
    mkdir -p "$seeds"
    python3 tools/fuzz/make_torch_seed.py "$seeds/linear.pt"
  elif [[ "$target" == request_* ]]; then
    # A body per input (the first byte picks the route); the tiny models compute in milliseconds.
    family="${target#request_}"
    opts=(-rss_limit_mb=2048 -max_len=4096 -dict=tools/fuzz/request.dict)
    seeds="tools/fuzz/requests/${family%_fuzz}"
  else
    # The vocabularies take ~0.5-1.5 GiB with ASan (Gemma's 262k pieces); -max_len covers long
    # words and whitespace runs; -timeout catches super-linear paths.
    opts=(-rss_limit_mb=4096 -max_len=8192 -dict=tools/fuzz/tokenizer.dict)
    seeds="$build/tokenizer-seeds"
  fi
  # One process on one core; -timeout catches hangs. New inputs go to the first (working) corpus.
  "$build/tools/fuzz/$target" -max_total_time="$seconds" -timeout=10 -artifact_prefix="$build/fuzz-artifacts/$target-" \
    -print_final_stats=1 "${opts[@]}" "$work/$target" "$seeds"
done
echo "fuzz: no findings in ${seconds}s per target"
