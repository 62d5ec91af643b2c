// Reader of the PyTorch files FlagEmbedding saves its BGE-M3 heads in (colbert_linear.pt,
// sparse_linear.pt): torch.save of a state dict, a zip archive holding `<name>/data.pkl` (a pickle
// of an OrderedDict of torch._utils._rebuild_tensor_v2 calls) and one raw little-endian storage per
// tensor in `<name>/data/<key>`. Only that shape is read: the pickle is interpreted by a small
// stack machine that knows the opcodes torch.save emits and builds no Python object, so a file
// that asks for anything else (another callable, a compressed entry, a strided view) is refused
// with a message naming what it asked for, never executed or guessed at.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace embed::convert {

struct TorchTensor {
  std::string name;             // state-dict key ("weight", "bias")
  std::vector<int64_t> shape;   // PyTorch order (rows first)
  std::vector<float> values;    // row-major, decoded from float32 / float16 / bfloat16
};

// The tensors of a state dict in file order. `what` names the file in messages. Throws
// embed::Error(Format) for anything malformed or outside the shape above, (Unsupported) for a
// valid file this reader does not handle (compressed entries, other dtypes).
std::vector<TorchTensor> read_torch_state_dict(const std::vector<uint8_t>& bytes, const std::string& what);
std::vector<TorchTensor> read_torch_state_dict_file(const std::string& path);

}  // namespace embed::convert
