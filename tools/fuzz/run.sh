#!/usr/bin/env bash
# Builds the GGUF reader fuzzer (clang, libFuzzer + ASan + UBSan, in build-fuzz/) and runs it for
# SECONDS on one core over the committed seeds plus a local working corpus (fuzz-corpus-work/).
# Exits non-zero on any finding (crash, sanitizer report, timeout, out-of-memory, leak).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

seconds="${1:?usage: tools/fuzz/run.sh SECONDS}"
build="${EMBED_FUZZ_BUILD:-build-fuzz}"
work="${EMBED_FUZZ_CORPUS:-fuzz-corpus-work}"

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DEMBED_FUZZ=ON -DEMBED_BUILD_TESTS=OFF -DEMBED_BUILD_TOOLS=OFF -DEMBED_CUDA=OFF >/dev/null
cmake --build "$build" -j "${EMBED_JOBS:-2}" --target gguf_reader_fuzz

mkdir -p "$work" "$build/fuzz-artifacts"
echo "fuzz: gguf_reader_fuzz for ${seconds}s (findings go to $build/fuzz-artifacts/)"
# One process on one core. -timeout catches hangs; -rss_limit_mb and -malloc_limit_mb catch
# allocations driven by file values; -max_len lets the fuzzer grow multi-tensor files.
"$build/tools/fuzz/gguf_reader_fuzz" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=65536 \
  -dict=tools/fuzz/gguf.dict -artifact_prefix="$build/fuzz-artifacts/" -print_final_stats=1 \
  "$work" tools/fuzz/corpus
echo "fuzz: no findings in ${seconds}s"
