// Reference token gather: decode each requested row with the gguf/ scalar decoders.
#include <vector>

#include "cpu/ref/ref.h"
#include "gguf/quants.h"

namespace embed::cpu::ref {

void gather(const GatherArgs& a) {
  const int64_t d = a.table.cols;
  std::vector<float> row(static_cast<size_t>(d));
  for (int64_t t = 0; t < a.n_tokens; t++) {
    const auto* src = static_cast<const char*>(a.table.data) + static_cast<size_t>(a.ids[t]) * a.table.row_bytes();
    gguf::dequantize_row(dtype_to_gguf(a.table.dtype), src, row.data(), d);
    float* out = a.out.ptr<float>() + t * d;
    for (int64_t i = 0; i < d; i++) {
      const float v = a.scale * row[static_cast<size_t>(i)];
      out[i] = a.accumulate ? out[i] + v : v;
    }
  }
}

}  // namespace embed::cpu::ref
