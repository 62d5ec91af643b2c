// general.architecture -> description (engine/arch/spec.h). Adding an architecture: one line in
// EMBED_ARCHITECTURES plus its file.
#include "engine/arch/arch_common.h"

// One line per architecture: its description function, defined in engine/arch/<name>.cpp.
#define EMBED_ARCHITECTURES(X) \
  X(bert_spec)                 \
  X(qwen2_spec)                \
  X(qwen3_spec)                \
  X(llama_spec)                \
  X(gemma3_spec)               \
  X(gemma_embedding_spec)      \
  X(nomic_bert_spec)           \
  X(mpnet_spec)                \
  X(t5encoder_spec)            \
  X(modern_bert_spec)          \
  X(jina_bert_v2_spec)          \
  X(gte_new_spec)

namespace embed {
namespace arch {

#define EMBED_DECLARE_SPEC(fn) const ArchSpec& fn();
EMBED_ARCHITECTURES(EMBED_DECLARE_SPEC)

const std::vector<const ArchSpec*>& architecture_specs() {
#define EMBED_LIST_SPEC(fn) &fn(),
  static const std::vector<const ArchSpec*> specs = {EMBED_ARCHITECTURES(EMBED_LIST_SPEC)};
  return specs;
}

}  // namespace arch

std::vector<std::string> supported_architectures() {
  std::vector<std::string> out;
  for (const arch::ArchSpec* s : arch::architecture_specs()) out.push_back(s->name);
  return out;
}

std::unique_ptr<Architecture> create_architecture(const gguf::File& f, WeightLoader& w) {
  const std::string name = f.get<std::string>("general.architecture");
  if (const arch::ArchSpec* s = arch::find_architecture(name)) return s->create(f, w);
  std::string list;
  for (const std::string& n : supported_architectures()) list += (list.empty() ? "" : ", ") + n;
  fail(ErrorKind::Unsupported, f.path() + ": architecture '" + name + "' is not supported (supported: " + list + ")");
}

}  // namespace embed
