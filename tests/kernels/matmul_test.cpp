// matmul on every backend vs cpu/ref over all weight dtypes, tail sizes, bias and accumulate.
// Tolerance from the maths: both sides decode the weights identically (the fast path decodes
// with the same decoders), so the only differences are the products' own error (0 for f32, the
// split-bf16 or bf16 bound on AMX) and f32 vs double accumulation of k products:
// |err| <= (product_rel_error + (products_per_term * k + 2) * eps_f32) * sum_p |x_p * w_p|
// (+ the rounding of the bias and y terms); plus an NMSE ceiling per backend (harness.h).
#include "cpu/cpu_backend.h"
#include "cpu/llama_cpp_rounding.h"
#include "cpu/ref/ref.h"
#include "gguf/quants.h"
#include "tests/cpuinfo_flags.h"
#include "tests/kernels/harness.h"
#include "tests/kernels/quant_data.h"

using namespace embed;
using namespace embed::test;

namespace {

// x_given: the activations (m x k) when the test chooses them; random ones otherwise.
void check_matmul(DType wt, int64_t m, int64_t n, int64_t k, bool with_bias, bool accumulate, uint32_t seed,
                  const std::vector<float>& x_given = {}) {
  std::vector<float> x = x_given.empty() ? random_floats(seed, static_cast<size_t>(m * k)) : x_given;
  std::vector<uint8_t> w = random_rows(wt, n, k, seed + 1);
  std::vector<float> bias = random_floats(seed + 2, static_cast<size_t>(n));
  std::vector<float> y0 = random_floats(seed + 3, static_cast<size_t>(m * n));
  Tensor tw{w.data(), wt, Device::Cpu, n, k};

  std::vector<float> want_exact = y0;
  MatmulArgs ra;
  ra.x = host_tensor(x, m, k);
  ra.w = tw;
  if (with_bias) ra.bias = host_tensor(bias, 1, n);
  ra.y = host_tensor(want_exact, m, n);
  ra.accumulate = accumulate;
  cpu::ref::matmul(ra);

  // Per-element tolerance: product_sum_tolerance(k, sum |x w|) + 2 eps (|bias| + |y0|) for the
  // rounding of the starting value (harness.h: exact f32 products, or the AMX split-bf16 ones).
  std::vector<float> wrow(static_cast<size_t>(k));
  std::vector<double> abs_sum(static_cast<size_t>(m * n)), extra(static_cast<size_t>(m * n));
  for (int64_t j = 0; j < n; j++) {
    gguf::dequantize_row(dtype_to_gguf(wt), w.data() + j * tw.row_bytes(), wrow.data(), k);
    for (int64_t i = 0; i < m; i++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++) s += std::fabs(x[i * k + p] * wrow[p]);
      abs_sum[i * n + j] = s;
      extra[i * n + j] = (with_bias ? std::fabs(bias[j]) : 0) + (accumulate ? std::fabs(y0[i * n + j]) : 0);
    }
  }

  // The int8 compute type's reference: the same weights times the activations rounded as
  // llama.cpp rounds them (cpu/llama_cpp_rounding.h). Its integer sums are exact; per 32-block
  // the scale, min and activation scale add at most 4 roundings, and k / 32 block terms are added:
  // |err| <= (k / 32 + 6) eps sum |x_r w|.
  const bool integer_weights = dtype_is_quantized(wt);
  std::vector<float> want_int8 = y0, xr(x.size()), abs_sum_int8(static_cast<size_t>(m * n));
  if (integer_weights) {
    for (int64_t i = 0; i < m; i++) cpu::llama_cpp_round_activations(wt, x.data() + i * k, k, xr.data() + i * k);
    MatmulArgs r8 = ra;
    r8.x = host_tensor(xr, m, k);
    r8.y = host_tensor(want_int8, m, n);
    cpu::ref::matmul(r8);
    for (int64_t j = 0; j < n; j++) {
      gguf::dequantize_row(dtype_to_gguf(wt), w.data() + j * tw.row_bytes(), wrow.data(), k);
      for (int64_t i = 0; i < m; i++) {
        double s = 0;
        for (int64_t p = 0; p < k; p++) s += std::fabs(xr[i * k + p] * wrow[p]);
        abs_sum_int8[i * n + j] = static_cast<float>(s);
      }
    }
  }

  for (auto& bt : backends_under_test()) {
    const bool int8 = bt.quantizes_activations && integer_weights;
    const std::vector<float>& want = int8 ? want_int8 : want_exact;
    DeviceArena arena(*bt.backend);
    MatmulArgs a;
    a.x = arena.upload(ra.x);
    a.w = bt.backend->load_weight(tw, WeightUse::Matmul);
    if (with_bias) a.bias = arena.upload(ra.bias);
    a.y = accumulate ? arena.upload(host_tensor(y0, m, n)) : arena.poisoned(DType::F32, m, n);
    a.accumulate = accumulate;
    bt.backend->matmul(a);
    const std::vector<float> got = arena.download(a.y);
    bt.backend->release_weight(a.w);
    const std::string what = bt.name + " matmul " + dtype_name(wt) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
                             " k=" + std::to_string(k) + " bias=" + std::to_string(with_bias) + " acc=" + std::to_string(accumulate);
    for (size_t i = 0; i < got.size(); i++) {
      const double products = int8 ? (k / 32.0 + 6) * kF32Eps * abs_sum_int8[i] : product_sum_tolerance(bt, k, abs_sum[i]);
      const double tol = products + 2 * kF32Eps * extra[i] + 1e-30;
      if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol))
        FAIL(what << ": element (" << i / n << ", " << i % n << ") got " << got[i] << " want " << want[i] << " tol " << tol);
    }
    // The products alone (without the starting value, which every path adds exactly once).
    std::vector<float> got_products(got.size()), want_products(want.size());
    for (size_t i = 0; i < got.size(); i++) {
      const double start = (with_bias ? bias[i % n] : 0) + (accumulate ? y0[i] : 0);
      got_products[i] = static_cast<float>(got[i] - start);
      want_products[i] = static_cast<float>(want[i] - start);
    }
    if (got.size() >= 64) {  // a statistic: too few elements say nothing (one may be a cancellation)
      const Mismatch mm = compare(got_products, want_products);
      INFO(what << ": NMSE " << mm.nmse << " (ceiling " << bt.nmse_ceiling << ")");
      CHECK(mm.nmse <= bt.nmse_ceiling);
    }
  }
}

}  // namespace

TEST_CASE("matmul matches the reference for every weight type and tail shape", "[kernels][matmul]") {
  uint32_t seed = 100;
  for (DType wt : kAllWeightTypes) {
    const int64_t be = dtype_block_elems(wt);
    const std::vector<int64_t> ks = be == 256 ? std::vector<int64_t>{256, 512, 768} : std::vector<int64_t>{32, 96, 288, 320};
    for (int64_t k : ks)
      for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {5, 17}, {6, 16}, {7, 33}, {13, 40}, {64, 70}}) {
        INFO("dtype " << dtype_name(wt) << " m=" << m << " n=" << n << " k=" << k);
        check_matmul(wt, m, n, k, (m + n) % 2 == 0, m == 7, seed++);
      }
  }
}

TEST_CASE("int8 activation quantization: zero blocks, negative maxima and ties as llama.cpp rounds them", "[kernels][matmul]") {
  // The AMX int8 level quantizes activations itself (16 lanes); its values must be the scalar
  // llama.cpp-style quantizers' (the reference here) in the corner cases of their rules: an all-zero
  // block (scale 0), a block whose largest magnitude is negative (Q8_K takes the sign of the first
  // maximal element), +-max ties in either order, and tiny magnitudes.
  const int64_t k = 512, m = 6;
  std::vector<float> x = random_floats(7, static_cast<size_t>(m * k));
  auto row = [&](int64_t r) { return x.begin() + r * k; };
  std::fill(row(0), row(1), 0.0f);                        // row 0: all zero
  std::fill(row(1), row(1) + 256, 0.0f);                  // row 1: first Q8_K block zero, so every Q8_0 block in it too
  for (int64_t p = 0; p < k; p++) row(2)[p] = -std::fabs(row(2)[p]) - 0.5f;  // row 2: all negative
  row(3)[5] = -4.0f, row(3)[77] = 4.0f, row(3)[300] = 4.0f, row(3)[301] = -4.0f;  // row 3: ties, both orders
  for (int64_t p = 0; p < k; p++) row(4)[p] *= 1e-30f;    // row 4: tiny magnitudes
  row(5)[31] = -100.0f, row(5)[256] = 100.0f;             // row 5: one outlier per block boundary
  for (DType wt : {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K}) {
    INFO("dtype " << dtype_name(wt));
    check_matmul(wt, m, 24, k, false, false, 40, x);
  }
}

TEST_CASE("matmul with unquantized weights handles k not a multiple of 8", "[kernels][matmul]") {
  for (DType wt : {DType::F32, DType::F16, DType::BF16})
    for (int64_t k : {1, 3, 17, 257, 515}) check_matmul(wt, 9, 19, k, true, true, static_cast<uint32_t>(k));
}

TEST_CASE("matmul rows do not depend on the other rows of the batch", "[kernels][matmul][invariance]") {
  // Batch invariance at the kernel level: row r computed in a batch of 1 and of 37 is bit-identical.
  // Float and block-quantized weights (the int8 compute type quantizes each row on its own).
  const int64_t k = 512, n = 100;
  std::vector<float> x = random_floats(7, static_cast<size_t>(37 * k));
  for (DType wt : {DType::F16, DType::Q8_0, DType::Q4_K})
  for (auto& bt : backends_under_test()) {
    std::vector<uint8_t> w = random_rows(wt, n, k, 8);
    Tensor tw{w.data(), wt, Device::Cpu, n, k};
    DeviceArena arena(*bt.backend);
    MatmulArgs all;
    all.x = arena.upload(host_tensor(x, 37, k));
    all.w = bt.backend->load_weight(tw, WeightUse::Matmul);
    all.y = arena.poisoned(DType::F32, 37, n);
    bt.backend->matmul(all);
    const std::vector<float> batched = arena.download(all.y);
    for (int64_t r : {0, 5, 6, 36}) {
      std::vector<float> xr(x.begin() + r * k, x.begin() + (r + 1) * k);
      MatmulArgs one = all;
      one.x = arena.upload(host_tensor(xr, 1, k));
      one.y = arena.poisoned(DType::F32, 1, n);
      bt.backend->matmul(one);
      const std::vector<float> alone = arena.download(one.y);
      INFO(bt.name << " " << dtype_name(wt) << " row " << r);
      CHECK(std::memcmp(alone.data(), batched.data() + r * n, static_cast<size_t>(n) * 4) == 0);
    }
    bt.backend->release_weight(all.w);
  }
}

TEST_CASE("the int8 compute type gives the same bits on AMX and on AVX-512 VNNI", "[kernels][matmul]") {
  // Both levels compute the same exact integer sums and run the same epilogue (cpu/int8_blocks.h).
  // CPU backends made here, not backends_under_test(): the CUDA test executables build this file too.
  const bool amx = cpuinfo_supports(CpuIsa::Amx);
  const bool vnni = cpuinfo_supports(CpuIsa::Avx512) && cpuinfo_has("avx512bw") && cpuinfo_has("avx512_vnni");
  if (!(amx && vnni)) {  // a machine without AMX or without VNNI has nothing to compare
    CHECK_FALSE((amx && vnni));
    return;
  }
  std::vector<std::unique_ptr<Backend>> levels;
  for (CpuIsa isa : {CpuIsa::Amx, CpuIsa::Avx512}) {
    BackendOptions o;
    o.threads = 2;
    o.cpu_isa = isa;
    o.compute_type = ComputeType::Int8;
    levels.push_back(cpu::create_cpu_backend(o));
  }
  const int64_t m = 45, n = 70, k = 768;
  std::vector<float> x = random_floats(11, static_cast<size_t>(m * k)), bias = random_floats(12, static_cast<size_t>(n));
  for (DType wt : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    std::vector<uint8_t> w = random_rows(wt, n, k, 13);
    Tensor tw{w.data(), wt, Device::Cpu, n, k};
    std::vector<std::vector<float>> got;
    for (auto& backend : levels) {
      DeviceArena arena(*backend);
      MatmulArgs a;
      a.x = arena.upload(host_tensor(x, m, k));
      a.w = backend->load_weight(tw, WeightUse::Matmul);
      a.bias = arena.upload(host_tensor(bias, 1, n));
      a.y = arena.poisoned(DType::F32, m, n);
      backend->matmul(a);
      got.push_back(arena.download(a.y));
      backend->release_weight(a.w);
    }
    INFO(dtype_name(wt));
    CHECK(std::memcmp(got[0].data(), got[1].data(), got[0].size() * 4) == 0);
  }
}

TEST_CASE("the int8 compute type is the documented block epilogue of exact integer sums, bit for bit", "[kernels][matmul]") {
  // docs/kernels.md and cpu/int8_blocks.h: per row the activations are quantized as llama.cpp
  // quantizes them (Q8_0, or Q8_K for the K-quants), the weights are their integer form (value =
  // scale * q - min per group), and per 32-block and group the exact integer sum S = sum qx * q
  // enters the f32 accumulator in k order: acc = fma(float(S), scale * dx, acc) when no group of
  // the matrix has a min, else acc = fma(fma(scale, float(S), -(min * sum qx)), dx, acc); the
  // output is bias + acc. Written out here in scalar code, independently of the kernels' layouts,
  // and every int8 backend must give these bits (AMX tdpbssd and AVX-512 VNNI alike).
  // CPU backends made here, not backends_under_test(): the CUDA test executables build this file too.
  std::vector<std::pair<std::string, std::unique_ptr<Backend>>> levels;
  const bool amx = cpuinfo_supports(CpuIsa::Amx);
  const bool vnni = cpuinfo_supports(CpuIsa::Avx512) && cpuinfo_has("avx512bw") && cpuinfo_has("avx512_vnni");
  for (auto [isa, available] : {std::pair<CpuIsa, bool>{CpuIsa::Amx, amx}, {CpuIsa::Avx512, vnni}}) {
    if (!available) continue;
    BackendOptions o;
    o.threads = 2;
    o.cpu_isa = isa;
    o.compute_type = ComputeType::Int8;
    levels.emplace_back(std::string("cpu-") + cpu_isa_name(isa) + "-int8", cpu::create_cpu_backend(o));
  }
  if (levels.empty()) {  // a CPU with neither VNNI nor AMX has no int8 level to hold to it
    CHECK_FALSE((amx || vnni));
    return;
  }
  const int64_t m = 21, n = 37, k = 512;
  std::vector<float> x = random_floats(41, static_cast<size_t>(m * k), -3.0f, 3.0f), bias = random_floats(42, static_cast<size_t>(n));
  for (int64_t i = 0; i < k; i++) x[static_cast<size_t>(3 * k + i)] = 0.0f;  // a zero row: dx = 0
  for (DType wt : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    std::vector<uint8_t> w = random_rows(wt, n, k, 43);
    Tensor tw{w.data(), wt, Device::Cpu, n, k};
    const gguf::TensorType gt = dtype_to_gguf(wt);
    const int group = gguf::integer_group(gt);
    const bool q8_k = wt == DType::Q4_K || wt == DType::Q5_K || wt == DType::Q6_K;
    std::vector<int8_t> q(static_cast<size_t>(n * k)), qx(static_cast<size_t>(m * k));
    std::vector<float> scale(static_cast<size_t>(n * k / group)), min(scale.size()), d(static_cast<size_t>(m * k / 32));
    for (int64_t j = 0; j < n; j++)
      gguf::integer_row(gt, w.data() + j * tw.row_bytes(), k, q.data() + j * k, scale.data() + j * k / group, min.data() + j * k / group);
    const bool has_min = std::any_of(min.begin(), min.end(), [](float v) { return v != 0.0f; });
    for (int64_t i = 0; i < m; i++) {
      if (q8_k) cpu::quantize_q8_k(x.data() + i * k, k, qx.data() + i * k, d.data() + i * k / 32);
      else cpu::quantize_q8_0(x.data() + i * k, k, qx.data() + i * k, d.data() + i * k / 32);
    }
    std::vector<float> want(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        float acc = 0.0f;
        for (int64_t kb = 0; kb < k / 32; kb++) {
          const float dx = q8_k ? d[static_cast<size_t>(i * k / 32 + kb / 8)] : d[static_cast<size_t>(i * k / 32 + kb)];
          for (int64_t g0 = kb * 32; g0 < (kb + 1) * 32; g0 += group) {
            int32_t sum = 0, qsum = 0;
            for (int64_t e = g0; e < g0 + group; e++) {
              sum += int32_t{qx[static_cast<size_t>(i * k + e)]} * q[static_cast<size_t>(j * k + e)];
              qsum += qx[static_cast<size_t>(i * k + e)];
            }
            const float sc = scale[static_cast<size_t>((j * k + g0) / group)], mn = min[static_cast<size_t>((j * k + g0) / group)];
            if (has_min) {
              const float min_term = mn * static_cast<float>(qsum);
              acc = std::fma(std::fma(sc, static_cast<float>(sum), -min_term), dx, acc);
            } else {
              const float sd = sc * dx;
              acc = std::fma(static_cast<float>(sum), sd, acc);
            }
          }
        }
        want[static_cast<size_t>(i * n + j)] = bias[static_cast<size_t>(j)] + acc;
      }
    for (auto& [name, backend] : levels) {
      DeviceArena arena(*backend);
      MatmulArgs a;
      a.x = arena.upload(host_tensor(x, m, k));
      a.w = backend->load_weight(tw, WeightUse::Matmul);
      a.bias = arena.upload(host_tensor(bias, 1, n));
      a.y = arena.poisoned(DType::F32, m, n);
      backend->matmul(a);
      const std::vector<float> got = arena.download(a.y);
      backend->release_weight(a.w);
      INFO(name << " " << dtype_name(wt));
      size_t first_diff = got.size();
      for (size_t e = 0; e < got.size() && first_diff == got.size(); e++)
        if (std::memcmp(&got[e], &want[e], 4) != 0) first_diff = e;
      INFO("first differing element " << first_diff << (first_diff < got.size() ? ": got " + std::to_string(got[first_diff]) + " want " + std::to_string(want[first_diff]) : std::string()));
      CHECK(first_diff == got.size());
    }
  }
}

TEST_CASE("matmul with a fused activation equals the matmul followed by the activation op", "[kernels][matmul]") {
  // Bit for bit on every backend: a backend that fuses the activation into its GEMM epilogue must
  // compute exactly what its activation op computes on the stored output. Odd shapes cover the
  // masked tile edges.
  // k = 96: one k-block; 320: two, so the activation follows the last block's sums. Q8_0 weights
  // take the decoded (per call) path of the AVX levels.
  const int64_t m = 37, n = 70;
  for (auto [wt, k] : {std::pair<DType, int64_t>{DType::F16, 96}, {DType::F16, 320}, {DType::Q8_0, 320}})
  for (Activation act : {Activation::GeluErf, Activation::GeluTanh, Activation::Silu, Activation::Relu}) {
    std::vector<float> x = random_floats(21, static_cast<size_t>(m * k), -2.0f, 2.0f);
    std::vector<uint8_t> w = random_rows(wt, n, k, 22);
    std::vector<float> bias = random_floats(23, static_cast<size_t>(n));
    Tensor tw{w.data(), wt, Device::Cpu, n, k};
    for (auto& bt : backends_under_test()) {
      DeviceArena arena(*bt.backend);
      MatmulArgs a;
      a.x = arena.upload(host_tensor(x, m, k));
      a.w = bt.backend->load_weight(tw, WeightUse::Matmul);
      a.bias = arena.upload(host_tensor(bias, 1, n));
      a.y = arena.poisoned(DType::F32, m, n);
      bt.backend->matmul(a);
      bt.backend->activation(ActivationArgs{a.y, a.y, act});
      const std::vector<float> separate = arena.download(a.y);
      a.y = arena.poisoned(DType::F32, m, n);
      a.activation = act;
      bt.backend->matmul(a);
      const std::vector<float> fused = arena.download(a.y);
      bt.backend->release_weight(a.w);
      INFO(bt.name << " " << dtype_name(wt) << " k=" << k << " activation " << static_cast<int>(act));
      CHECK(std::memcmp(fused.data(), separate.data(), separate.size() * 4) == 0);
    }
  }
}

TEST_CASE("matmul reads and writes rows at any offset", "[kernels][matmul]") {
  // Row-offset views (the workspace hands out slices): x, bias and y starting 1, 3 or 5 floats into
  // their buffers give the same bits as aligned ones (accumulate covers reading y back).
  const int64_t m = 23, n = 40, k = 96;
  std::vector<float> x = random_floats(31, static_cast<size_t>(m * k)), bias = random_floats(32, static_cast<size_t>(n));
  std::vector<float> y0 = random_floats(33, static_cast<size_t>(m * n));
  std::vector<uint8_t> w = random_rows(DType::F16, n, k, 34);
  Tensor tw{w.data(), DType::F16, Device::Cpu, n, k};
  for (auto& bt : backends_under_test()) {
    const Tensor pw = bt.backend->load_weight(tw, WeightUse::Matmul);
    auto run = [&](int64_t offset) {
      DeviceArena arena(*bt.backend);
      MatmulArgs a;
      a.x = arena.upload_offset(host_tensor(x, m, k), offset);
      a.w = pw;
      a.bias = arena.upload_offset(host_tensor(bias, 1, n), offset);
      a.y = arena.upload_offset(host_tensor(y0, m, n), offset);
      a.accumulate = true;
      bt.backend->matmul(a);
      return arena.download(a.y);
    };
    const std::vector<float> aligned = run(0);
    for (int64_t offset : {1, 3, 5}) {
      INFO(bt.name << " offset " << offset);
      CHECK(std::memcmp(run(offset).data(), aligned.data(), aligned.size() * 4) == 0);
    }
    bt.backend->release_weight(pw);
  }
}

TEST_CASE("the avx2 and avx512 matmuls give the same bits", "[kernels][matmul]") {
  // docs/kernels.md: both levels sum each output's products in k order per 256-deep k-block and add
  // the blocks to the starting value in order, whatever their register tiles (6 x 16 and 12 x 32)
  // and whether 16-bit panels are widened at load or per call. Tails in m, n and k, bias,
  // accumulate and a fused activation; float weights (packed at load) and quantized ones (decoded).
  BackendOptions o;
  o.threads = 2;
  o.cpu_isa = CpuIsa::Avx512;
  if (!cpuinfo_supports(CpuIsa::Avx512)) {
    CHECK_THROWS_WITH(cpu::create_cpu_backend(o), Catch::Contains("cannot run here"));
    return;
  }
  auto fast = cpu::create_cpu_backend(o);
  o.cpu_isa = CpuIsa::Avx2;
  auto base = cpu::create_cpu_backend(o);
  struct Shape {
    int64_t m, n, k;
  };
  uint32_t seed = 300;
  for (DType wt : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K})
    for (Shape s : {Shape{1, 33, 256}, Shape{13, 70, 512}, Shape{61, 100, 768}, Shape{24, 16, 1536}}) {
      std::vector<float> x = random_floats(seed++, static_cast<size_t>(s.m * s.k));
      std::vector<uint8_t> w = random_rows(wt, s.n, s.k, seed++);
      std::vector<float> bias = random_floats(seed++, static_cast<size_t>(s.n));
      std::vector<float> y0 = random_floats(seed++, static_cast<size_t>(s.m * s.n));
      Tensor tw{w.data(), wt, Device::Cpu, s.n, s.k};
      for (int variant = 0; variant < 3; variant++) {  // bias; bias + accumulate; bias + GELU
        std::vector<float> got[2];
        int at = 0;
        for (Backend* b : {fast.get(), base.get()}) {
          got[at] = y0;
          MatmulArgs a;
          a.x = host_tensor(x, s.m, s.k);
          a.w = b->load_weight(tw, WeightUse::Matmul);
          a.bias = host_tensor(bias, 1, s.n);
          a.y = host_tensor(got[at], s.m, s.n);
          a.accumulate = variant == 1;
          if (variant == 2) a.activation = Activation::GeluErf;
          b->matmul(a);
          b->release_weight(a.w);
          at++;
        }
        INFO(dtype_name(wt) << " m=" << s.m << " n=" << s.n << " k=" << s.k << " variant " << variant);
        CHECK(std::memcmp(got[0].data(), got[1].data(), got[0].size() * 4) == 0);
      }
    }
}
