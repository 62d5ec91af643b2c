// The GPU's measured matrix ceiling, for benchmarks: cuBLAS bf16 GEMM (f32 accumulation) of
// size^3 on random data, timed with CUDA events. No CUDA header leaks from here.
#pragma once

namespace embed::cuda {

struct GemmRate {
  double tflops = 0;   // median over the timed repetitions
  double ms = 0;       // median time of one product
  int size = 0;
};

// Throws embed::Error(Device) naming the failing call.
GemmRate measure_bf16_gemm_rate(int device, int size, int reps);

}  // namespace embed::cuda
