// Names for the Backend interface's enums (shared by every backend and by error messages), and
// the default device-to-device copy.
#include "engine/backend.h"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

namespace embed {

void Backend::copy(void* dst, const void* src, size_t bytes) {
  std::vector<unsigned char> host(bytes);
  download(host.data(), src, bytes);
  upload(dst, host.data(), bytes);
}

RelativeBuckets relative_buckets(int n_buckets, int max_distance) {
  const int half = n_buckets / 2, exact = half / 2;
  if (n_buckets < 4 || n_buckets % 2 != 0 || half - exact > RelativeBuckets::kMaxFar || max_distance <= exact ||
      max_distance > (1 << 24))
    fail(ErrorKind::Format, "relative position buckets: " + std::to_string(n_buckets) + " buckets with max distance " +
                                std::to_string(max_distance) + " (want an even count 4.." +
                                std::to_string(4 * RelativeBuckets::kMaxFar) + " and a distance above a quarter of it)");
  RelativeBuckets rb;
  rb.half = half;
  rb.exact = exact;
  // HF: exact + long(log(n.float() / exact) / math.log(max_distance / exact) * (half - exact)),
  // capped at half - 1; every operation in f32 (the tensor's type), the Python double rounded to f32.
  const float log_span = static_cast<float>(std::log(static_cast<double>(max_distance) / exact));
  auto far_bucket = [&](int n) {
    const float t = std::log(static_cast<float>(n) / static_cast<float>(exact)) / log_span * static_cast<float>(half - exact);
    return std::min(exact + static_cast<int>(t), half - 1) - exact;
  };
  std::fill(std::begin(rb.far_start), std::end(rb.far_start), INT_MAX);
  rb.far_start[0] = exact;
  int next = 1;  // the first far bucket whose start is not known yet
  // The formula reaches half - 1 at max_distance; twice that covers f32 rounding.
  for (int n = exact; n <= 2 * max_distance && next < half - exact; n++)
    for (const int b = far_bucket(n); next <= b; next++) rb.far_start[next] = n;
  return rb;
}

const char* op_name(Op op) {
  switch (op) {
    case Op::Gather: return "gather";
    case Op::Matmul: return "matmul";
    case Op::LayerNorm: return "layer_norm";
    case Op::RmsNorm: return "rms_norm";
    case Op::Rope: return "rope";
    case Op::Attention: return "attention";
    case Op::Activation: return "activation";
    case Op::Glu: return "glu";
    case Op::Add: return "add";
    case Op::Scale: return "scale";
    case Op::Pool: return "pool";
    case Op::Softmax: return "softmax";
  }
  return "?";
}

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Auto: return "auto";
    case CpuIsa::Scalar: return "scalar";
    case CpuIsa::Avx2: return "avx2";
    case CpuIsa::Avx512: return "avx512";
    case CpuIsa::Amx: return "amx";
  }
  return "?";
}

const char* compute_type_name(ComputeType t) {
  switch (t) {
    case ComputeType::F32: return "f32";
    case ComputeType::BF16: return "bf16";
    case ComputeType::Int8: return "int8";
  }
  return "?";
}

}  // namespace embed
