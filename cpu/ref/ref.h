// Scalar reference kernels: the source of truth every fast path (cpu/, cuda/) is tested against.
// Obviously-correct loops with double accumulation; host memory only; single-threaded.
// They take the same args structs as the Backend ops (engine/backend.h).
#pragma once

#include "engine/backend.h"

namespace embed::cpu::ref {

void gather(const GatherArgs& a);
void matmul(const MatmulArgs& a);
void layer_norm(const LayerNormArgs& a);
void rms_norm(const RmsNormArgs& a);
void rope(const RopeArgs& a);
void attention(const AttentionArgs& a);
void activation(const ActivationArgs& a);
void glu(const GluArgs& a);
void add(const AddArgs& a);
void scale(const ScaleArgs& a);
void pool(const PoolArgs& a);
void softmax(const SoftmaxArgs& a);

// Scalar activation functions (double precision), shared with the fast paths' tail loops.
double activate(Activation act, double x);

}  // namespace embed::cpu::ref
