// Tiny HF folders of every convertible architecture (tests/convert/fixtures/<case>/) converted by
// `embed convert` in every output type and run by the engine: the vectors and scores equal the
// references of tools/refgen/convert_vectors.py (sentence-transformers / HF transformers), both
// on the reference's token ids (the converted weights alone) and end to end through the GGUF's
// own vocabulary and prompts. The GGUF's prompt keys equal the folder's
// config_sentence_transformers.json.
//
// Bounds, derived from the output type. Rounding a weight to a type with relative step u
// (f16 2^-10, bf16 2^-7; q8_0 2/127, a 32-value block's max being about 2 standard deviations,
// over 127 steps) perturbs every product; over the model's few dozen quantized matmuls these
// add in quadrature, so the output's relative L2 error is allowed eps = 8 u (sqrt(64) matmuls'
// worth). A relative error eps gives cosine >= 1 - eps^2 / 2 and |diff_i| <= eps * ||ref||. f32
// keeps the weights exactly: cosine >= 0.99999 and |diff_i| <= 1e-4 * ||ref|| (the engine's
// float arithmetic against torch's). Scores (a logit, P(yes)) get |diff| <= eps * max(1, |ref|).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/api.h"
#include "engine/arch/spec.h"
#include "engine/prompts.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "tokenizer/tokenizer.h"
#include "tools/convert/convert.h"
#include "convert_test_util.h"
#include "tests/cpuinfo_flags.h"

using namespace embed;
using namespace embed::convert;
using namespace embed::convert::testing;

namespace {

struct Bound {
  double eps;      // allowed relative L2 error of an output
  double min_cos;  // 1 - eps^2 / 2
  double max_abs;  // per value, relative to the reference's norm
};

Bound bound_for(OutType t) {
  if (t == OutType::F32) return {std::sqrt(2e-5), 0.99999, 1e-4};
  const double u = t == OutType::F16 ? std::ldexp(1.0, -10) : t == OutType::BF16 ? std::ldexp(1.0, -7) : 2.0 / 127.0;
  const double eps = 8 * u;
  return {eps, 1 - eps * eps / 2, eps};
}

double norm(const float* v, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += double(v[i]) * v[i];
  return std::sqrt(s);
}

std::vector<float> unit(const float* v, size_t n) {
  const double s = norm(v, n);
  std::vector<float> out(v, v + n);
  for (float& x : out) x = static_cast<float>(x / s);
  return out;
}

struct Stats {
  double min_cos = 1, max_abs_rel = 0;
  void add(const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    double dot = 0, gg = 0, ww = 0, worst = 0;
    for (size_t i = 0; i < got.size(); i++) {
      dot += double(got[i]) * want[i], gg += double(got[i]) * got[i], ww += double(want[i]) * want[i];
      worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    }
    min_cos = std::min(min_cos, dot / std::sqrt(gg * ww));
    max_abs_rel = std::max(max_abs_rel, worst / std::sqrt(ww));
  }
};

void check_stats(const Stats& s, const Bound& b, const std::string& what) {
  std::printf("CONVERT-VECTORS %-52s min cosine %.9f  max |diff| / |ref| %.3g\n", what.c_str(), s.min_cos, s.max_abs_rel);
  INFO(what << ": min cosine " << s.min_cos << " (bound " << b.min_cos << "), max |diff|/|ref| " << s.max_abs_rel << " (bound "
            << b.max_abs << ")");
  CHECK(s.min_cos >= b.min_cos);
  CHECK(s.max_abs_rel <= b.max_abs);
}

std::optional<Pooling> pooling_of(const nlohmann::json& v) {
  if (v["pooling"].is_null()) return std::nullopt;
  Pooling p;
  REQUIRE(parse_pooling(v["pooling"].get<std::string>(), &p));
  return p;
}

// The folder's prompts, as config_sentence_transformers.json has them, against the GGUF's keys.
void check_prompt_keys(const gguf::File& f, const fs::path& folder) {
  const fs::path cfg = folder / "config_sentence_transformers.json";
  nlohmann::ordered_json st = nlohmann::ordered_json::object();
  if (fs::exists(cfg)) {
    std::ifstream in(cfg);
    st = nlohmann::ordered_json::parse(in);
  }
  std::vector<std::string> names, texts;
  if (st.contains("prompts") && st["prompts"].is_object())
    for (const auto& [name, text] : st["prompts"].items()) names.push_back(name), texts.push_back(text.get<std::string>());
  INFO("prompt keys of " << folder.filename().string());
  if (names.empty()) {
    CHECK_FALSE(f.has(kPromptNamesKey));
  } else {
    const auto got_names = f.get_string_array(kPromptNamesKey), got_texts = f.get_string_array(kPromptTextsKey);
    CHECK(std::vector<std::string>(got_names.begin(), got_names.end()) == names);
    CHECK(std::vector<std::string>(got_texts.begin(), got_texts.end()) == texts);
  }
  if (st.contains("default_prompt_name") && st["default_prompt_name"].is_string())
    CHECK(f.get<std::string>(kPromptDefaultKey) == st["default_prompt_name"].get<std::string>());
  else
    CHECK_FALSE(f.has(kPromptDefaultKey));
}

// The prompt text the GGUF holds for `name`.
std::string gguf_prompt(const gguf::File& f, const std::string& name) {
  const auto names = f.get_string_array(kPromptNamesKey), texts = f.get_string_array(kPromptTextsKey);
  for (size_t i = 0; i < names.size(); i++)
    if (names[i] == name) return std::string(texts[i]);
  FAIL("prompt '" << name << "' is not in the GGUF");
  return {};
}

// Context::embed on the texts against a variant's reference vectors.
Stats embed_stats(Context& ctx, const std::vector<std::string>& texts, const Request& r, const nlohmann::json& v) {
  auto e = ctx.embed(texts, r);
  REQUIRE(e.ok());
  Stats s;
  for (size_t i = 0; i < texts.size(); i++) {
    const float* row = e.value().row(static_cast<int64_t>(i));
    s.add(std::vector<float>(row, row + e.value().cols), v["vectors"][i].get<std::vector<float>>());
  }
  return s;
}

// The description a folder converts with (config.json "architectures"[0] among its HF classes).
std::string arch_of_folder(const fs::path& folder) {
  const std::string cls = read_json(folder / "config.json")["architectures"][0];
  for (const arch::ArchSpec* spec : arch::architecture_specs())
    for (const std::string& c : spec->hf_classes)
      if (c == cls) return spec->name;
  FAIL("no description converts " << cls);
  return {};
}

// Converts and checks one case; returns the GGUF architecture it converted to.
std::string check_case(const nlohmann::json& ref, OutType type, const fs::path& gguf_path) {
  const std::string name = ref["case"];
  const fs::path folder = fixtures_dir() / name;
  ConvertOptions o;
  o.model_dir = folder.string();
  o.out_path = gguf_path.string();
  o.type = type;
  convert_hf_to_gguf(o);
  const gguf::File f = gguf::File::open(gguf_path.string());
  check_prompt_keys(f, folder);
  auto loaded = Model::load(gguf_path.string(), ModelOptions{Device::Cpu, 2});
  REQUIRE(loaded.ok());
  Context ctx(loaded.value(), 2);
  const bool normalized = ref["normalized"];
  const Bound b = bound_for(type);
  const std::string tag = name + " " + out_type_name(type);
  const std::vector<std::string> texts = ref["texts"];
  for (const auto& v : ref["variants"]) {
    const std::optional<Pooling> pooling = pooling_of(v);
    // Same ids: the converted weights and metadata alone.
    TokenBatch batch;
    const auto& ids = v["ids"];
    for (size_t i = 0; i < ids.size(); i++) batch.add(static_cast<int32_t>(i), ids[i].get<std::vector<int32_t>>());
    Request raw;
    raw.pooling = pooling;
    raw.normalize = -1;
    auto out = ctx.run(batch, raw);
    REQUIRE(out.ok());
    Stats same;
    for (size_t i = 0; i < ids.size(); i++) {
      const std::vector<float> want = v["vectors"][i];
      const float* got = out.value().pooled(static_cast<int32_t>(i));
      const size_t n = static_cast<size_t>(out.value().pooled_dim());
      same.add(normalized ? unit(got, n) : std::vector<float>(got, got + n), want);
    }
    check_stats(same, b, tag + " " + v["label"].get<std::string>() + " (same ids)");
    // End to end: the GGUF's vocabulary tokenizes the texts, its prompt keys give the prompt
    // (Request::prompt_name looks it up in the file, as --prompt-name does).
    // (A family with its own PyTorch reference in refgen says "pipeline": "sentence-transformers".)
    if (ref["reference"] == "sentence-transformers" || ref.value("pipeline", std::string()) == "sentence-transformers") {
      Request r;
      r.normalize = normalized ? 2 : -1;
      if (v["prompt_name"].is_null()) {
        r.prompt = "";  // none, even where the model has a default prompt
      } else {
        r.prompt_name = v["prompt_name"];
        CHECK(gguf_prompt(f, r.prompt_name) == v["prompt"].get<std::string>());
      }
      check_stats(embed_stats(ctx, texts, r, v), b, tag + " " + v["label"].get<std::string>() + " (end to end)");
      // Neither prompt nor name: the model's default prompt, from the file.
      if (ref.contains("default_prompt_name") && ref["default_prompt_name"].is_string() && v["prompt_name"] == ref["default_prompt_name"]) {
        Request d;
        d.normalize = r.normalize;
        check_stats(embed_stats(ctx, texts, d, v), b, tag + " default prompt (end to end)");
      }
    }
  }
  if (ref.contains("pairs")) {  // rerank(query, document) through the GGUF's vocabulary and template
    double worst = 0;
    for (size_t i = 0; i < ref["pairs"].size(); i++) {
      auto scores = ctx.rerank(ref["pairs"][i][0], {ref["pairs"][i][1].get<std::string>()});
      REQUIRE(scores.ok());
      const double want = ref["pair_scores"][i];
      worst = std::max(worst, std::abs(scores.value()[0] - want) / std::max(1.0, std::abs(want)));
    }
    std::printf("CONVERT-VECTORS %-52s max |diff| / max(1, |ref|) %.3g\n", (tag + " rerank (end to end)").c_str(), worst);
    INFO(tag << " rerank: worst score difference " << worst << " (bound " << b.eps << ")");
    CHECK(worst <= b.eps);
  }
  return f.get<std::string>("general.architecture");
}

// The rotary families (their own forward and rope): their cases, whose references are this
// project's own (tools/refgen/nomic_bert_ref.py, gte_new_ref.py; gte-new-rms-tiny: GTE with
// RMSNorm blocks and a SiLU gate).
const char* const kRotaryCases[] = {"nomic-bert-tiny", "gte-new-tiny", "gte-new-rms-tiny"};

fs::path convert_f32(const std::string& name, const ScratchDir& dir) {
  ConvertOptions o;
  o.model_dir = (fixtures_dir() / name).string();
  o.out_path = (dir.path() / (name + ".gguf")).string();
  o.type = OutType::F32;
  convert_hf_to_gguf(o);
  return o.out_path;
}

// Pooled (and, for a normalized model, unit) vectors of one variant's ids on `model`.
Stats same_ids_stats(const std::shared_ptr<const Model>& model, const nlohmann::json& v, bool normalized) {
  Context ctx(model, 2);
  TokenBatch batch;
  for (size_t i = 0; i < v["ids"].size(); i++) batch.add(static_cast<int32_t>(i), v["ids"][i].get<std::vector<int32_t>>());
  Request raw;
  raw.normalize = -1;
  auto out = ctx.run(batch, raw);
  REQUIRE(out.ok());
  Stats s;
  for (size_t i = 0; i < v["ids"].size(); i++) {
    const float* got = out.value().pooled(static_cast<int32_t>(i));
    const size_t n = static_cast<size_t>(out.value().pooled_dim());
    s.add(normalized ? unit(got, n) : std::vector<float>(got, got + n), v["vectors"][i].get<std::vector<float>>());
  }
  return s;
}

// f32 against the case's reference on every CPU level this machine runs (EMBED_ISA's levels,
// forced through ModelOptions::cpu_isa), on the reference's ids.
void check_every_cpu_level(const char* name) {
  const nlohmann::json ref = read_json(fixtures_dir() / "vectors" / (std::string(name) + ".json"));
  ScratchDir dir;
  const fs::path gguf_path = convert_f32(name, dir);
  int levels = 0;
  for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Amx}) {
    if (!embed::test::cpuinfo_supports(isa)) continue;
    ModelOptions o{Device::Cpu, 2};
    o.cpu_isa = isa;
    auto model = Model::load(gguf_path.string(), o);
    REQUIRE(model.ok());
    CHECK(model.value()->describe().kernels == cpu_isa_name(isa));
    for (const auto& v : ref["variants"])
      check_stats(same_ids_stats(model.value(), v, ref["normalized"]), bound_for(OutType::F32),
                  std::string(name) + " f32 " + cpu_isa_name(isa) + " " + v["label"].get<std::string>());
    levels++;
  }
  CHECK(levels >= 2);  // scalar and at least AVX2 on every machine the project supports
}

// The encoder families of issue #25 with their own forward (position-bias tables, alternating
// sliding-window attention): their references are sentence-transformers' (convert_vectors.py).
const char* const kEncoderFamilyCases[] = {"mpnet-tiny", "t5-gtr-tiny", "t5-gated-tiny", "modern-bert-tiny"};

// The GGUF's own tokenizer on the case's texts (with each variant's prompt) gives the ids the
// reference recorded from the HF tokenizer.
void check_token_ids(const char* name) {
  const nlohmann::json ref = read_json(fixtures_dir() / "vectors" / (std::string(name) + ".json"));
  ScratchDir dir;
  auto model = Model::load(convert_f32(name, dir).string(), ModelOptions{Device::Cpu, 2});
  REQUIRE(model.ok());
  REQUIRE(model.value()->has_tokenizer());
  const std::vector<std::string> texts = ref["texts"];
  size_t compared = 0;
  for (const auto& v : ref["variants"])
    for (size_t i = 0; i < texts.size(); i++) {
      INFO(name << " " << v["label"].get<std::string>() << " text " << i << ": " << texts[i]);
      CHECK(model.value()->tokenizer().encode(v["prompt"].get<std::string>() + texts[i]).ids ==
            v["ids"][i].get<std::vector<int32_t>>());
      compared++;
    }
  CHECK(compared >= texts.size());
}

// The case's 8192-token text (tests/convert/fixtures/long/<case>.json) in one pass, f32.
void check_long_input(const char* name) {
  const nlohmann::json ref = read_json(fixtures_dir() / "long" / (std::string(name) + ".json"));
  REQUIRE(ref["variants"][0]["ids"][0].size() == 8192);
  ScratchDir dir;
  auto model = Model::load(convert_f32(name, dir).string(), ModelOptions{Device::Cpu, 2});
  REQUIRE(model.ok());
  REQUIRE(model.value()->describe().n_ctx >= 8192);
  check_stats(same_ids_stats(model.value(), ref["variants"][0], ref["normalized"]), bound_for(OutType::F32),
              std::string(name) + " f32 8192 tokens");
}

// The ALiBi families (position bias from per-head slopes, no position table): their cases, whose
// references are this project's own (tools/refgen/jina_bert_ref.py).
const char* const kAlibiCases[] = {"jina-bert-v2-tiny"};

}  // namespace

TEST_CASE("rotary families: f32 equals the reference on every CPU level this machine runs", "[convert][vectors][rotary]") {
  for (const char* name : kRotaryCases) check_every_cpu_level(name);
}

TEST_CASE("encoder families: f32 equals sentence-transformers on every CPU level this machine runs", "[convert][vectors][families]") {
  for (const char* name : kEncoderFamilyCases) {
    INFO(name);
    check_every_cpu_level(name);
  }
}

TEST_CASE("encoder families: the GGUF's vocabulary gives HF's token ids, prompts included", "[convert][vectors][families]") {
  for (const char* name : kEncoderFamilyCases) check_token_ids(name);
}

TEST_CASE("rotary families: the GGUF's vocabulary gives HF's token ids, prompts included", "[convert][vectors][rotary]") {
  for (const char* name : kRotaryCases) check_token_ids(name);
}

// An 8192-token text (tests/convert/fixtures/long/<case>.json: nomic-bert's from
// tools/refgen/make_nomic_bert.py, GTE's from make_gte_new.py, ModernBERT's from convert_vectors.py's
// LONG_CASES) in one pass: the pooled vector equals the PyTorch reference's (float64).
const char* const kLongCases[] = {"nomic-bert-tiny", "gte-new-tiny", "modern-bert-tiny"};

TEST_CASE("rotary families: an 8192-token input in one pass equals the reference", "[convert][vectors][rotary][long]") {
  for (const char* name : kLongCases) check_long_input(name);
}

TEST_CASE("ALiBi families: f32 equals the reference on every CPU level this machine runs", "[convert][vectors][alibi]") {
  for (const char* name : kAlibiCases) check_every_cpu_level(name);
}

TEST_CASE("ALiBi families: the GGUF's vocabulary gives HF's token ids, prompts included", "[convert][vectors][alibi]") {
  for (const char* name : kAlibiCases) check_token_ids(name);
}

// jina-bert-v2's ALiBi bias grows with |i - j| and has no position table: the 8192-token text of
// tools/refgen/make_jina_bert.py, in one pass.
TEST_CASE("ALiBi families: an 8192-token input in one pass equals the reference", "[convert][vectors][alibi][long]") {
  for (const char* name : kAlibiCases) check_long_input(name);
}

TEST_CASE("converted tiny models give sentence-transformers' / transformers' outputs in every type", "[convert][vectors]") {
  for (const auto& entry : fs::directory_iterator(fixtures_dir() / "vectors")) {
    const nlohmann::json ref = read_json(entry.path());
    for (OutType type : {OutType::F32, OutType::F16, OutType::BF16, OutType::Q8_0}) {
      DYNAMIC_SECTION(ref["case"].get<std::string>() << " --type " << out_type_name(type)) {
        ScratchDir dir;
        const std::string arch = check_case(ref, type, dir.path() / "model.gguf");
        CHECK(arch_of_folder(fixtures_dir() / ref["case"].get<std::string>()) == arch);
      }
    }
  }
}

TEST_CASE("every architecture the engine describes has a converted tiny model with reference vectors", "[convert][vectors]") {
  std::set<std::string> covered;
  for (const auto& entry : fs::directory_iterator(fixtures_dir() / "vectors"))
    covered.insert(arch_of_folder(fixtures_dir() / read_json(entry.path())["case"].get<std::string>()));
  REQUIRE_FALSE(arch::architecture_specs().empty());
  for (const arch::ArchSpec* spec : arch::architecture_specs()) {
    INFO("architecture " << spec->name << ": add a tiny folder to tools/refgen/convert_make_fixtures.py and convert_vectors.py");
    CHECK(covered.count(spec->name) == 1);
  }
}

// A jina-bert-v2 reranker (tests/convert/fixtures/rank/jina-bert-v2-cls-tiny.json, from
// tools/refgen/make_jina_bert.py: JinaBertForSequenceClassification weights under "bert.", with
// q/k LayerNorms) converted in every type: each text's logit (rank pooling on the reference's ids;
// f32 also on every CPU level this machine runs) and each query/document pair's score through the
// GGUF's vocabulary equal the reference's, with the score rule of this file's header,
// |diff| <= eps max(1, |ref|).
TEST_CASE("ALiBi families: a reranker's logits and pair scores equal the reference in every type", "[convert][vectors][alibi]") {
  const char* const name = "jina-bert-v2-cls-tiny";
  const nlohmann::json ref = read_json(fixtures_dir() / "rank" / (std::string(name) + ".json"));
  for (OutType type : {OutType::F32, OutType::F16, OutType::BF16, OutType::Q8_0}) {
    ScratchDir dir;
    ConvertOptions o;
    o.model_dir = (fixtures_dir() / name).string();
    o.out_path = (dir.path() / "model.gguf").string();
    o.type = type;
    convert_hf_to_gguf(o);
    CHECK(gguf::File::open(o.out_path).get<std::string>("general.architecture") == arch_of_folder(fixtures_dir() / name));
    const Bound b = bound_for(type);
    const std::string tag = std::string(name) + " " + out_type_name(type);
    const auto& v = ref["variants"][0];
    REQUIRE(v["pooling"] == "rank");
    // Each text's logit on the reference's ids; f32 on every CPU level this machine runs.
    auto text_logits = [&](const std::shared_ptr<const Model>& m) {
      Context c(m, 2);
      TokenBatch batch;
      for (size_t i = 0; i < v["ids"].size(); i++) batch.add(static_cast<int32_t>(i), v["ids"][i].get<std::vector<int32_t>>());
      Request raw;
      raw.pooling = Pooling::Rank;
      raw.normalize = -1;
      auto out = c.run(batch, raw);
      REQUIRE(out.ok());
      REQUIRE(out.value().pooled_dim() == 1);
      double worst = 0;
      for (size_t i = 0; i < v["ids"].size(); i++) {
        const double want = v["vectors"][i][0];
        worst = std::max(worst, std::abs(out.value().pooled(static_cast<int32_t>(i))[0] - want) / std::max(1.0, std::abs(want)));
      }
      return worst;
    };
    if (type == OutType::F32)
      for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Amx}) {
        if (!embed::test::cpuinfo_supports(isa)) continue;
        ModelOptions mo{Device::Cpu, 2};
        mo.cpu_isa = isa;
        auto m = Model::load(o.out_path, mo);
        REQUIRE(m.ok());
        const double worst = text_logits(m.value());
        std::printf("CONVERT-VECTORS %-52s max |diff| / max(1, |ref|) %.3g\n", (tag + " " + cpu_isa_name(isa) + " logits").c_str(), worst);
        CHECK(worst <= b.eps);
      }
    auto model = Model::load(o.out_path, ModelOptions{Device::Cpu, 2});
    REQUIRE(model.ok());
    Context ctx(model.value(), 2);
    const double worst_text = text_logits(model.value());
    double worst_pair = 0;
    for (size_t i = 0; i < ref["pairs"].size(); i++) {
      auto scores = ctx.rerank(ref["pairs"][i][0], {ref["pairs"][i][1].get<std::string>()});
      REQUIRE(scores.ok());
      const double want = ref["pair_scores"][i];
      worst_pair = std::max(worst_pair, std::abs(scores.value()[0] - want) / std::max(1.0, std::abs(want)));
    }
    std::printf("CONVERT-VECTORS %-52s max |diff| / max(1, |ref|) %.3g (texts), %.3g (pairs)\n", (tag + " logits").c_str(),
                worst_text, worst_pair);
    INFO(tag << ": worst text logit difference " << worst_text << ", pair score " << worst_pair << " (bound " << b.eps << ")");
    CHECK(worst_text <= b.eps);
    CHECK(worst_pair <= b.eps);
  }
}

// Files the jina-bert-v2 forward does not run are refused at load by name: llama.cpp's
// attn_norm_2 (jina-embeddings-v2-base-code's second attention norm) and a q LayerNorm without
// its k partner.
TEST_CASE("ALiBi families: jina-bert-v2 layouts the forward does not run are refused at load", "[convert][alibi]") {
  ConvertOptions o;
  o.model_dir = (fixtures_dir() / "jina-bert-v2-tiny").string();
  o.type = OutType::F32;
  const int64_t d = read_json(fixtures_dir() / "jina-bert-v2-tiny" / "config.json")["hidden_size"];
  const std::vector<float> ones(static_cast<size_t>(d) * 2, 1.0f);
  struct Edit {
    const char* tensor;
    std::vector<int64_t> ne;
    ErrorKind kind;
    const char* says;
  };
  for (const Edit& e : {Edit{"blk.1.attn_norm_2.weight", {d}, ErrorKind::Unsupported, "attn_norm_2"},
                        Edit{"blk.0.attn_q_norm.weight", {d}, ErrorKind::Format, "q/k LayerNorm"}}) {
    INFO(e.tensor);
    gguf::Writer w = build_gguf(o);
    size_t n = 1;
    for (int64_t x : e.ne) n *= static_cast<size_t>(x);
    w.add_tensor(e.tensor, gguf::TensorType::F32, e.ne, ones.data(), n * sizeof(float));
    auto m = Model::load(gguf::File::from_bytes(w.to_bytes(), "edited.gguf"), ModelOptions{Device::Cpu, 1});
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().kind == e.kind);
    CHECK_THAT(m.error().message, Catch::Contains(e.says) && Catch::Contains("jina-bert-v2"));
  }
}

// llama.cpp's older jina-bert-v2 files (before it fused the GEGLU pair) hold gated_layers as
// ffn_gate (first half) and ffn_up (second half): the converted fixture rewritten that way, with
// only the keys the architecture reads, gives the reference vectors on the reference's ids.
TEST_CASE("ALiBi families: jina-bert-v2 with llama.cpp's split ffn_gate / ffn_up equals the reference", "[convert][alibi]") {
  const char* const name = "jina-bert-v2-tiny";
  ConvertOptions o;
  o.model_dir = (fixtures_dir() / name).string();
  o.type = OutType::F32;
  const gguf::File fused = gguf::File::from_bytes(build_gguf(o).to_bytes(), name);
  const std::string arch = "jina-bert-v2.";
  gguf::Writer w;
  w.set_string("general.architecture", "jina-bert-v2");
  for (const char* key : {"block_count", "context_length", "embedding_length", "feed_forward_length", "attention.head_count"})
    w.set<uint32_t>(arch + key, fused.get<uint32_t>(arch + key));
  w.set<float>(arch + "attention.layer_norm_epsilon", fused.get<float>(arch + "attention.layer_norm_epsilon"));
  const int64_t d_ff = fused.get<uint32_t>(arch + "feed_forward_length");
  int split = 0;
  for (const gguf::TensorInfo& t : fused.tensors()) {
    const std::string n = t.name;
    REQUIRE(t.type == gguf::TensorType::F32);
    const std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    if (n.size() > 14 && n.compare(n.size() - 14, 14, ".ffn_up.weight") == 0) {
      REQUIRE(ne == std::vector<int64_t>{t.ne[0], 2 * d_ff});
      const size_t half = static_cast<size_t>(t.ne[0] * d_ff) * sizeof(float);
      const std::string block = n.substr(0, n.size() - 14);
      w.add_tensor(block + ".ffn_gate.weight", t.type, {t.ne[0], d_ff}, t.data, half);
      w.add_tensor(n, t.type, {t.ne[0], d_ff}, t.data + half, half);
      split++;
    } else {
      w.add_tensor(n, t.type, ne, t.data, t.nbytes);
    }
  }
  CHECK(split == fused.get<int64_t>(arch + "block_count"));
  auto model = Model::load(gguf::File::from_bytes(w.to_bytes(), "split.gguf"), ModelOptions{Device::Cpu, 2});
  REQUIRE(model.ok());
  const nlohmann::json ref = read_json(fixtures_dir() / "vectors" / (std::string(name) + ".json"));
  check_stats(same_ids_stats(model.value(), ref["variants"][0], ref["normalized"]), bound_for(OutType::F32),
              std::string(name) + " f32 split ffn_gate / ffn_up");
}

// llama.cpp's own converter output of the issue #25 folders it converts (convert_hf_to_gguf.py of
// llama-cpp-python 0.3.36, --outtype f16, by tools/refgen/check_llamacpp_gguf_in_embed.py
// --write-fixtures), committed as tests/convert/fixtures/llama-cpp/<case>-f16.gguf: CI has no
// llama.cpp. Each file runs in embed with its own keys and vocabulary (llama.cpp's context_length
// 2048 for nomic-bert, its WordPiece add_eos_token, its "modern-bert" pre-tokenizer name, its
// ModernBERT epsilon key, its T5 vocabulary read from spiece.model) and gives
//  * the reference's vectors within the f16 bound of this file's header, on the reference's ids
//    and end to end (the variant's prompt given as text: llama.cpp writes no prompt keys);
//  * exactly the vectors of embed's own f16 conversion of the same folder (the same bytes, as
//    convert_reference_test.cpp checks tensor by tensor; f32 is held to the reference there),
//    except for T5, whose position bias table embed keeps in F32 where llama.cpp rounds it to F16.
// llama.cpp's T5 files carry no pooling type (and would lack a sentence-transformers Dense layer):
// refused at load; the same file with t5encoder.pooling_type = mean added runs as above.
const char* const kLlamaCppCases[] = {"nomic-bert-tiny", "modern-bert-tiny", "t5-gated-tiny"};

TEST_CASE("llama.cpp's GGUFs of the encoder families give the reference vectors", "[convert][vectors][llamacpp]") {
  for (const char* name : kLlamaCppCases) {
    INFO(name);
    const nlohmann::json ref = read_json(fixtures_dir() / "vectors" / (std::string(name) + ".json"));
    fs::path path = fixtures_dir() / "llama-cpp" / (std::string(name) + "-f16.gguf");
    ScratchDir dir;
    const gguf::File file = gguf::File::open(path.string());
    const std::string arch = file.get<std::string>("general.architecture");
    CHECK(arch == arch_of_folder(fixtures_dir() / name));
    if (arch == "t5encoder") {
      auto refused = Model::load(path.string(), ModelOptions{Device::Cpu, 2});
      REQUIRE_FALSE(refused.ok());
      CHECK(refused.error().kind == ErrorKind::Unsupported);
      CHECK_THAT(refused.error().message, Catch::Contains("t5encoder.pooling_type is missing") && Catch::Contains("Dense"));
      gguf::Writer edits;
      edits.set<uint32_t>("t5encoder.pooling_type", static_cast<uint32_t>(Pooling::Mean));
      const fs::path with_pooling = dir.path() / "with-pooling.gguf";
      gguf::write_with_metadata(file, edits, with_pooling.string());
      path = with_pooling;
    }
    auto model = Model::load(path.string(), ModelOptions{Device::Cpu, 2});
    REQUIRE(model.ok());
    REQUIRE(model.value()->has_tokenizer());
    ConvertOptions o;
    o.model_dir = (fixtures_dir() / name).string();
    o.out_path = (dir.path() / "embed.gguf").string();
    o.type = OutType::F16;
    convert_hf_to_gguf(o);
    auto own = Model::load(o.out_path, ModelOptions{Device::Cpu, 2});
    REQUIRE(own.ok());
    Context ctx(model.value(), 2), own_ctx(own.value(), 2);
    const bool normalized = ref["normalized"];
    const std::vector<std::string> texts = ref["texts"];
    const Bound b = bound_for(OutType::F16);
    for (const auto& v : ref["variants"]) {
      const std::string tag = std::string(name) + " llama.cpp f16 " + v["label"].get<std::string>();
      check_stats(same_ids_stats(model.value(), v, normalized), b, tag + " (same ids)");
      Request r;
      r.normalize = normalized ? 2 : -1;
      r.prompt = v["prompt"].get<std::string>();
      check_stats(embed_stats(ctx, texts, r, v), b, tag + " (end to end)");
      auto got = ctx.embed(texts, r);
      auto want = own_ctx.embed(texts, r);
      REQUIRE(got.ok());
      REQUIRE(want.ok());
      REQUIRE(got.value().rows == want.value().rows);
      REQUIRE(got.value().cols == want.value().cols);
      double worst = 0;
      for (int64_t i = 0; i < got.value().rows; i++)
        for (int64_t j = 0; j < got.value().cols; j++)
          worst = std::max(worst, std::abs(double(got.value().row(i)[j]) - want.value().row(i)[j]));
      std::printf("CONVERT-VECTORS %-52s max |diff| to embed convert's f16 %.3g\n", tag.c_str(), worst);
      if (arch != "t5encoder") CHECK(worst == 0.0);
    }
  }
}

// llama.cpp's f16 file of the ModernBERT cross-encoder (its cls, cls.norm, cls.output and
// classifier.pooling_type): each text's logit on the reference's ids and each pair's score through
// the file's vocabulary equal the reference's within the f16 score bound, and equal embed's own
// f16 conversion's exactly.
TEST_CASE("llama.cpp's GGUF of a ModernBERT reranker gives the reference logits and scores", "[convert][vectors][llamacpp]") {
  const char* const name = "modern-bert-cls-tiny";
  const nlohmann::json ref = read_json(fixtures_dir() / "vectors" / (std::string(name) + ".json"));
  const auto& v = ref["variants"][0];
  REQUIRE(v["pooling"] == "rank");
  auto model = Model::load((fixtures_dir() / "llama-cpp" / (std::string(name) + "-f16.gguf")).string(), ModelOptions{Device::Cpu, 2});
  REQUIRE(model.ok());
  ScratchDir dir;
  ConvertOptions o;
  o.model_dir = (fixtures_dir() / name).string();
  o.out_path = (dir.path() / "embed.gguf").string();
  o.type = OutType::F16;
  convert_hf_to_gguf(o);
  auto own = Model::load(o.out_path, ModelOptions{Device::Cpu, 2});
  REQUIRE(own.ok());
  const Bound b = bound_for(OutType::F16);
  auto logits = [&](const std::shared_ptr<const Model>& m) {
    Context c(m, 2);
    TokenBatch batch;
    for (size_t i = 0; i < v["ids"].size(); i++) batch.add(static_cast<int32_t>(i), v["ids"][i].get<std::vector<int32_t>>());
    Request raw;
    raw.pooling = Pooling::Rank;
    raw.normalize = -1;
    auto out = c.run(batch, raw);
    REQUIRE(out.ok());
    REQUIRE(out.value().pooled_dim() == 1);
    std::vector<double> got;
    for (size_t i = 0; i < v["ids"].size(); i++) got.push_back(out.value().pooled(static_cast<int32_t>(i))[0]);
    return got;
  };
  auto scores = [&](const std::shared_ptr<const Model>& m) {
    Context c(m, 2);
    std::vector<double> got;
    for (const auto& pair : ref["pairs"]) {
      auto s = c.rerank(pair[0], {pair[1].get<std::string>()});
      REQUIRE(s.ok());
      got.push_back(s.value()[0]);
    }
    return got;
  };
  const std::vector<double> text_logits = logits(model.value()), pair_scores = scores(model.value());
  double worst_text = 0, worst_pair = 0;
  for (size_t i = 0; i < text_logits.size(); i++) {
    const double want = v["vectors"][i][0];
    worst_text = std::max(worst_text, std::abs(text_logits[i] - want) / std::max(1.0, std::abs(want)));
  }
  for (size_t i = 0; i < pair_scores.size(); i++) {
    const double want = ref["pair_scores"][i];
    worst_pair = std::max(worst_pair, std::abs(pair_scores[i] - want) / std::max(1.0, std::abs(want)));
  }
  std::printf("CONVERT-VECTORS %-52s max |diff| / max(1, |ref|) %.3g (texts), %.3g (pairs)\n", "modern-bert-cls-tiny llama.cpp f16",
              worst_text, worst_pair);
  CHECK(worst_text <= b.eps);
  CHECK(worst_pair <= b.eps);
  CHECK(text_logits == logits(own.value()));
  CHECK(pair_scores == scores(own.value()));
}
