// The AVX2 row decoders (cpu/decode_avx2.cpp) against the scalar gguf decoders: bit-identical
// for every weight type, at block offsets inside a row (as the matmul packing asks for them).
#include <cstring>

#include "cpu/isa.h"
#include "cpu/kernels.h"
#include "gguf/quants.h"
#include "tests/kernels/harness.h"
#include "tests/kernels/quant_data.h"

using namespace embed;
using namespace embed::test;

TEST_CASE("AVX2 row decoders are bit-identical to the scalar decoders", "[kernels][decode]") {
  if (!cpu::isa_available(CpuIsa::Avx2)) {
    WARN("no AVX2/FMA/F16C: nothing to compare");
    return;
  }
  uint32_t seed = 500;
  for (DType t : kAllWeightTypes) {
    const int64_t be = dtype_block_elems(t);
    const int64_t cols = be == 256 ? 1024 : 320, rows = 5;
    std::vector<uint8_t> w = random_rows(t, rows, cols, seed++);
    const size_t rb = dtype_row_bytes(t, cols);
    for (int64_t r = 0; r < rows; r++) {
      std::vector<float> want(static_cast<size_t>(cols));
      gguf::dequantize_row(dtype_to_gguf(t), w.data() + r * rb, want.data(), cols);
      for (int64_t k0 : {int64_t{0}, be == 1 ? int64_t{7} : be, be == 256 ? int64_t{512} : int64_t{96}}) {
        const int64_t n = cols - k0 - (be == 1 ? 3 : 0);
        std::vector<float> got(static_cast<size_t>(n), NAN);
        cpu::avx2::decode_row_segment(t, w.data() + r * rb, k0, n, got.data());
        INFO(dtype_name(t) << " row " << r << " from " << k0);
        CHECK(std::memcmp(got.data(), want.data() + k0, static_cast<size_t>(n) * 4) == 0);
      }
    }
  }
}
