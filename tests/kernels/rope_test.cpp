// rope on every backend vs cpu/ref (double angles). Positions up to 32k make theta large, so the
// f32 cos/sin of the fast path may differ from double by about |theta| * eps (argument rounding
// of theta computed in double then used in f32 is exact; the table is rounded once to f32): the
// bound is |err| <= 4 eps (|x0| + |x1|) per output, independent of theta.
#include "cpu/ref/ref.h"
#include "tests/kernels/harness.h"

using namespace embed;
using namespace embed::test;

TEST_CASE("rope NORM and NEOX match the reference", "[kernels][rope]") {
  for (RopeMode mode : {RopeMode::Norm, RopeMode::Neox})
    for (auto [n_heads, d_head, n_rot] : {std::tuple{1, 2, 2}, {4, 64, 64}, {2, 128, 64}, {3, 32, 16}, {4, 256, 256}}) {
      const std::vector<int32_t> pos = {0, 1, 2, 7, 100, 511, 512, 4095, 32767, 3};
      const int64_t n = static_cast<int64_t>(pos.size()), cols = int64_t{n_heads} * d_head;
      std::vector<float> x = random_floats(static_cast<uint32_t>(d_head + n_rot), static_cast<size_t>(n * cols));
      std::vector<float> want = x;
      RopeArgs ra;
      ra.x = host_tensor(want, n, cols);
      ra.positions = pos.data();
      ra.n_heads = n_heads;
      ra.d_head = d_head;
      ra.n_rot = n_rot;
      ra.mode = mode;
      ra.freq_base = 1e6f;
      ra.freq_scale = 0.5f;
      cpu::ref::rope(ra);
      for (auto& bt : backends_under_test()) {
        DeviceArena arena(*bt.backend);
        RopeArgs a = ra;
        a.x = arena.upload(host_tensor(x, n, cols));
        a.positions = arena.upload_ints(pos);
        bt.backend->rope(a);
        const std::vector<float> got = arena.download(a.x);
        expect_close(got, want, 8 * kF32Eps, 0, bt.name + (mode == RopeMode::Norm ? " rope norm" : " rope neox"), cols);
      }
    }
}
