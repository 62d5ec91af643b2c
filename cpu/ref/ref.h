// Scalar reference kernels: the source of truth every fast path (cpu/, cuda/) is tested against.
// Obviously-correct loops with double accumulation; host memory only; single-threaded.
// They take the same args structs as the Backend ops (engine/backend.h).
#pragma once

#include "engine/backend.h"

namespace embed::cpu::ref {

void gather(const GatherArgs& a);
void matmul(const MatmulArgs& a);
// The arithmetic of the bf16 compute type on AVX512-BF16 (vdpbf16ps), step by step in f32 rather
// than in double, so a kernel summing in the same order gives the same bits: x and w rounded to
// bf16 (round to nearest even; denormals flushed to zero, as vcvtne2ps2bf16 does) and k padded to
// even with zeros; per k-block of `k_block` (even) values a sum starts at 0 and adds, pair by
// pair, the odd element's product and then the even one's, each addition rounded to f32 and a
// denormal sum flushed to zero (products of bf16 values are exact; products below 2^-126 are not
// modelled). y = (accumulate ? y : 0) + bias, then each block's sum added in order. No activation.
void matmul_bf16_pairs(const MatmulArgs& a, int64_t k_block);
void layer_norm(const LayerNormArgs& a);
void rms_norm(const RmsNormArgs& a);
void rope(const RopeArgs& a);
void attention(const AttentionArgs& a);
// The arithmetic of the bf16 attention on AVX512-BF16 (vdpbf16ps), its products in f32 in the
// kernel's order: q, k, v rounded to bf16 (as matmul_bf16_pairs); a score is one f32 chain from 0
// over the head's pairs (odd element's product, then the even one's, each addition rounded, a
// denormal sum flushed); the softmax in double over the logits (float) score * scale, its
// unnormalized p = exp(logit - max) rounded to bf16 (0 outside a query's visible keys); an
// output is one f32 chain from 0 over the sequence's key pairs (2m, 2m + 1) in the same way, plus
// the KV-Embedding prefix's weight times its value (f32 values), divided by the softmax sum. No
// position bias (the kernel takes the f32 attention there): refused here.
void attention_bf16_pairs(const AttentionArgs& a);
void activation(const ActivationArgs& a);
void glu(const GluArgs& a);
void add(const AddArgs& a);
void scale(const ScaleArgs& a);
void pool(const PoolArgs& a);
void softmax(const SoftmaxArgs& a);

// Scalar activation functions (double precision), shared with the fast paths' tail loops.
double activate(Activation act, double x);

}  // namespace embed::cpu::ref
