// Launchers of the CUDA kernels. Each takes the engine's args struct (device pointers) and a
// stream; shapes and dtypes were checked by the engine's op front-doors.
#pragma once

#include <cuda_runtime.h>

#include "engine/backend.h"

namespace embed::cuda {

void launch_gather(const GatherArgs& a, cudaStream_t stream);

}  // namespace embed::cuda
