// Attention over packed sequences with AVX2. One task = (sequence, kv head, block of queries):
// the task transposes that head's keys into kT[d_head][len] so each query's scores are a
// broadcast-FMA sweep with no horizontal sums, then softmax over the visible key range only
// (causal / window limits give a contiguous range, so no mask is materialised), then
// out = sum_j p_j v_j. Work per query depends only on its own sequence: batch invariant.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/simd_avx2.h"

namespace embed::cpu::avx2 {
namespace {

constexpr int kQueryBlock = 32;

// o[0, 8*NV) = inv * sum_{j in [jlo, jhi)} p[j] * v[j][0, 8*NV): NV independent accumulators.
template <int NV>
inline void weighted_sum(const float* p, int jlo, int jhi, const float* v, int64_t vs, float inv, float* o) {
  __m256 acc[NV];
  for (int u = 0; u < NV; u++) acc[u] = _mm256_setzero_ps();
  for (int j = jlo; j < jhi; j++) {
    const __m256 pj = _mm256_set1_ps(p[j]);
    const float* vr = v + static_cast<int64_t>(j) * vs;
    for (int u = 0; u < NV; u++) acc[u] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vr + 8 * u), acc[u]);
  }
  for (int u = 0; u < NV; u++) _mm256_storeu_ps(o + 8 * u, _mm256_mul_ps(acc[u], _mm256_set1_ps(inv)));
}

struct Task {
  int seq, kv_head, q0, q1;  // queries [q0, q1) relative to the sequence start
};

}  // namespace

void attention(const AttentionArgs& a, ThreadPool& pool) {
  const int group = a.n_heads / a.n_kv_heads;
  const int d = a.d_head;
  std::vector<Task> tasks;
  for (int s = 0; s < a.n_seqs; s++) {
    const int len = a.cu_seqlens_host[s + 1] - a.cu_seqlens_host[s];
    for (int kvh = 0; kvh < a.n_kv_heads; kvh++)
      for (int q0 = 0; q0 < len; q0 += kQueryBlock) tasks.push_back({s, kvh, q0, std::min(len, q0 + kQueryBlock)});
  }
  const int64_t qs = a.q.cols, ks = a.k.cols, vs = a.v.cols, os = a.out.cols;
  pool.run(static_cast<int64_t>(tasks.size()), [&](int64_t ti) {
    const Task& t = tasks[static_cast<size_t>(ti)];
    const int begin = a.cu_seqlens_host[t.seq];
    const int len = a.cu_seqlens_host[t.seq + 1] - begin;
    // Keys this block can see: [0, kend) intersected with each query's window.
    const int kend = a.causal ? t.q1 : len;
    thread_local std::vector<float> kt, scores;
    const int ld = (kend + 7) & ~7;  // padded so 8-wide loads never read past the row
    kt.assign(static_cast<size_t>(d) * ld, 0.0f);
    scores.resize(static_cast<size_t>(ld));
    for (int j = 0; j < kend; j++) {
      const float* k = a.k.ptr<const float>() + static_cast<int64_t>(begin + j) * ks + t.kv_head * d;
      for (int c = 0; c < d; c++) kt[static_cast<size_t>(c) * ld + j] = k[c];
    }
    for (int h = t.kv_head * group; h < (t.kv_head + 1) * group; h++) {
      for (int i = t.q0; i < t.q1; i++) {
        int jlo = 0, jhi = a.causal ? i + 1 : len;  // visible keys [jlo, jhi)
        if (a.window_left >= 0) jlo = std::max(jlo, i - a.window_left);
        if (a.window_right >= 0) jhi = std::min(jhi, i + a.window_right + 1);
        const float* q = a.q.ptr<const float>() + static_cast<int64_t>(begin + i) * qs + h * d;
        // scores[j] = scale * q . k_j over [jlo8, jhi) (jlo rounded down to 8 for aligned sweeps);
        // four independent 8-key accumulators keep the FMA pipes busy.
        const int jlo8 = jlo & ~7;
        const float* ktp = kt.data();
        const __m256 sc = _mm256_set1_ps(a.scale);
        int j = jlo8;
        for (; j + 32 <= jhi; j += 32) {
          __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
          for (int c = 0; c < d; c++) {
            const __m256 qc = _mm256_set1_ps(q[c]);
            const float* row = ktp + static_cast<size_t>(c) * ld + j;
            s0 = _mm256_fmadd_ps(qc, _mm256_loadu_ps(row), s0);
            s1 = _mm256_fmadd_ps(qc, _mm256_loadu_ps(row + 8), s1);
            s2 = _mm256_fmadd_ps(qc, _mm256_loadu_ps(row + 16), s2);
            s3 = _mm256_fmadd_ps(qc, _mm256_loadu_ps(row + 24), s3);
          }
          _mm256_storeu_ps(scores.data() + j, _mm256_mul_ps(s0, sc));
          _mm256_storeu_ps(scores.data() + j + 8, _mm256_mul_ps(s1, sc));
          _mm256_storeu_ps(scores.data() + j + 16, _mm256_mul_ps(s2, sc));
          _mm256_storeu_ps(scores.data() + j + 24, _mm256_mul_ps(s3, sc));
        }
        for (; j < jhi; j += 8) {
          __m256 acc = _mm256_setzero_ps();
          for (int c = 0; c < d; c++)
            acc = _mm256_fmadd_ps(_mm256_set1_ps(q[c]), _mm256_loadu_ps(ktp + static_cast<size_t>(c) * ld + j), acc);
          _mm256_storeu_ps(scores.data() + j, _mm256_mul_ps(acc, sc));
        }
        float mx = -INFINITY;
        for (int jj = jlo; jj < jhi; jj++) mx = std::max(mx, scores[static_cast<size_t>(jj)]);
        float sum = 0;
        for (int jj = jlo; jj < jhi; jj++) {
          const float e = std::exp(scores[static_cast<size_t>(jj)] - mx);
          scores[static_cast<size_t>(jj)] = e;
          sum += e;
        }
        const float inv = 1.0f / sum;
        float* o = a.out.ptr<float>() + static_cast<int64_t>(begin + i) * os + h * d;
        const float* vbase = a.v.ptr<const float>() + static_cast<int64_t>(begin) * vs + t.kv_head * d;
        // out = sum_j p_j v_j: up to 8 independent 8-wide accumulators across d per sweep over j.
        const int d8 = d & ~7;
        for (int c0 = 0; c0 < d8; c0 += 64) {
          const int nv = std::min(8, (d8 - c0) / 8);
          const float* vb = vbase + c0;
          switch (nv) {  // compile-time widths keep the accumulators in registers
            case 1: weighted_sum<1>(scores.data(), jlo, jhi, vb, vs, inv, o + c0); break;
            case 2: weighted_sum<2>(scores.data(), jlo, jhi, vb, vs, inv, o + c0); break;
            case 3: weighted_sum<3>(scores.data(), jlo, jhi, vb, vs, inv, o + c0); break;
            case 4: weighted_sum<4>(scores.data(), jlo, jhi, vb, vs, inv, o + c0); break;
            case 5: weighted_sum<5>(scores.data(), jlo, jhi, vb, vs, inv, o + c0); break;
            case 6: weighted_sum<6>(scores.data(), jlo, jhi, vb, vs, inv, o + c0); break;
            case 7: weighted_sum<7>(scores.data(), jlo, jhi, vb, vs, inv, o + c0); break;
            default: weighted_sum<8>(scores.data(), jlo, jhi, vb, vs, inv, o + c0); break;
          }
        }
        for (int c = d8; c < d; c++) {
          float acc = 0;
          for (int jj = jlo; jj < jhi; jj++) acc += scores[static_cast<size_t>(jj)] * vbase[static_cast<int64_t>(jj) * vs + c];
          o[c] = acc * inv;
        }
      }
    }
  });
}

}  // namespace embed::cpu::avx2
