// general.architecture -> factory. Adding an architecture: one line here plus its file.
#include <cstring>

#include "engine/arch/arch_common.h"

namespace embed {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Architecture> (*factory)(const gguf::File&, WeightLoader&);
};

constexpr Entry kArchitectures[] = {
    {"bert", arch::create_bert},
    {"qwen2", arch::create_qwen2},
    {"qwen3", arch::create_qwen3},
    {"llama", arch::create_llama},
    {"gemma3", arch::create_gemma3},
    {"gemma-embedding", arch::create_gemma_embedding},
};

}  // namespace

std::vector<std::string> supported_architectures() {
  std::vector<std::string> out;
  for (const Entry& e : kArchitectures) out.emplace_back(e.name);
  return out;
}

std::unique_ptr<Architecture> create_architecture(const gguf::File& f, WeightLoader& w) {
  const std::string arch = f.get<std::string>("general.architecture");
  for (const Entry& e : kArchitectures)
    if (arch == e.name) return e.factory(f, w);
  std::string list;
  for (const Entry& e : kArchitectures) list += (list.empty() ? "" : ", ") + std::string(e.name);
  fail(ErrorKind::Unsupported, f.path() + ": architecture '" + arch + "' is not supported (supported: " + list + ")");
}

}  // namespace embed
