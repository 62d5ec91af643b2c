// Attention over packed variable-length sequences on the tensor cores (the default, non-f32
// mode): q, k, v are rounded to f16 (each scaled by a power of two first if its batch-wide max
// exceeds the f16 range, undone exactly afterwards), Q.K^T and P.V run as 16x16x16 WMMA tiles
// with f32 accumulation, the softmax is f32. Shapes and masking as attention.cu.
// Geometry: block (sequence, 64 queries, head), 4 warps of 16 query rows. Two passes over the
// key tiles (64 keys; 32 when d_head > 128): the first finds each row's max and sum of
// exponentials, the second forms P = exp(S - max) in f16 and accumulates P.V in fragments, so
// nothing is rescaled; for d_head > 128 the second pass runs once per 128 output columns. In each
// warp, lanes 2r and 2r+1 own score row r (half the columns each). Tiles count from the sequence's
// first key (keys may start before the queries: AttentionArgs::kv_rows): a sequence's output does
// not depend on its neighbours (unless the batch-wide f16 shift
// differs, which needs values beyond 65504).
#include "cuda/attention_common.cuh"
#include "cuda/kernels.cuh"
#include "cuda/wmma.cuh"

namespace embed::cuda {
namespace {

constexpr int kWarps = 4, kRows = 16, kQueries = kWarps * kRows, kThreads = kWarps * 32;

// Tile sizes and shared-memory pitches (elements) for head size bucket D (d_head <= D): pitches
// keep WMMA's rules (rows a multiple of 16 bytes, tiles 32-byte aligned) and stagger banks.
template <int D>
struct Tc {
  static constexpr int kKeys = D <= 128 ? 64 : 32;  // keys per tile
  static constexpr int kCols = D <= 128 ? D : 128;  // output columns per second pass
  static constexpr int kHalfPitch = D + 8;          // q, k, v tiles (f16)
  static constexpr int kScorePitch = kKeys + 4;     // scores (f32)
  static constexpr int kProbPitch = kKeys + 8;      // probabilities (f16)
  static constexpr int kOutPitch = kCols + 4;       // output staging (f32)
  static constexpr size_t kQBytes = size_t{kQueries} * kHalfPitch * 2, kKvBytes = size_t{kKeys} * kHalfPitch * 2;
  static constexpr size_t kScoreBytes = size_t{kRows} * kScorePitch * 4, kProbBytes = size_t{kRows} * kProbPitch * 2;
  static constexpr size_t kStagingBytes = size_t{kWarps} * kRows * kOutPitch * 4;
  static constexpr size_t kSharedBytes = kQBytes + 2 * kKvBytes + kWarps * (kScoreBytes + kProbBytes + kRows * 4);
  static_assert(kStagingBytes <= 2 * kKvBytes, "the output staging reuses the k and v tiles");
};

// dst[r][c] (pitch `pitch`) = f16(src[first + r][col + c] * mul), zero outside rows < limit, columns < d.
template <int D>
__device__ __forceinline__ void load_half_rows(Half* dst, int pitch, int rows, const float* src, int64_t stride, int64_t col,
                                               int first, int limit, int d, float mul) {
  for (int e = static_cast<int>(threadIdx.x); e < rows * D; e += kThreads) {
    const int r = e / D, c = e % D;
    dst[r * pitch + c] = to_half((first + r < limit && c < d) ? src[(first + r) * stride + col + c] * mul : 0.0f);
  }
}

// The warp's 16 x kKeys raw scores Q.K^T into `scores` (f32, pitch kScorePitch).
template <int D>
__device__ __forceinline__ void scores_to_shared(const Half* q_rows, const Half* keys, float* scores, int d16) {
  using T = Tc<D>;
  for (int n = 0; n < T::kKeys / 16; n++) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> s;
    wmma::fill_fragment(s, 0.0f);
    for (int kk = 0; kk < d16; kk++) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, Half, wmma::row_major> a;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, Half, wmma::col_major> b;  // K^T: key rows read as columns
      wmma::load_matrix_sync(a, q_rows + kk * 16, T::kHalfPitch);
      wmma::load_matrix_sync(b, keys + n * 16 * T::kHalfPitch + kk * 16, T::kHalfPitch);
      wmma::mma_sync(s, a, b, s);
    }
    wmma::store_matrix_sync(scores + n * 16, s, T::kScorePitch, wmma::mem_row_major);
  }
  __syncwarp();
}

// First pass over one tile: this lane's half of its row updates the row's running max and sum
// (qi: the row's key position; len: keys of the sequence).
template <int D>
__device__ __forceinline__ void update_row_stats(const AttentionParams& p, const float* scores, float score_scale, int qi,
                                                 int kt, int len, float* m, float* l) {
  using T = Tc<D>;
  const int lane = static_cast<int>(threadIdx.x & 31), row = lane >> 1, c0 = (lane & 1) * (T::kKeys / 2);
  float tile_max = -INFINITY;
  for (int c = c0; c < c0 + T::kKeys / 2; c++)
    if (kt + c < len && visible(p, qi, kt + c)) tile_max = fmaxf(tile_max, scores[row * T::kScorePitch + c] * score_scale);
  tile_max = fmaxf(tile_max, __shfl_xor_sync(kFullMask, tile_max, 1));
  const float m_new = fmaxf(*m, tile_max);
  float sum = 0.0f;
  for (int c = c0; c < c0 + T::kKeys / 2; c++)
    if (kt + c < len && visible(p, qi, kt + c)) sum += expf(scores[row * T::kScorePitch + c] * score_scale - m_new);
  sum += __shfl_xor_sync(kFullMask, sum, 1);
  *l = (*m == -INFINITY ? 0.0f : *l * expf(*m - m_new)) + sum;  // nothing seen yet: avoid inf - inf
  *m = m_new;
  __syncwarp();  // the scores are read before the next tile overwrites them
}

// Second pass over one tile: P = exp(S - max) as f16, then acc[j] += P . V[:, chunk + 16 j].
template <int D>
__device__ __forceinline__ void accumulate_tile(const AttentionParams& p, const float* scores, Half* probs, const Half* values,
                                                float score_scale, float m, int qi, int kt, int len, int chunk,
                                                wmma::fragment<wmma::accumulator, 16, 16, 16, float>* acc) {
  using T = Tc<D>;
  const int lane = static_cast<int>(threadIdx.x & 31), row = lane >> 1, c0 = (lane & 1) * (T::kKeys / 2);
  for (int c = c0; c < c0 + T::kKeys / 2; c++) {
    const bool ok = kt + c < len && visible(p, qi, kt + c);
    probs[row * T::kProbPitch + c] = to_half(ok ? expf(scores[row * T::kScorePitch + c] * score_scale - m) : 0.0f);
  }
  __syncwarp();
  for (int kk = 0; kk < T::kKeys / 16; kk++) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, Half, wmma::row_major> a;
    wmma::load_matrix_sync(a, probs + kk * 16, T::kProbPitch);
#pragma unroll
    for (int j = 0; j < T::kCols / 16; j++) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, Half, wmma::row_major> b;
      wmma::load_matrix_sync(b, values + kk * 16 * T::kHalfPitch + chunk + j * 16, T::kHalfPitch);
      wmma::mma_sync(acc[j], a, b, acc[j]);
    }
  }
  __syncwarp();  // the probabilities are read before the next tile overwrites them
}

template <int D>  // d_head <= D, d_head a multiple of 16
__global__ void __launch_bounds__(kThreads) attention_tc_kernel(AttentionParams p) {
  using T = Tc<D>;
  EMBED_DYNAMIC_SHARED(unsigned char, smem);
  Half* qh = reinterpret_cast<Half*>(smem);
  Half* kh = reinterpret_cast<Half*>(smem + T::kQBytes);
  Half* vh = reinterpret_cast<Half*>(smem + T::kQBytes + T::kKvBytes);
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  unsigned char* warp_area = smem + T::kQBytes + 2 * T::kKvBytes + warp * (T::kScoreBytes + T::kProbBytes + kRows * 4);
  float* scores = reinterpret_cast<float*>(warp_area);
  Half* probs = reinterpret_cast<Half*>(warp_area + T::kScoreBytes);
  float* row_sum = reinterpret_cast<float*>(warp_area + T::kScoreBytes + T::kProbBytes);
  float* staging = reinterpret_cast<float*>(kh) + warp * kRows * T::kOutPitch;  // after the last tile only

  const SeqSpan sp = seq_span(p, static_cast<int>(blockIdx.x));
  const int h = static_cast<int>(blockIdx.z), begin = sp.q_begin, len = sp.q_len, kv_len = sp.kv_len;
  const int q0 = static_cast<int>(blockIdx.y) * kQueries, q_first = q0 + warp * kRows, qi = sp.offset + q_first + (lane >> 1);
  if (q0 >= len) return;  // the whole block
  const int d = p.d_head, d16 = d / 16, sq = half_shift(__uint_as_float(p.absmax[0])), sk = half_shift(__uint_as_float(p.absmax[1]));
  const int sv = half_shift(__uint_as_float(p.absmax[2]));
  const float score_scale = p.scale * ldexpf(1.0f, sq + sk);
  const int64_t q_col = int64_t{h} * d, kv_col = int64_t{h / p.group} * d;
  const float* seq_k = p.k + sp.kv_begin * p.kv_stride;
  const float* seq_v = p.v + sp.kv_begin * p.kv_stride;
  load_half_rows<D>(qh, T::kHalfPitch, kQueries, p.q + begin * p.q_stride, p.q_stride, q_col, q0, len, d, ldexpf(1.0f, -sq));
  int k_begin, k_end;
  key_range(p, sp.offset + q0, sp.offset + std::min(q0 + kQueries, len) - 1, kv_len, T::kKeys, &k_begin, &k_end);
  const Half* q_rows = qh + warp * kRows * T::kHalfPitch;

  float m = -INFINITY, l = 0.0f;
  for (int kt = k_begin; kt < k_end; kt += T::kKeys) {
    __syncthreads();  // the previous tile is no longer read (and the q tile is written)
    load_half_rows<D>(kh, T::kHalfPitch, T::kKeys, seq_k, p.kv_stride, kv_col, kt, kv_len, d, ldexpf(1.0f, -sk));
    __syncthreads();
    scores_to_shared<D>(q_rows, kh, scores, d16);
    update_row_stats<D>(p, scores, score_scale, qi, kt, kv_len, &m, &l);
  }
  if ((lane & 1) == 0) row_sum[lane >> 1] = l;
  for (int chunk = 0; chunk < d; chunk += T::kCols) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[T::kCols / 16];
    for (auto& f : acc) wmma::fill_fragment(f, 0.0f);
    for (int kt = k_begin; kt < k_end; kt += T::kKeys) {
      __syncthreads();
      load_half_rows<D>(kh, T::kHalfPitch, T::kKeys, seq_k, p.kv_stride, kv_col, kt, kv_len, d, ldexpf(1.0f, -sk));
      load_half_rows<D>(vh, T::kHalfPitch, T::kKeys, seq_v, p.kv_stride, kv_col, kt, kv_len, d, ldexpf(1.0f, -sv));
      __syncthreads();
      scores_to_shared<D>(q_rows, kh, scores, d16);
      accumulate_tile<D>(p, scores, probs, vh, score_scale, m, qi, kt, kv_len, chunk, acc);
    }
    __syncthreads();  // every warp is done with the k and v tiles: the staging reuses them
#pragma unroll
    for (int j = 0; j < T::kCols / 16; j++) wmma::store_matrix_sync(staging + j * 16, acc[j], T::kOutPitch, wmma::mem_row_major);
    __syncwarp();
    const float out_mul = ldexpf(1.0f, sv);
    for (int e = lane; e < kRows * T::kCols; e += 32) {
      const int r = e / T::kCols, c = e % T::kCols;
      if (q_first + r >= len || chunk + c >= d) continue;
      const float sum = row_sum[r];
      p.out[(begin + q_first + r) * p.q_stride + q_col + chunk + c] = sum > 0.0f ? staging[r * T::kOutPitch + c] / sum * out_mul : 0.0f;
    }
  }
}

__global__ void absmax3_kernel(const float* a, int64_t na, const float* b, int64_t nb, const float* c, int64_t nc, unsigned* out) {
  float ma = 0.0f, mb = 0.0f, mc = 0.0f;
  const int64_t n = std::max(na, std::max(nb, nc));
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    if (i < na) ma = fmaxf(ma, fabsf(a[i]));
    if (i < nb) mb = fmaxf(mb, fabsf(b[i]));
    if (i < nc) mc = fmaxf(mc, fabsf(c[i]));
  }
  ma = warp_max(ma);
  mb = warp_max(mb);
  mc = warp_max(mc);
  if ((threadIdx.x & 31) == 0) {
    atomicMax(out + 0, __float_as_uint(ma));
    atomicMax(out + 1, __float_as_uint(mb));
    atomicMax(out + 2, __float_as_uint(mc));
  }
}

template <int D>
void launch_for(const AttentionArgs& a, const AttentionParams& p, cudaStream_t stream) {
  auto* const kernel = &attention_tc_kernel<D>;
  constexpr size_t bytes = Tc<D>::kSharedBytes;
  if (bytes > 48 * 1024) EMBED_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  const dim3 grid(static_cast<unsigned>(a.n_seqs), static_cast<unsigned>((a.max_seqlen + kQueries - 1) / kQueries),
                  static_cast<unsigned>(a.n_heads));
  EMBED_LAUNCH(kernel, grid, kThreads, bytes, stream)(p);
  EMBED_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool attention_tensor_cores_supported(const AttentionArgs& a) {
  return a.d_head % 16 == 0 && a.d_head <= kMaxAttentionHead;
}

void launch_attention_tensor_cores(const AttentionArgs& a, unsigned* absmax, cudaStream_t stream) {
  EMBED_CHECK(attention_tensor_cores_supported(a), "launch_attention_tensor_cores: d_head must be a multiple of 16, <= 256");
  if (a.n_seqs == 0 || a.max_seqlen == 0) return;
  if ((a.max_seqlen + kQueries - 1) / kQueries > 65535 || a.n_heads > 65535)
    fail(ErrorKind::Unsupported, "cuda attention: sequence length or head count beyond the launch limits");
  EMBED_CUDA_CHECK(cudaMemsetAsync(absmax, 0, 3 * sizeof(unsigned), stream));
  const int64_t nq = a.q.numel(), nkv = a.k.numel();
  EMBED_LAUNCH(absmax3_kernel, std::min(elementwise_blocks(nq, 256), 1024u), 256, 0, stream)(a.q.ptr<const float>(), nq,
                                                                                           a.k.ptr<const float>(), nkv,
                                                                                           a.v.ptr<const float>(), nkv, absmax);
  EMBED_CUDA_CHECK_LAUNCH();
  const AttentionParams p = attention_params(a, absmax);
  if (a.d_head <= 32) launch_for<32>(a, p, stream);
  else if (a.d_head <= 64) launch_for<64>(a, p, stream);
  else if (a.d_head <= 128) launch_for<128>(a, p, stream);
  else launch_for<256>(a, p, stream);
}

}  // namespace embed::cuda
