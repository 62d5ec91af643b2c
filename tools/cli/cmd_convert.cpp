// `embed convert HF_DIR out.gguf --type f32|f16|bf16|q8_0`: a thin layer over
// tools/convert/convert.h that prints what was written.
#include <cstdio>

#include "tools/cli/commands.h"
#include "tools/convert/convert.h"

namespace embed::cli {

int run_convert(const ConvertOptions& o) {
  const auto type = convert::out_type_from_name(o.type);
  if (!type) {
    std::fprintf(stderr, "embed: error: --type '%s' is not one of f32, f16, bf16, q8_0\n", o.type.c_str());
    return kExitUsage;
  }
  convert::ConvertOptions c;
  c.model_dir = o.model_dir;
  c.out_path = o.out_path;
  c.type = *type;
  c.name = o.name;
  const convert::ConvertSummary s = convert::convert_hf_to_gguf(c);
  std::fprintf(stderr, "embed convert: %s (%s) -> %s: %zu tensors, %llu parameters, %s, pooling %s, tokenizer %s\n",
               o.model_dir.c_str(), s.hf_architecture.c_str(), o.out_path.c_str(), s.n_tensors,
               static_cast<unsigned long long>(s.n_params), convert::out_type_name(*type),
               s.pooling.empty() ? "(none)" : s.pooling.c_str(), s.tokenizer.empty() ? "(none)" : s.tokenizer.c_str());
  for (const std::string& note : s.notes) std::fprintf(stderr, "  note: %s\n", note.c_str());
  return kExitOk;
}

}  // namespace embed::cli
