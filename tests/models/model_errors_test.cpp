// Corrupt or inconsistent models and bad inputs fail with errors that name the problem; nothing
// crashes and no garbage vector comes out.
#include <catch2/catch.hpp>

#include <cmath>

#include "engine/runner.h"
#include "tests/models/synthetic.h"

using namespace embed;
using namespace embed::test;

namespace {

std::shared_ptr<LoadedModel> load(const SyntheticSpec& s, TempFile& f) {
  write_synthetic(s, f.path);
  BackendOptions o;
  o.threads = 2;
  return LoadedModel::load(f.path, o);
}

std::string load_error(const SyntheticSpec& s) {
  TempFile f(".gguf");
  try {
    load(s, f);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

SequenceInput seq(std::vector<int32_t> ids) { return SequenceInput{std::move(ids), {}, {}}; }

}  // namespace

TEST_CASE("a model with a missing tensor is refused, naming the tensor", "[models][errors]") {
  for (const char* arch : {"bert", "qwen3"}) {
    SyntheticSpec s;
    s.arch = arch;
    s.skip_tensor = [](const std::string& n) { return n == "blk.1.ffn_down.weight"; };
    CHECK_THAT(load_error(s), Catch::Contains("missing tensor 'blk.1.ffn_down.weight'"));
  }
}

TEST_CASE("a tensor whose shape disagrees with the hyperparameters is refused", "[models][errors]") {
  SyntheticSpec s;
  s.reshape = [](const std::string& n, std::vector<int64_t>& ne) {
    if (n == "blk.0.attn_q.weight") ne[1] = 16;
  };
  CHECK_THAT(load_error(s), Catch::Contains("blk.0.attn_q.weight") && Catch::Contains("[32, 16]") && Catch::Contains("[32, 32]"));
}

TEST_CASE("head counts that do not divide are refused", "[models][errors]") {
  SyntheticSpec s;
  s.arch = "qwen3";
  s.edit_metadata = [](gguf::Writer& w) { w.set<uint32_t>("qwen3.attention.head_count_kv", 3); };
  CHECK_THAT(load_error(s), Catch::Contains("head_count") && Catch::Contains("not a multiple"));
  SyntheticSpec b;
  b.edit_metadata = [](gguf::Writer& w) { w.set<uint32_t>("bert.attention.head_count", 5); };
  CHECK_THAT(load_error(b), Catch::Contains("not a multiple of bert.attention.head_count"));
}

TEST_CASE("absurd hyperparameters are refused before anything is allocated", "[models][errors]") {
  SyntheticSpec s;
  s.edit_metadata = [](gguf::Writer& w) { w.set<uint32_t>("bert.block_count", 100000); };
  CHECK_THAT(load_error(s), Catch::Contains("bert.block_count") && Catch::Contains("outside the supported range"));
  SyntheticSpec t;
  t.edit_metadata = [](gguf::Writer& w) { w.set_string("bert.embedding_length", "wide"); };
  CHECK_THAT(load_error(t), Catch::Contains("bert.embedding_length") && Catch::Contains("found string"));
}

TEST_CASE("an unknown architecture is refused with the supported list", "[models][errors]") {
  SyntheticSpec s;
  s.edit_metadata = [](gguf::Writer& w) { w.set_string("general.architecture", "mamba"); };
  CHECK_THAT(load_error(s), Catch::Contains("architecture 'mamba' is not supported") && Catch::Contains("bert") &&
                                Catch::Contains("qwen3") && Catch::Contains("gemma3"));
}

TEST_CASE("NaN weights give a clear error instead of a garbage vector", "[models][errors]") {
  SyntheticSpec s;
  s.edit = [](const std::string& n, std::vector<float>& v) {
    if (n == "blk.1.ffn_up.weight") v[7] = NAN;
  };
  TempFile f(".gguf");
  auto m = load(s, f);
  Runner r(m, 2);
  PassOptions o;
  CHECK_THROWS_WITH(r.run({seq({1, 2, 3})}, o), Catch::Contains("non-finite") && Catch::Contains("corrupt"));
}

TEST_CASE("bad inputs to a forward pass are refused with the reason", "[models][errors]") {
  SyntheticSpec s;
  TempFile f(".gguf");
  auto m = load(s, f);
  Runner r(m, 2);
  PassOptions o;
  CHECK_THROWS_WITH(r.run({}, o), Catch::Contains("no sequences"));
  CHECK_THROWS_WITH(r.run({seq({1}), seq({})}, o), Catch::Contains("sequence 1 is empty"));
  CHECK_THROWS_WITH(r.run({seq({1, 100})}, o), Catch::Contains("token id 100 is outside the vocabulary (size 100)"));
  CHECK_THROWS_WITH(r.run({seq({-5})}, o), Catch::Contains("token id -5"));
  CHECK_THROWS_WITH(r.run({seq(std::vector<int32_t>(65, 1))}, o), Catch::Contains("65 tokens") && Catch::Contains("context length 64"));
  CHECK_THROWS_WITH(r.run({SequenceInput{{1, 2}, {0, 2}, {}}}, o), Catch::Contains("token type 2"));
  PassOptions rank;
  rank.pooling = Pooling::Rank;
  CHECK_THROWS_WITH(r.run({seq({1})}, rank), Catch::Contains("classifier head"));
  PassOptions excl;
  excl.exclude_special = true;
  CHECK_THROWS_WITH(r.run({seq({1})}, excl), Catch::Contains("special-token mask"));
}

TEST_CASE("cls pooling on a causal model warns loudly", "[models][errors]") {
  SyntheticSpec s;
  s.arch = "qwen3";
  TempFile f(".gguf");
  auto m = load(s, f);
  Runner r(m, 2);
  PassOptions o;
  o.pooling = Pooling::Cls;
  const RunOutput out = r.run({seq({1, 2, 3})}, o);
  REQUIRE(out.warnings.size() == 1);
  CHECK_THAT(out.warnings[0], Catch::Contains("causal"));
}
