// Attention over packed variable-length sequences on the GPU, flash-style: key tiles streamed
// through shared memory with an online softmax, nothing of size len^2 in memory. f32 math.
// Shapes: q, out [n_tokens, n_heads * d_head]; k, v [n_tokens, n_kv_heads * d_head]; cu_seqlens
// [n_seqs + 1] int32 (device). Query head h reads kv head h / (n_heads / n_kv_heads).
// Geometry: block (sequence, query tile of 16, head); 4 warps x 4 queries. Per key tile of 32:
// lane j scores key j for the warp's 4 queries (q broadcast from shared memory), the warp updates
// max/sum with butterfly reductions, then each lane accumulates p . v for d_head / 32 columns.
// Tiles are counted from the sequence's first key, so a sequence's output is bit-identical
// whatever it is packed with. With keys of earlier positions (AttentionArgs::kv_rows) the
// queries sit at the end of the sequence's keys. The KV-Embedding prefix (AttentionArgs::prefix_k)
// is folded into the online softmax after the last key tile, as one more logit and value; the
// position bias (T5/MPNet buckets, ALiBi) is added to each logit after the scale. Dynamic shared memory: Q 16 x D, K 32 x (D + 1), V 32 x D, P 16 x 32 floats.
#include "cuda/attention_common.cuh"
#include "cuda/kernels.cuh"

namespace embed::cuda {
namespace {

constexpr int kWarps = 4, kQueriesPerWarp = 4, kQueries = kWarps * kQueriesPerWarp, kKeys = 32;

template <int D>
constexpr size_t shared_floats() {
  return size_t{kQueries} * D + size_t{kKeys} * (D + 1) + size_t{kKeys} * D + size_t{kQueries} * kKeys;
}

// The online-softmax state of one warp's queries: running max and sum of each query's
// exponentials, and its unnormalised output (this lane's columns: lane + 32 i).
template <int D>
struct WarpQueries {
  float m[kQueriesPerWarp], l[kQueriesPerWarp], acc[kQueriesPerWarp][D / 32];
};

// dst[r][c] (row pitch `pitch`) = src row first + r, columns col + c, for r < rows and c < D;
// zero outside the valid rows (< limit) and columns (< d).
template <int D>
__device__ __forceinline__ void load_rows(float* dst, int pitch, int rows, const float* src, int64_t stride, int64_t col,
                                          int first, int limit, int d) {
  for (int e = static_cast<int>(threadIdx.x); e < rows * D; e += kWarps * 32) {
    const int r = e / D, c = e % D;
    dst[r * pitch + c] = (first + r < limit && c < d) ? src[(first + r) * stride + col + c] : 0.0f;
  }
}

// Folds one key tile into the warp's queries (at key positions q_first ..): lane j scores key
// kt + j of `len`, the warp rescales its running sums to the new maxima, and the probabilities go
// to `ps` for the p . v product.
template <int D>
__device__ __forceinline__ void softmax_tile(const AttentionParams& p, WarpQueries<D>& w, const float* qs, const float* ks,
                                             float* ps, int q_first, int kt, int len, int h, float slope) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  float score[kQueriesPerWarp];
#pragma unroll
  for (int r = 0; r < kQueriesPerWarp; r++) score[r] = 0.0f;
  for (int c = 0; c < p.d_head; c++) {
    const float kc = ks[lane * (D + 1) + c];
#pragma unroll
    for (int r = 0; r < kQueriesPerWarp; r++) score[r] = fmaf(qs[r * D + c], kc, score[r]);
  }
  const int kj = kt + lane;
#pragma unroll
  for (int r = 0; r < kQueriesPerWarp; r++) {
    const bool ok = kj < len && visible(p, q_first + r, kj);
    const float bias = ok && (p.bias_table || slope > 0.0f) ? position_bias(p, h, slope, kj - (q_first + r)) : 0.0f;
    const float s = ok ? fmaf(score[r], p.scale, bias) : -INFINITY;
    const float m_new = std::max(w.m[r], warp_max(s));
    const float prob = ok ? expf(s - m_new) : 0.0f;
    // While nothing was visible m is -inf and l, acc are 0: the factor is irrelevant, avoid inf-inf.
    const float correction = w.m[r] == -INFINITY ? 0.0f : expf(w.m[r] - m_new);
    w.l[r] = w.l[r] * correction + warp_sum(prob);
#pragma unroll
    for (int i = 0; i < D / 32; i++) w.acc[r][i] *= correction;
    w.m[r] = m_new;
    ps[r * kKeys + lane] = prob;
  }
}

template <int D>
__device__ __forceinline__ void accumulate_values(WarpQueries<D>& w, const float* vs, const float* ps) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  for (int j = 0; j < kKeys; j++) {
    float vj[D / 32];
#pragma unroll
    for (int i = 0; i < D / 32; i++) vj[i] = vs[j * D + lane + 32 * i];
#pragma unroll
    for (int r = 0; r < kQueriesPerWarp; r++) {
      const float pj = ps[r * kKeys + j];
#pragma unroll
      for (int i = 0; i < D / 32; i++) w.acc[r][i] = fmaf(pj, vj[i], w.acc[r][i]);
    }
  }
}

template <int D>  // d_head <= D, D a multiple of 32
__global__ void __launch_bounds__(kWarps * 32) attention_kernel(AttentionParams p) {
  EMBED_DYNAMIC_SHARED(float, smem);
  float* qs = smem;                       // [kQueries][D]
  float* ks = qs + kQueries * D;          // [kKeys][D + 1]: lane j reads row j, column c: no bank conflict
  float* vs = ks + kKeys * (D + 1);       // [kKeys][D]
  float* ps = vs + kKeys * D;             // [kQueries][kKeys]
  const int h = static_cast<int>(blockIdx.z), warp = static_cast<int>(threadIdx.x >> 5);
  const SeqSpan sp = seq_span(p, static_cast<int>(blockIdx.x));
  const int begin = sp.q_begin, len = sp.q_len, kv_len = sp.kv_len;
  const int q0 = static_cast<int>(blockIdx.y) * kQueries, q_first = q0 + warp * kQueriesPerWarp;
  if (q0 >= len) return;  // the whole block: grid.y covers the longest sequence
  const int q_last = std::min(q0 + kQueries, len) - 1, d = p.d_head;
  const int64_t q_col = int64_t{h} * d, kv_col = int64_t{h / p.group} * d;
  const float* seq_q = p.q + begin * p.q_stride;
  const float* seq_k = p.k + sp.kv_begin * p.kv_stride;
  const float* seq_v = p.v + sp.kv_begin * p.kv_stride;
  load_rows<D>(qs, D, kQueries, seq_q, p.q_stride, q_col, q0, len, d);
  int k_begin, k_end;
  key_range(p, sp.offset + q0, sp.offset + q_last, kv_len, kKeys, &k_begin, &k_end);

  const float slope = p.alibi_max_bias > 0.0f ? alibi_slope(h, p.n_heads, p.alibi_max_bias) : 0.0f;
  WarpQueries<D> w;
#pragma unroll
  for (int r = 0; r < kQueriesPerWarp; r++) {
    w.m[r] = -INFINITY;
    w.l[r] = 0.0f;
#pragma unroll
    for (int i = 0; i < D / 32; i++) w.acc[r][i] = 0.0f;
  }
  float* warp_ps = ps + warp * kQueriesPerWarp * kKeys;
  for (int kt = k_begin; kt < k_end; kt += kKeys) {
    __syncthreads();  // the previous tile is no longer read (and the q tile is written)
    load_rows<D>(ks, D + 1, kKeys, seq_k, p.kv_stride, kv_col, kt, kv_len, d);
    load_rows<D>(vs, D, kKeys, seq_v, p.kv_stride, kv_col, kt, kv_len, d);
    __syncthreads();
    softmax_tile<D>(p, w, qs + warp * kQueriesPerWarp * D, ks, warp_ps, sp.offset + q_first, kt, kv_len, h, slope);
    __syncwarp();  // the warp's probabilities are written
    accumulate_values<D>(w, vs, warp_ps);
  }
  const int lane = static_cast<int>(threadIdx.x & 31);
  if (p.prefix_k) {
    __syncthreads();  // the q tile is written even when no key tile ran
    const float* pk = p.prefix_k + int64_t{blockIdx.x} * p.prefix_stride + kv_col;
    const float* pv = p.prefix_v + int64_t{blockIdx.x} * p.prefix_stride + kv_col;
    const float* wq = qs + warp * kQueriesPerWarp * D;
#pragma unroll
    for (int r = 0; r < kQueriesPerWarp; r++) {
      float part = 0.0f;
#pragma unroll
      for (int i = 0; i < D / 32; i++)
        if (lane + 32 * i < d) part = fmaf(wq[r * D + lane + 32 * i], pk[lane + 32 * i], part);
      const float s = warp_sum(part) * p.scale + p.prefix_bias;
      const float m_new = std::max(w.m[r], s);
      const float prob = expf(s - m_new);
      const float correction = w.m[r] == -INFINITY ? 0.0f : expf(w.m[r] - m_new);
      w.l[r] = w.l[r] * correction + prob;
#pragma unroll
      for (int i = 0; i < D / 32; i++)
        w.acc[r][i] = w.acc[r][i] * correction + (lane + 32 * i < d ? prob * pv[lane + 32 * i] : 0.0f);
      w.m[r] = m_new;
    }
  }
#pragma unroll
  for (int r = 0; r < kQueriesPerWarp; r++) {
    if (q_first + r >= len) continue;
    float* o = p.out + (begin + q_first + r) * p.q_stride + q_col;
#pragma unroll
    for (int i = 0; i < D / 32; i++)
      if (lane + 32 * i < d) o[lane + 32 * i] = w.l[r] > 0.0f ? w.acc[r][i] / w.l[r] : 0.0f;
  }
}

template <int D>
void launch_for(const AttentionArgs& a, const AttentionParams& p, cudaStream_t stream) {
  const size_t bytes = shared_floats<D>() * sizeof(float);
  auto* const kernel = &attention_kernel<D>;
  if (bytes > 48 * 1024) EMBED_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  const dim3 grid(static_cast<unsigned>(a.n_seqs), static_cast<unsigned>((a.max_seqlen + kQueries - 1) / kQueries),
                  static_cast<unsigned>(a.n_heads));
  EMBED_LAUNCH(kernel, grid, kWarps * 32, bytes, stream)(p);
  EMBED_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_attention(const AttentionArgs& a, cudaStream_t stream) {
  if (a.n_seqs == 0 || a.max_seqlen == 0) return;
  if (a.d_head > kMaxAttentionHead)
    fail(ErrorKind::Unsupported, "cuda attention: d_head " + std::to_string(a.d_head) + " exceeds " + std::to_string(kMaxAttentionHead));
  if ((a.max_seqlen + kQueries - 1) / kQueries > 65535 || a.n_heads > 65535)
    fail(ErrorKind::Unsupported, "cuda attention: sequence length or head count beyond the launch limits");
  const AttentionParams p = attention_params(a, nullptr);
  if (a.d_head <= 32) launch_for<32>(a, p, stream);
  else if (a.d_head <= 64) launch_for<64>(a, p, stream);
  else if (a.d_head <= 128) launch_for<128>(a, p, stream);
  else launch_for<256>(a, p, stream);
}

}  // namespace embed::cuda
