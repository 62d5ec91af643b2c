// llama.cpp's CPU rounding of activations, for users who need vectors that match an index built
// with llama.cpp (ModelOptions::llama_cpp_rounding, `--compat llama.cpp`). embed's default path
// keeps activations in f32; llama.cpp's CPU backend instead
// - converts the activations entering a matmul to the weight's "vec_dot" type: f16 for f16
//   weights, bf16 for bf16, 8-bit blocks of 32 with an f16 scale (Q8_0) for Q4_0/Q5_0/Q8_0 and
//   (with an f16 block sum, Q8_1) for Q4_1/Q5_1, 8-bit blocks of 256 with an f32 scale (Q8_K) for
//   the K-quants; f32 weights see f32 activations;
// - evaluates every GELU (the erf form included) as the tanh approximation read from a table
//   indexed by the input rounded to f16, with x <= -10 -> 0 and x >= 10 -> x.
// These functions reproduce those values (the integer dot products llama.cpp then runs are exact,
// so rounding x and multiplying in f32 gives its results up to the order of f32 additions).
// Portable scalar code: one pass over the activations, small next to the matmul it feeds.
#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace embed::cpu {

// Whether matmuls with weights of type `w` see rounded activations under llama.cpp's rules.
bool llama_cpp_rounds_activations(DType w);

// out[0, k) = x[0, k) as llama.cpp would see it entering a matmul with a `w` weight; k is a
// multiple of w's block size. out may equal x.
void llama_cpp_round_activations(DType w, const float* x, int64_t k, float* out);

// The quantizations behind them, as llama.cpp stores activations for its integer dot products:
// q[i] and one scale d per block, value d * q. Q8_0: blocks of 32, d = f16(max|x| / 127),
// q = round-half-even(x * 127 / max|x|) (all zero for a zero block). Q8_K: blocks of 256, the signed
// maximum m (first on ties), s = -127 / m, q = min(127, round-half-even(s * x)), d = 1 / s.
// k is a multiple of the block size; d has k / block entries.
void quantize_q8_0(const float* x, int64_t k, int8_t* q, float* d);
void quantize_q8_k(const float* x, int64_t k, int8_t* q, float* d);

// The building blocks, exposed for tests.
// Q8_0 / Q8_1: per 32-block, d = f16(max|x| / 127), q = round-half-even(x * 127 / max|x|), value d * q.
void round_q8_0(const float* x, int64_t k, float* out);
// Q8_K: per 256-block, m = the element of largest magnitude (first on ties), s = -127 / m,
// q = min(127, round-half-even(s * x)), value (1 / s) * q; an all-zero block stays zero.
void round_q8_k(const float* x, int64_t k, float* out);
void round_f16(const float* x, int64_t k, float* out);
void round_bf16(const float* x, int64_t k, float* out);

// GELU the way llama.cpp's CPU backend computes it (tanh form, f16 table).
float llama_cpp_gelu(float x);

}  // namespace embed::cpu
