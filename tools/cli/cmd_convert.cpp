// `embed convert HF_DIR|ORG/NAME out.gguf --type f32|f16|bf16|q8_0`: a thin layer over
// tools/convert/convert.h (a Hub name through source/model_source.h) that prints what was written.
#include <cstdio>

#include "base/error.h"
#include "tools/cli/commands.h"
#include "tools/convert/convert.h"

namespace embed::cli {

int run_convert(const ConvertOptions& o) {
  const auto type = convert::out_type_from_name(o.type);
  if (!type) {
    std::fprintf(stderr, "embed: error: --type '%s' is not one of f32, f16, bf16, q8_0\n", o.type.c_str());
    return kExitUsage;
  }
  // A Hub name is downloaded first (its snapshot folder converts like any other).
  const ModelLocation loc = locate_model(o.model_dir);
  if (loc.kind != ModelLocation::Kind::HfFolder)
    fail(ErrorKind::InvalidArgument, o.model_dir + " is a file; embed convert reads an HF / sentence-transformers folder (or a Hub repository of one)");
  convert::ConvertOptions c;
  c.model_dir = loc.path;
  c.out_path = o.out_path;
  c.type = *type;
  // general.name of a Hub repository: its NAME (the default, the folder's name, is a commit id).
  c.name = o.name.empty() && !loc.commit.empty() ? loc.name.substr(loc.name.find('/') + 1) : o.name;
  const convert::ConvertSummary s = convert::convert_hf_to_gguf(c);
  std::fprintf(stderr, "embed convert: %s (%s) -> %s: %zu tensors, %llu parameters, %s, pooling %s, tokenizer %s\n",
               o.model_dir.c_str(), s.hf_architecture.c_str(), o.out_path.c_str(), s.n_tensors,
               static_cast<unsigned long long>(s.n_params), convert::out_type_name(*type),
               s.pooling.empty() ? "(none)" : s.pooling.c_str(), s.tokenizer.empty() ? "(none)" : s.tokenizer.c_str());
  for (const std::string& note : s.notes) std::fprintf(stderr, "  note: %s\n", note.c_str());
  return kExitOk;
}

}  // namespace embed::cli
