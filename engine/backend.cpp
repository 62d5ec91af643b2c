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

}  // namespace embed
