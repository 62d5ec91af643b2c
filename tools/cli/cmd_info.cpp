// `embed info model.gguf`: what a GGUF file holds (architecture, hyperparameters, tokenizer,
// special tokens, pooling, tensors, shared tensors), and which CPU kernel level this machine would
// run it with. Reads metadata only; loads no weights.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "base/error.h"
#include "cpu/isa.h"
#include "engine/api.h"
#include "engine/arch/spec.h"
#include "gguf/file.h"
#include "tools/cli/commands.h"

namespace embed::cli {
namespace {

std::string human_bytes(uint64_t b) {
  char buf[64];
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", b / double(1ull << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

// One metadata value as text; arrays are summarised (their length and first items).
std::string value_text(const gguf::MetaValue& v) {
  using gguf::ValueType;
  if (const auto* u = std::get_if<uint64_t>(&v.v)) return std::to_string(*u);
  if (const auto* i = std::get_if<int64_t>(&v.v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v.v)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", *d);
    return buf;
  }
  if (const auto* b = std::get_if<bool>(&v.v)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string_view>(&v.v)) {
    std::string t(s->substr(0, 80));
    for (char& c : t)
      if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    return "\"" + t + (s->size() > 80 ? "...\" (" + std::to_string(s->size()) + " bytes)" : "\"");
  }
  const auto& a = std::get<gguf::ArrayValue>(v.v);
  return std::string("array of ") + std::to_string(a.count) + " " + gguf::value_type_name(a.elem_type);
}

const char* pooling_name(int64_t p) {
  switch (p) {
    case 0: return "none";
    case 1: return "mean";
    case 2: return "cls";
    case 3: return "last";
    case 4: return "rank";
    default: return "unspecified";
  }
}

// Whether the architecture has an LM head that a file may leave to the token table: its weight
// table carries output.weight, or its HF checkpoints' lm_head is dropped as tied (Gemma).
// Encoders such as BERT have no head to tie.
bool has_output_head(const std::string& arch) {
  const arch::ArchSpec* spec = arch::find_architecture(arch);
  if (!spec) return false;
  return std::any_of(spec->weights.begin(), spec->weights.end(), [](const arch::WeightSpec& w) { return w.name == "output.weight"; }) ||
         std::find(spec->hf_skip.begin(), spec->hf_skip.end(), "lm_head.weight") != spec->hf_skip.end();
}

}  // namespace

int run_info(const InfoOptions& o) {
  const gguf::File f = open_model_file(o.model, source_options(o.source));
  const std::string arch = f.get_or<std::string>("general.architecture", "(none)");
  std::error_code ec;
  const std::string asked = resolve_model_path(o.model);  // "default" as a path
  std::string where = f.path() == asked ? asked : o.model + " = " + f.path();  // a Hub name, a cached conversion
  if (std::filesystem::is_directory(f.path(), ec)) where += ", an HF folder converted in memory";
  std::printf("file:          %s (%s, GGUF v%u, alignment %u)\n", where.c_str(), human_bytes(f.size()).c_str(),
              f.version(), f.alignment());
  std::printf("architecture:  %s\n", arch.c_str());
  if (auto name = f.find<std::string>("general.name")) std::printf("name:          %s\n", name->c_str());

  std::printf("\nhyperparameters:\n");
  const std::string prefix = arch + ".";
  for (const auto& kv : f.metadata())
    if (kv.key.rfind(prefix, 0) == 0) std::printf("  %-40s %s\n", kv.key.c_str() + prefix.size(), value_text(kv.value).c_str());
  if (auto p = f.find<int64_t>(prefix + "pooling_type")) std::printf("  pooling:                                 %s\n", pooling_name(*p));

  std::printf("\ntokenizer:\n");
  const std::string model = f.get_or<std::string>("tokenizer.ggml.model", "(none)");
  std::printf("  model:       %s\n", model.c_str());
  if (auto pre = f.find<std::string>("tokenizer.ggml.pre")) std::printf("  pre:         %s\n", pre->c_str());
  if (auto toks = f.find_array("tokenizer.ggml.tokens")) {
    std::printf("  vocab size:  %llu\n", static_cast<unsigned long long>(toks->count));
    const auto& strings = toks->elem_type == gguf::ValueType::STRING ? toks->strings : std::vector<std::string_view>{};
    // GGUF spells the separator key "seperator" (llama.cpp's name); the listing spells the role.
    const std::pair<const char*, const char*> roles[] = {{"bos", "bos"},       {"eos", "eos"},         {"eot", "eot"},
                                                         {"unknown", "unknown"}, {"seperator", "separator"}, {"padding", "padding"},
                                                         {"cls", "cls"},       {"mask", "mask"}};
    for (const auto& [key_role, label] : roles) {
      const std::string key = std::string("tokenizer.ggml.") + key_role + "_token_id";
      if (auto id = f.find<int64_t>(key)) {
        std::string piece = (*id >= 0 && static_cast<uint64_t>(*id) < strings.size()) ? std::string(strings[*id]) : "<out of range>";
        std::printf("  %-11s  %lld %s\n", label, static_cast<long long>(*id), piece.c_str());
      }
    }
  }
  if (auto m = f.find_array("tokenizer.ggml.merges")) std::printf("  merges:      %llu\n", static_cast<unsigned long long>(m->count));
  for (const char* flag : {"add_bos_token", "add_eos_token", "add_sep_token", "add_space_prefix"}) {
    const std::string key = std::string("tokenizer.ggml.") + flag;
    if (auto b = f.find<bool>(key)) std::printf("  %-15s %s\n", flag, *b ? "true" : "false");
  }
  if (f.has(kKvLayersKey)) {
    const std::vector<int32_t> band = f.get_array<int32_t>(kKvLayersKey);
    std::printf("\nkv-embedding:  layers %s (stored by embed kv-layers from %u texts; --kv-embedding uses it)\n",
                band.size() == 2 ? (std::to_string(band[0]) + "-" + std::to_string(band[1])).c_str() : "(malformed)",
                f.get_or<uint32_t>(kKvSampleKey, 0));
  }

  std::printf("\ntensors (%zu):\n", f.tensors().size());
  std::map<std::string, uint64_t> by_type;
  uint64_t total = 0;
  for (const auto& t : f.tensors()) {
    if (o.all_tensors || f.tensors().size() <= 40 || t.name.rfind("blk.", 0) != 0 || t.name.rfind("blk.0.", 0) == 0)
      std::printf("  %-36s %-6s %-22s %s\n", t.name.c_str(), gguf::type_name(t.type), t.shape_string().c_str(),
                  human_bytes(t.nbytes).c_str());
    by_type[gguf::type_name(t.type)] += t.nbytes;
    total += t.nbytes;
  }
  if (!o.all_tensors && f.tensors().size() > 40) std::printf("  (blocks other than blk.0 hidden; --all-tensors lists every one)\n");
  std::printf("  total %s:", human_bytes(total).c_str());
  for (const auto& [type, bytes] : by_type) std::printf(" %s %s;", type.c_str(), human_bytes(bytes).c_str());
  std::printf("\n");
  const auto shared = f.shared_tensors();
  if (has_output_head(arch) && !f.find_tensor("output.weight") && f.find_tensor("token_embd.weight"))
    std::printf("  shared: output.weight is absent, token_embd.weight serves both (tied)\n");
  for (const auto& [a, b] : shared) std::printf("  shared: %s and %s hold the same bytes (mapped once)\n", a.c_str(), b.c_str());

  // The level a CPU run would use (EMBED_ISA honoured), from the same choice the backend makes.
  std::printf("\nthis machine:\n  cpu:         %s\n", cpu::cpu_features().describe().c_str());
  try {
    const CpuIsa isa = cpu::resolve_isa(CpuIsa::Auto);
    std::printf("  kernels:     %s%s\n", cpu_isa_name(isa), std::getenv("EMBED_ISA") ? " (forced by EMBED_ISA)" : "");
    // What cpu/kernel_table.cpp binds: bf16 on AMX or AVX512-BF16, int8 on AMX or AVX-512 VNNI.
    const cpu::CpuFeatures& cf = cpu::cpu_features();
    const bool amx = isa == CpuIsa::Amx;
    const bool bf16 = amx || (isa == CpuIsa::Avx512 && cf.avx512bw && cf.avx512bf16);
    const bool int8 = amx || (isa == CpuIsa::Avx512 && cf.avx512bw && cf.avx512vnni);
    std::string compute = "f32 (default)";
    if (bf16) compute += ", bf16";
    if (int8) compute += ", int8";
    std::string missing;
    if (!bf16) missing += "bf16 needs AMX or AVX512-BF16";
    if (!int8) missing += std::string(missing.empty() ? "" : ", ") + "int8 AMX or AVX-512 VNNI";
    if (!missing.empty()) compute += " (" + missing + ")";
    std::printf("  compute:     %s\n", compute.c_str());
  } catch (const Error& e) {
    std::printf("  kernels:     none: %s\n", e.what());
  }
  return 0;
}

}  // namespace embed::cli
