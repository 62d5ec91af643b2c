// Tiny random-weight models (tests/fixtures/models/tiny-*): engine output vs the reference
// implementation that made the fixture (HF transformers in fp32; GGUF by llama.cpp's converter):
// final hidden states of every token, and every pooled output the fixture has, cosine >= 0.99999
// per case, each case run alone and all cases batched together. Prints the minimum cosine and
// the maximum absolute difference per model and output (the numbers in the closing notes).
// Also against llama.cpp's vectors from the same model.gguf (llamacpp_*.npy), within a bound
// derived from the precision llama.cpp computes in.
// KV-Embedding (kv_embedding.json: HF with the re-routing written by hand in
// tools/refgen/make_kv_embedding.py) and hybrid pooling ((last + mean) / 2 of the fixture's own
// pooled rows) on the decoders, by the same measure.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "cpu/isa.h"
#include "engine/api.h"
#include "engine/intrinsic_dim.h"
#include "engine/runner.h"
#include "tests/models/fixtures.h"
#include "tokenizer/tokenizer.h"

using namespace embed;
using namespace embed::test;

namespace {

struct Stat {
  double min_cos = 1.0, max_abs = 0.0;
  void add(const float* got, const float* want, int64_t n) {
    min_cos = std::min(min_cos, cosine(got, want, n));
    max_abs = std::max(max_abs, max_abs_diff(got, want, n));
  }
};

PassOptions pooled_by(Pooling p) {
  PassOptions o;
  o.pooling = p;
  return o;
}

std::vector<SequenceInput> inputs(const Fixture& f) {
  std::vector<SequenceInput> seqs;
  for (const FixtureCase& c : f.cases) seqs.push_back(SequenceInput{c.ids, c.type_ids, {}});
  return seqs;
}

void check_pooled(Runner& r, const Fixture& f, const PassOptions& o, const NpyArray& want, const std::string& what) {
  REQUIRE(want.rows() == static_cast<int64_t>(f.cases.size()));
  const std::vector<SequenceInput> seqs = inputs(f);
  Stat alone, batched;
  const RunOutput all = r.run(seqs, o);
  REQUIRE(all.cols == want.cols());
  for (size_t i = 0; i < seqs.size(); i++) {
    const RunOutput one = r.run({seqs[i]}, o);
    alone.add(one.pooled.data(), want.row(static_cast<int64_t>(i)), want.cols());
    batched.add(all.pooled.data() + i * all.cols, want.row(static_cast<int64_t>(i)), want.cols());
  }
  std::printf("REFERENCE %-22s %-14s min cosine %.9f (batched %.9f)  max |diff| %.3g\n", f.model.c_str(), what.c_str(), alone.min_cos,
              batched.min_cos, std::max(alone.max_abs, batched.max_abs));
  INFO(f.model << " " << what << ": min cosine alone " << alone.min_cos << ", batched " << batched.min_cos);
  CHECK(alone.min_cos >= 0.99999);
  CHECK(batched.min_cos >= 0.99999);
}

// Rank scores: one number per case (P(yes) for yes/no heads, the logit for 1-output heads):
// cosine over the vector of all cases' scores, alone and batched, and the max |diff|.
void check_scores(Runner& r, const Fixture& f, const NpyArray& want) {
  REQUIRE(want.data.size() == f.cases.size());
  const std::vector<SequenceInput> seqs = inputs(f);
  PassOptions o;
  o.pooling = Pooling::Rank;
  const RunOutput all = r.run(seqs, o);
  std::vector<float> alone, batched;
  for (size_t i = 0; i < seqs.size(); i++) {
    alone.push_back(r.run({seqs[i]}, o).pooled[0]);
    batched.push_back(all.pooled[i * all.cols]);
  }
  const int64_t n = static_cast<int64_t>(seqs.size());
  const double c1 = cosine(alone.data(), want.data.data(), n), c2 = cosine(batched.data(), want.data.data(), n);
  const double d = std::max(max_abs_diff(alone.data(), want.data.data(), n), max_abs_diff(batched.data(), want.data.data(), n));
  std::printf("REFERENCE %-22s %-14s cosine %.9f (batched %.9f)  max |diff| %.3g\n", f.model.c_str(), "rank scores", c1, c2, d);
  CHECK(c1 >= 0.99999);
  CHECK(c2 >= 0.99999);
}

void check_hidden(Runner& r, const Fixture& f, const NpyArray& want) {
  const std::vector<SequenceInput> seqs = inputs(f);
  PassOptions o;
  o.keep_hidden = true;
  o.pooling = Pooling::None;
  const RunOutput all = r.run(seqs, o);
  REQUIRE(static_cast<int64_t>(all.hidden.size()) == want.rows() * want.cols());
  Stat s;
  for (int64_t t = 0; t < want.rows(); t++) s.add(all.hidden.data() + t * want.cols(), want.row(t), want.cols());
  std::printf("REFERENCE %-22s %-14s min cosine %.9f  max |diff| %.3g (per token)\n", f.model.c_str(), "hidden", s.min_cos, s.max_abs);
  INFO(f.model << " hidden states: min cosine " << s.min_cos);
  CHECK(s.min_cos >= 0.99999);
}

}  // namespace

TEST_CASE("tiny models match their reference implementation", "[models][reference]") {
  const std::vector<std::string> dirs = fixture_dirs();
  int checked = 0;
  for (const std::string& dir : dirs) {
    const Fixture f = load_fixture(dir);
    if (!f.has("model.gguf")) continue;  // real models are tested separately
    SECTION(f.model) {
      BackendOptions bo;
      bo.threads = 2;
      auto m = LoadedModel::load(dir + "/model.gguf", bo);
      Runner r(m, 2);
      if (f.has("hidden.npy")) check_hidden(r, f, f.npy("hidden.npy"));
      const std::map<std::string, Pooling> kinds = {{"mean", Pooling::Mean}, {"cls", Pooling::Cls}, {"last", Pooling::Last}};
      for (const auto& [name, p] : kinds)
        if (f.has("pooled_" + name + ".npy")) check_pooled(r, f, pooled_by(p), f.npy("pooled_" + name + ".npy"), "pooled " + name);
      if (f.has("scores_rank.npy")) check_scores(r, f, f.npy("scores_rank.npy"));
    }
    checked++;
  }
  CHECK(checked >= 7);  // bert-rank, qwen3, qwen3-rerank, qwen2, llama, gemma3-embed, gemma3
}

namespace {

// The relative error one layer may add between two evaluations of the same f32 weights: with f32
// arithmetic only (SiLU models), Higham's dot-product bound n * 2^-24 for the longest inner
// dimension n (the FFN width), plus what each of our products may err by on this CPU's kernel
// level (AMX's f32-grade split-bf16 products: 3 * 2^-16, docs/kernels.md; f32 FMA: nothing more);
// where llama.cpp evaluates GELU through its f16 table (BERT, Gemma) the activation is rounded to
// f16 on the way in and out (2 * 2^-11) and BERT's erf GELU becomes the tanh form (|difference| <
// 2^-11 for unit-size inputs): 2^-9 in all. Over L layers, to first order, the relative L2 error
// stays under L * eps and 1 - cosine under (L * eps)^2 / 2.
double layer_eps(const nlohmann::json& config) {
  const bool gelu_table = config.value("hidden_act", "") == "gelu" || config.contains("hidden_activation");
  if (gelu_table) return std::ldexp(1.0, -9);
  const double product = cpu::resolve_isa(CpuIsa::Auto) == CpuIsa::Amx ? 3 * std::ldexp(1.0, -16) : 0.0;
  return product + config.at("intermediate_size").get<double>() * std::ldexp(1.0, -24);
}

double rel_l2(const float* got, const float* want, int64_t n) {
  double d = 0, w = 0;
  for (int64_t i = 0; i < n; i++) d += (double(got[i]) - want[i]) * (double(got[i]) - want[i]), w += double(want[i]) * want[i];
  return std::sqrt(d / w);
}

}  // namespace

TEST_CASE("tiny models match llama.cpp's vectors within llama.cpp's precision", "[models][reference][llama.cpp]") {
  int checked = 0;
  for (const std::string& dir : fixture_dirs()) {
    const Fixture f = load_fixture(dir);
    if (!f.has("model.gguf")) continue;
    std::ifstream in(dir + "/cases.json");
    const nlohmann::json j = nlohmann::json::parse(in);
    if (!j.contains("llamacpp")) continue;
    SECTION(f.model) {
      // Rows of llamacpp_*.npy are the cases llama.cpp could run (BERT pairs left out: llama.cpp
      // feeds token type 0 everywhere).
      const auto rows = j.at("llamacpp").at("cases").get<std::vector<size_t>>();
      std::vector<SequenceInput> seqs;
      for (size_t i : rows) seqs.push_back(SequenceInput{f.cases.at(i).ids, f.cases.at(i).type_ids, {}});
      const double layers = j.at("config").at("num_hidden_layers").get<double>();
      const double max_rel = layers * layer_eps(j.at("config")), min_cos = 1.0 - 0.5 * max_rel * max_rel;
      BackendOptions bo;
      bo.threads = 2;
      Runner r(LoadedModel::load(dir + "/model.gguf", bo), 2);
      int outputs = 0;
      const std::map<std::string, Pooling> kinds = {{"pooled_mean", Pooling::Mean}, {"pooled_cls", Pooling::Cls},
                                                    {"pooled_last", Pooling::Last}, {"scores_rank", Pooling::Rank}};
      for (const auto& [name, p] : kinds) {
        if (!f.has("llamacpp_" + name + ".npy")) continue;
        const NpyArray want = f.npy("llamacpp_" + name + ".npy");
        REQUIRE(want.rows() == static_cast<int64_t>(rows.size()));
        PassOptions o;  // pooled rows as the model computes them (not normalized)
        o.pooling = p;
        const RunOutput out = r.run(seqs, o);
        // Rank scores (the first output of each case: P(yes), or the logit) are compared as one
        // vector over the cases; pooled outputs per case.
        std::vector<float> got = out.pooled;
        if (p == Pooling::Rank) {
          got.clear();
          for (size_t i = 0; i < rows.size(); i++) got.push_back(out.pooled[i * static_cast<size_t>(out.cols)]);
        }
        const int64_t n_vec = p == Pooling::Rank ? 1 : want.rows(), width = p == Pooling::Rank ? want.rows() : want.cols();
        REQUIRE(static_cast<int64_t>(got.size()) == n_vec * width);
        double worst_cos = 1.0, worst_rel = 0.0;
        for (int64_t v = 0; v < n_vec; v++) {
          worst_cos = std::min(worst_cos, cosine(got.data() + v * width, want.data.data() + v * width, width));
          worst_rel = std::max(worst_rel, rel_l2(got.data() + v * width, want.data.data() + v * width, width));
        }
        std::printf("REFERENCE %-22s %-14s vs llama.cpp: min cosine %.12f  max relative L2 %.3g (bounds %.12f, %.3g)\n",
                    f.model.c_str(), name.c_str(), worst_cos, worst_rel, min_cos, max_rel);
        INFO(f.model << " " << name << " vs llama.cpp");
        CHECK(worst_cos >= min_cos);
        CHECK(worst_rel <= max_rel);
        outputs++;
      }
      CHECK(outputs >= 1);
    }
    checked++;
  }
  CHECK(checked >= 7);  // every tiny fixture carries llama.cpp's vectors
}

TEST_CASE("KV-Embedding on the tiny decoders matches HF with the re-routing by hand", "[models][reference][kv]") {
  int checked = 0;
  for (const std::string& dir : fixture_dirs()) {
    const Fixture f = load_fixture(dir);
    if (!f.has("kv_embedding.json")) continue;
    SECTION(f.model) {
      BackendOptions bo;
      bo.threads = 2;
      Runner r(LoadedModel::load(dir + "/model.gguf", bo), 2);
      const auto meta = nlohmann::json::parse(std::ifstream(dir + "/kv_embedding.json"));
      for (const auto& c : meta.at("configs")) {
        PassOptions o;
        REQUIRE(parse_pooling(c.at("pooling").get<std::string>(), &o.pooling));
        o.kv = KvRouting{c.at("layers")[0].get<int>(), c.at("layers")[1].get<int>(), c.at("bias").get<float>()};
        check_pooled(r, f, o, f.npy(c.at("file").get<std::string>()), "kv " + c.at("file").get<std::string>());
      }
      // Hybrid pooling without re-routing: the mean of the fixture's last-token and mean rows.
      NpyArray hybrid = f.npy("pooled_last.npy");
      const NpyArray mean = f.npy("pooled_mean.npy");
      for (size_t i = 0; i < hybrid.data.size(); i++) hybrid.data[i] = (hybrid.data[i] + mean.data[i]) / 2;
      check_pooled(r, f, pooled_by(Pooling::Hybrid), hybrid, "pooled hybrid");
    }
    checked++;
  }
  CHECK(checked == 4);  // tiny-llama, tiny-qwen2, tiny-qwen3-embed, tiny-gemma3
}

// Each layer's last-token state (Runner's keep_layer_last, Context::layer_states: what `embed
// kv-layers` measures) against HF's block outputs captured by forward hooks
// (make_kv_embedding.py, layer_last.npy), alone and batched, by the same measure as hidden states.
TEST_CASE("Per-layer last-token states match HF's block outputs", "[models][reference][kv]") {
  int checked = 0;
  for (const std::string& dir : fixture_dirs()) {
    const Fixture f = load_fixture(dir);
    if (!f.has("layer_last.npy")) continue;
    SECTION(f.model) {
      const NpyArray want = f.npy("layer_last.npy");
      const int64_t n_cases = static_cast<int64_t>(f.cases.size());
      REQUIRE(want.cols() == f.d_model);
      REQUIRE(want.rows() % n_cases == 0);
      const int64_t n_layers = want.rows() / n_cases;
      BackendOptions bo;
      bo.threads = 2;
      Runner r(LoadedModel::load(dir + "/model.gguf", bo), 2);
      REQUIRE(r.model().info().n_layers == n_layers);
      PassOptions o = pooled_by(Pooling::Last);
      o.keep_layer_last = true;
      const std::vector<SequenceInput> seqs = inputs(f);
      const RunOutput all = r.run(seqs, o);
      REQUIRE(all.layer_last.size() == static_cast<size_t>(n_layers * n_cases * f.d_model));
      Stat alone, batched;
      for (int64_t i = 0; i < n_cases; i++) {
        const RunOutput one = r.run({seqs[static_cast<size_t>(i)]}, o);
        for (int64_t l = 0; l < n_layers; l++) {
          alone.add(one.layer_last.data() + l * f.d_model, want.row(l * n_cases + i), f.d_model);
          batched.add(all.layer_last.data() + (l * n_cases + i) * f.d_model, want.row(l * n_cases + i), f.d_model);
        }
      }
      std::printf("REFERENCE %-22s %-14s min cosine %.9f (batched %.9f)  max |diff| %.3g\n", f.model.c_str(), "layer_last", alone.min_cos,
                  batched.min_cos, std::max(alone.max_abs, batched.max_abs));
      CHECK(alone.min_cos >= 0.99999);
      CHECK(batched.min_cos >= 0.99999);
      // TwoNN of each layer's states (engine/intrinsic_dim.cpp) against numpy's on HF's states
      // (make_kv_embedding.py's twonn): the states differ by ~1e-4 (max |diff| above), distance
      // ratios by about as much relative, so the estimates agree to 1e-3 relative.
      const auto meta = nlohmann::json::parse(std::ifstream(dir + "/kv_embedding.json"));
      const auto& twonn = meta.at("layer_last").at("twonn");
      REQUIRE(static_cast<int64_t>(twonn.size()) == n_layers);
      for (int64_t l = 0; l < n_layers; l++) {
        const double got = twonn_dimension(all.layer_last.data() + l * n_cases * f.d_model, n_cases, f.d_model).dimension;
        INFO(f.model << " layer " << l << ": TwoNN " << got << ", numpy on HF's states " << twonn[l].get<double>());
        CHECK(got == Approx(twonn[l].get<double>()).epsilon(1e-3));
      }

      // The public API on the cases' texts, tokenized by the engine (a last-token model gets an
      // appended EOS the reference ids lack): each text's rows equal the runner's for those tokens
      // run alone, bit for bit (batch invariance), and the HF states where the tokens are the
      // reference's.
      auto m = Model::load(dir + "/model.gguf", ModelOptions{Device::Cpu, 2, 0});
      REQUIRE(m);
      Context ctx(m.value(), 2);
      // Cases whose text fits the context as the engine tokenizes it (some cases' ids are cut).
      std::vector<std::string> texts;
      std::vector<std::vector<int32_t>> text_ids;
      std::vector<int64_t> case_of;
      for (int64_t i = 0; i < n_cases; i++) {
        std::vector<int32_t> ids = m.value()->tokenizer().encode(f.cases[static_cast<size_t>(i)].text, tok::EncodeOptions{}).ids;
        if (static_cast<int64_t>(ids.size()) > m.value()->describe().n_ctx) continue;
        texts.push_back(f.cases[static_cast<size_t>(i)].text);
        text_ids.push_back(std::move(ids));
        case_of.push_back(i);
      }
      const int64_t n_texts = static_cast<int64_t>(texts.size());
      REQUIRE(n_texts * 2 > n_cases);
      RunSettings small;
      small.batch_tokens = 64;  // several passes, so rows come back out of input order
      auto states = ctx.layer_states(texts, {}, small);
      INFO((states ? std::string() : states.error().message));
      REQUIRE(states);
      const LayerStates& ls = states.value();
      REQUIRE((ls.n_layers == n_layers && ls.rows == n_texts && ls.d_model == f.d_model));
      Stat api;
      int64_t same_tokens = 0, bit_equal = 0;
      for (int64_t i = 0; i < n_texts; i++) {
        const std::vector<int32_t>& ids = text_ids[static_cast<size_t>(i)];
        const int64_t c = case_of[static_cast<size_t>(i)];
        REQUIRE(ls.n_tokens[static_cast<size_t>(i)] == static_cast<int32_t>(ids.size()));
        const RunOutput one = r.run({SequenceInput{ids, {}, {}}}, o);
        bool equal = true;
        for (int64_t l = 0; l < n_layers; l++)
          equal = equal && std::memcmp(ls.row(l, i), one.layer_last.data() + l * f.d_model, static_cast<size_t>(f.d_model) * 4) == 0;
        bit_equal += equal;
        if (ids != f.cases[static_cast<size_t>(c)].ids) continue;
        same_tokens++;
        for (int64_t l = 0; l < n_layers; l++) api.add(ls.row(l, i), want.row(l * n_cases + c), f.d_model);
      }
      CHECK(bit_equal == n_texts);
      // tiny-qwen2 pools at the last token without an EOS in its metadata: the engine appends one
      // to every text, so none has the reference's tokens there.
      if (f.model != "tiny-qwen2") CHECK(same_tokens * 2 > n_texts);
      INFO(f.model << ": Context::layer_states min cosine " << api.min_cos << " on " << same_tokens << " cases with the reference's tokens");
      CHECK(api.min_cos >= 0.99999);
      // Refused where the states would not be the plain model's.
      Request kv;
      kv.kv_embedding = true;
      CHECK_FALSE(ctx.layer_states(texts, kv));
    }
    checked++;
  }
  CHECK(checked == 4);  // tiny-llama, tiny-qwen2, tiny-qwen3-embed, tiny-gemma3
}
