#!/usr/bin/env bash
# Run THERE (a lent GPU machine), from the repository root, after tools/device/prepare.sh here:
# builds only the CUDA tests and the benchmark (ninja, sm_90), runs every `cuda`-labelled test,
# then benchmarks synthetic MiniLM / bge-large / Qwen3-0.6B shapes and any carried model
# (tokens/s per batch shape, fraction of the measured bf16 GEMM rate, CUDA-vs-CPU cosines), and
# prints a compact summary last. Budget: well under 6 minutes on 16 cores. Logs go to $OUT.
# EMBED_MEMCHECK=1 adds compute-sanitizer memcheck and racecheck runs (a second call, if time allows).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out="${OUT:-/tmp/embed-cuda-check}"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*"; }

# Carried libraries (prepare.sh), used only where the machine lacks its own.
deps="$PWD/.cache/device-deps/root"
if [ -d "$deps" ]; then
  export PATH="$PATH:$deps/usr/bin"
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  for pc in "$deps"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
    [ -f "$pc" ] && sed -i "s#^prefix=/usr\$#prefix=$deps/usr#" "$pc"
  done
  export PKG_CONFIG_PATH="$deps/usr/lib/x86_64-linux-gnu/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  prefix=(-DCMAKE_PREFIX_PATH="$deps/usr")
else
  prefix=()
fi

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"
stamp "configure"
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBED_CUDA=ON -DEMBED_CUDA_ARCHS=90 "${prefix[@]}" \
  >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
stamp "build"
cmake --build build-cuda -j "$(nproc)" --target embed_cuda_kernel_tests embed_cuda_model_tests embed-cuda-bench >"$out/build.log" 2>&1 || { grep -E "error|Error" "$out/build.log" | head -30; exit 1; }

stamp "tests (ctest -L cuda)"
models=(.cache/device-models/*.gguf)
[ -e "${models[0]}" ] || models=()
export EMBED_CUDA_TEST_MODELS="$(IFS=:; echo "${models[*]}")"
ctest --test-dir build-cuda -L cuda --output-on-failure --timeout 240 -j 2 >"$out/ctest.log" 2>&1
tests_rc=$?
grep -E "tests passed|tests failed|\*\*\*Failed|Failed  |Timeout" "$out/ctest.log" | tail -15

if [ "${EMBED_MEMCHECK:-0}" = 1 ]; then  # optional (minutes): out-of-bounds accesses and shared-memory races
  stamp "compute-sanitizer"
  compute-sanitizer --tool memcheck --error-exitcode 9 build-cuda/tests/embed_cuda_kernel_tests >"$out/memcheck.log" 2>&1
  echo "memcheck rc=$? (log: memcheck.log)"
  compute-sanitizer --tool racecheck --error-exitcode 9 build-cuda/tests/embed_cuda_model_tests "[attention]" >"$out/racecheck.log" 2>&1
  echo "racecheck rc=$? (log: racecheck.log)"
fi

stamp "benchmark"
model_args=()
for m in "${models[@]}"; do model_args+=(--model "$m"); done
build-cuda/tools/bench/embed-cuda-bench --synthetic minilm-l6 --synthetic bge-large --synthetic qwen3-0.6b "${model_args[@]}" \
  --shapes 1x16,32x128,64x512 --reps 10 --f32 --cpu-check >"$out/bench.md" 2>"$out/bench.log"
bench_rc=$?

stamp "done (tests rc=$tests_rc, bench rc=$bench_rc)"
echo "==================== summary ===================="
grep -E "tests passed|tests failed" "$out/ctest.log" | tail -1
if [ $bench_rc -eq 0 ]; then cat "$out/bench.md"; else tail -20 "$out/bench.log"; fi
exit $((tests_rc != 0 || bench_rc != 0))
