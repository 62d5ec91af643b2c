// Names for the Backend interface's enums (shared by every backend and by error messages).
#include "engine/backend.h"

namespace embed {

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
