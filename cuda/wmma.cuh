// WMMA (warp-level 16x16x16 tensor-core tiles, f16 in, f32 accumulate) for cuda/ kernels: the
// real <mma.h> API, or its CPU emulation (cuda/emulator_wmma.h) under EMBED_CUDA_EMULATE.
// `Half` is the element type of f16 tiles in memory; to_half() rounds to nearest even.
#pragma once

#include "cuda/device.cuh"

#if defined(EMBED_CUDA_EMULATE)
#include "cuda/emulator_wmma.h"
namespace embed::cuda {
namespace wmma = emu::wmma;
using Half = emu::Half;
inline Half to_half(float f) { return Half{float_to_half(f)}; }
}  // namespace embed::cuda
#else
#include <mma.h>
namespace embed::cuda {
namespace wmma = nvcuda::wmma;
using Half = __half;
__device__ __forceinline__ Half to_half(float f) { return __float2half_rn(f); }
}  // namespace embed::cuda
#endif
