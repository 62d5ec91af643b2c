// `embed FOLDER texts --output dense,sparse,colbert` (tools/cli/cmd_outputs.cpp) on a BGE-M3-shaped
// XLM-R folder written by the test (tests/convert/xlmr_folders.h; converted at load): the dense
// part equals plain `embed`'s rows byte for byte, sparse entries come in ascending ids without the
// special ids and --sparse-top-k keeps the largest, ColBERT gives one unit vector per token after
// CLS (as many as `embed tokenize` counts, less one), and the refusals are usage errors. The
// read-outs' values against FlagEmbedding's definitions: tests/convert/xlmr_test.cpp.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/convert/xlmr_folders.h"

using namespace embed::convert::testing;

namespace {

struct Run {
  int code;
  std::string out, err;
};

Run run_embed(const std::string& args) {
  const std::string out = "/tmp/embed_outputs_test_" + std::to_string(::getpid());
  const int status = std::system((std::string(EMBED_BIN) + " " + args + " >" + out + ".out 2>" + out + ".err").c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out + ".out"), slurp(out + ".err")};
}

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

// A BGE-M3-shaped folder (heads from .pt files) and a plain one, with an input file.
struct Folders {
  ScratchDir dir;
  fs::path m3, plain, input;
  Folders() {
    m3 = write_folder(dir, "m3", config("XLMRobertaModel", kMaxPos), body(40));
    plain = write_folder(dir, "plain", config("XLMRobertaModel", kMaxPos), body(41));
    std::mt19937 rng(42);
    write_bytes(m3 / "sparse_linear.pt", torch_save({random_pt("weight", {1, kD}, rng), PtTensor{"bias", {1}, {0.1f}}}));
    write_bytes(m3 / "colbert_linear.pt", torch_save({random_pt("weight", {16, kD}, rng), random_pt("bias", {16}, rng)}));
    input = dir.path() / "texts.txt";
    write_text(input, "Die Katze sitzt auf der Matte.\nA man is playing a guitar.\n日本語のテキストです。\n");
  }
};

}  // namespace

TEST_CASE("embed --output dense,sparse,colbert: one line per input, dense = plain embed's rows", "[cli][m3]") {
  Folders f;
  const Run r = run_embed(f.m3.string() + " " + f.input.string() + " --output dense,sparse,colbert");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto rows = json_lines(r.out);
  REQUIRE(rows.size() == 3);
  const Run plain = run_embed(f.m3.string() + " " + f.input.string());
  REQUIRE(plain.code == 0);
  const auto plain_rows = json_lines(plain.out);
  const Run tok = run_embed(std::string("tokenize ").append(f.m3.string()) + " " + f.input.string());
  INFO(tok.err);
  REQUIRE(tok.code == 0);
  std::vector<size_t> n_tokens;  // `embed tokenize`: the ids of a line, space-separated
  std::istringstream lines(tok.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ids(line);
    size_t n = 0;
    for (std::string id; ids >> id;) n++;
    n_tokens.push_back(n);
  }
  REQUIRE(n_tokens.size() == 3);
  for (size_t i = 0; i < 3; i++) {
    INFO("line " << i << ": " << n_tokens[i] << " tokens");
    CHECK(rows[i]["index"] == i);
    CHECK(rows[i]["dense"].dump() == plain_rows[i]["embedding"].dump());
    int64_t last = -1;
    for (const auto& e : rows[i]["sparse"]) {
      const int64_t id = e["index"];
      CHECK(id > last);
      CHECK(id > 3);  // <s> <pad> </s> <unk> are never weighted
      CHECK(e["value"].get<double>() > 0);
      last = id;
    }
    REQUIRE(rows[i]["colbert"].size() == n_tokens[i] - 1);
    for (const auto& v : rows[i]["colbert"]) {
      REQUIRE(v.size() == 16);
      double norm = 0;
      for (const auto& x : v) norm += x.get<double>() * x.get<double>();
      CHECK(std::sqrt(norm) == Approx(1.0).epsilon(1e-6));
    }
  }
}

TEST_CASE("embed --output sparse: --sparse-top-k keeps the largest weights, --sparse-tokens names them", "[cli][m3]") {
  Folders f;
  const Run all = run_embed(f.m3.string() + " " + f.input.string() + " --output sparse");
  const Run top = run_embed(f.m3.string() + " " + f.input.string() + " --output sparse --sparse-top-k 2 --sparse-tokens");
  INFO(all.err << top.err);
  REQUIRE(all.code == 0);
  REQUIRE(top.code == 0);
  const auto a = json_lines(all.out), t = json_lines(top.out);
  REQUIRE(a.size() == 3);
  REQUIRE(t.size() == 3);
  size_t cut = 0;
  for (size_t i = 0; i < 3; i++) {
    CHECK_FALSE(a[i].contains("dense"));
    CHECK_FALSE(a[i].contains("colbert"));
    std::vector<double> weights;
    for (const auto& e : a[i]["sparse"]) weights.push_back(e["value"]);
    std::sort(weights.rbegin(), weights.rend());
    REQUIRE(t[i]["sparse"].size() == std::min<size_t>(2, weights.size()));
    cut += weights.size() > 2;
    for (const auto& e : t[i]["sparse"]) {
      CHECK(e["value"].get<double>() >= weights[t[i]["sparse"].size() - 1]);
      CHECK(e["token"].is_string());
      CHECK_FALSE(e["token"].get<std::string>().empty());
    }
  }
  CHECK(cut > 0);  // the cut was exercised
}

TEST_CASE("embed --output: a head the model lacks, an unknown output and misplaced flags are usage errors", "[cli][m3]") {
  Folders f;
  const std::string in = std::string(" ").append(f.input.string());
  const Run sparse = run_embed(f.plain.string() + in + " --output sparse");
  CHECK(sparse.code == 2);
  CHECK_THAT(sparse.err, Catch::Contains("has no sparse head"));
  const Run colbert = run_embed(f.plain.string() + in + " --output dense,colbert");
  CHECK(colbert.code == 2);
  CHECK_THAT(colbert.err, Catch::Contains("has no ColBERT head"));
  const Run unknown = run_embed(f.m3.string() + in + " --output dense,lexical");
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("unknown --output 'lexical'"));
  const Run top_k = run_embed(f.m3.string() + in + " --sparse-top-k 3");
  CHECK(top_k.code == 2);
  CHECK_THAT(top_k.err, Catch::Contains("go with --output sparse"));
  const Run fmt = run_embed(f.m3.string() + in + " --output sparse -f npy");
  CHECK(fmt.code == 2);
  CHECK_THAT(fmt.err, Catch::Contains("--output writes JSON lines"));
}
