// Tiny random-weight models (tests/fixtures/models/tiny-*): engine output vs the reference
// implementation that made the fixture (HF transformers in fp32; GGUF by llama.cpp's converter):
// final hidden states of every token, and every pooled output the fixture has, cosine >= 0.99999
// per case, each case run alone and all cases batched together. Prints the minimum cosine and
// the maximum absolute difference per model and output (the numbers in the closing notes).
#include <catch2/catch.hpp>

#include <cstdio>
#include <map>

#include "engine/runner.h"
#include "tests/models/fixtures.h"

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

std::vector<SequenceInput> inputs(const Fixture& f) {
  std::vector<SequenceInput> seqs;
  for (const FixtureCase& c : f.cases) seqs.push_back(SequenceInput{c.ids, c.type_ids, {}});
  return seqs;
}

void check_pooled(Runner& r, const Fixture& f, Pooling p, const NpyArray& want, const std::string& what) {
  REQUIRE(want.rows() == static_cast<int64_t>(f.cases.size()));
  const std::vector<SequenceInput> seqs = inputs(f);
  PassOptions o;
  o.pooling = p;
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
        if (f.has("pooled_" + name + ".npy")) check_pooled(r, f, p, f.npy("pooled_" + name + ".npy"), "pooled " + name);
      if (f.has("scores_rank.npy")) check_scores(r, f, f.npy("scores_rank.npy"));
    }
    checked++;
  }
  CHECK(checked >= 5);  // bert-rank, qwen3, qwen3-rerank, qwen2, llama (and gemma when present)
}
