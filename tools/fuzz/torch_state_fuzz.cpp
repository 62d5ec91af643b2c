// libFuzzer entry for the torch.save state-dict reader (tools/convert/torch_state.h, BGE-M3's
// sparse_linear.pt / colbert_linear.pt): arbitrary bytes are either refused with embed::Error or
// give tensors whose values fill their shapes. Owns no logic.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/error.h"
#include "tools/convert/torch_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  try {
    for (const embed::convert::TorchTensor& t : embed::convert::read_torch_state_dict(bytes, "<fuzz>")) {
      size_t n = 1;
      for (int64_t d : t.shape) n *= static_cast<size_t>(d);
      if (n != t.values.size()) {
        std::fprintf(stderr, "torch_state_fuzz: '%s' has %zu values for its shape's %zu\n", t.name.c_str(), t.values.size(), n);
        std::abort();
      }
    }
  } catch (const embed::Error&) {
  }
  return 0;
}
