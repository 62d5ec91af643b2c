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
        // scores[j] = scale * q . k_j for j in [jlo8, jhi) (jlo rounded down to 8 for aligned sweeps)
        const int jlo8 = jlo & ~7;
        for (int j = jlo8; j < jhi; j += 8) {
          __m256 acc = _mm256_setzero_ps();
          for (int c = 0; c < d; c++)
            acc = _mm256_fmadd_ps(_mm256_set1_ps(q[c]), _mm256_loadu_ps(kt.data() + static_cast<size_t>(c) * ld + j), acc);
          _mm256_storeu_ps(scores.data() + j, _mm256_mul_ps(acc, _mm256_set1_ps(a.scale)));
        }
        float mx = -INFINITY;
        for (int j = jlo; j < jhi; j++) mx = std::max(mx, scores[static_cast<size_t>(j)]);
        float sum = 0;
        for (int j = jlo; j < jhi; j++) {
          const float e = std::exp(scores[static_cast<size_t>(j)] - mx);
          scores[static_cast<size_t>(j)] = e;
          sum += e;
        }
        const float inv = 1.0f / sum;
        float* o = a.out.ptr<float>() + static_cast<int64_t>(begin + i) * os + h * d;
        int c = 0;
        for (; c + 8 <= d; c += 8) {
          __m256 acc = _mm256_setzero_ps();
          for (int j = jlo; j < jhi; j++)
            acc = _mm256_fmadd_ps(_mm256_set1_ps(scores[static_cast<size_t>(j)]),
                                  _mm256_loadu_ps(a.v.ptr<const float>() + static_cast<int64_t>(begin + j) * vs + t.kv_head * d + c), acc);
          _mm256_storeu_ps(o + c, _mm256_mul_ps(acc, _mm256_set1_ps(inv)));
        }
        for (; c < d; c++) {
          float acc = 0;
          for (int j = jlo; j < jhi; j++)
            acc += scores[static_cast<size_t>(j)] * a.v.ptr<const float>()[static_cast<int64_t>(begin + j) * vs + t.kv_head * d + c];
          o[c] = acc * inv;
        }
      }
    }
  });
}

}  // namespace embed::cpu::avx2
