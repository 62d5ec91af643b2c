// gather on every backend vs cpu/ref: every table dtype, scale, accumulate. Decoding is exact
// in both (same decoders / exact f16 conversion), so the tolerance is the one rounding of the
// scale product and of the accumulation: 2 eps (|init| + |scale * row|).
#include "cpu/ref/ref.h"
#include "tests/kernels/harness.h"
#include "tests/kernels/quant_data.h"

using namespace embed;
using namespace embed::test;

TEST_CASE("gather matches the reference for every table type", "[kernels][gather]") {
  uint32_t seed = 1;
  for (DType t : kAllWeightTypes) {
    const int64_t be = dtype_block_elems(t);
    const int64_t d = be == 256 ? 512 : (be == 32 ? 96 : 37);
    const int64_t vocab = 50;
    std::vector<uint8_t> table = random_rows(t, vocab, d, seed++);
    Tensor tt{table.data(), t, Device::Cpu, vocab, d};
    const std::vector<int32_t> ids = {0, 49, 7, 7, 13, 0, 21, 48, 1, 33, 2, 5, 6, 8, 9, 10, 11, 12, 14, 15};
    const int64_t n = static_cast<int64_t>(ids.size());
    for (bool accumulate : {false, true})
      for (float scale : {1.0f, 0.5f, 3.1f}) {
        std::vector<float> init = random_floats(seed++, static_cast<size_t>(n * d));
        std::vector<float> want = init;
        GatherArgs ra;
        ra.table = tt;
        ra.ids = ids.data();
        ra.n_tokens = n;
        ra.out = host_tensor(want, n, d);
        ra.scale = scale;
        ra.accumulate = accumulate;
        cpu::ref::gather(ra);
        for (auto& bt : backends_under_test()) {
          if (!bt.backend->supports(Op::Gather, t)) continue;
          DeviceArena arena(*bt.backend);
          GatherArgs a = ra;
          a.table = bt.backend->load_weight(tt, WeightUse::Gather);
          a.ids = arena.upload_ints(ids);
          a.out = accumulate ? arena.upload(host_tensor(init, n, d)) : arena.poisoned(DType::F32, n, d);
          bt.backend->gather(a);
          // One rounding of scale*row and one of the sum: 2 eps (|init| + |scale * row|) per element.
          const std::vector<float> got = arena.download(a.out);
          for (size_t i = 0; i < got.size(); i++) {
            const double prev = accumulate ? std::fabs(init[i]) : 0.0;
            const double tol = 2 * kF32Eps * (prev + std::fabs(static_cast<double>(want[i]) - (accumulate ? init[i] : 0.0))) + 1e-30;
            if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol))
              FAIL(bt.name << " gather " << dtype_name(t) << " element " << i << " got " << got[i] << " want " << want[i]);
          }
          bt.backend->release_weight(a.table);
        }
      }
  }
}
