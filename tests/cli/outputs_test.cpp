// `embed FOLDER texts --output dense,sparse,colbert` (tools/cli/cmd_outputs.cpp) on a BGE-M3-shaped
// XLM-R folder written by the test (tests/convert/xlmr_folders.h; converted at load): the dense
// part equals plain `embed`'s rows byte for byte, sparse entries come in ascending ids without the
// special ids and --sparse-top-k keeps the largest, ColBERT gives one unit vector per token after
// CLS (as many as `embed tokenize` counts, less one), and the refusals are usage errors. The
// read-outs' values against FlagEmbedding's definitions: tests/convert/xlmr_test.cpp.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/convert/xlmr_folders.h"
#include "tests/server/server_process.h"

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

TEST_CASE("embed bench --output times the read-outs with the pass and reports each pass's CPU time", "[cli][m3][bench]") {
  Folders f;
  const std::string in = std::string(" ").append(f.input.string());
  const Run all = run_embed("bench " + f.m3.string() + in + " --json -t 1 --repeat 3 --latency 0 --output dense,sparse,colbert");
  INFO(all.err);
  REQUIRE(all.code == 0);
  const nlohmann::json j = nlohmann::json::parse(all.out);
  CHECK(j["outputs"] == nlohmann::json({{"dense", true}, {"sparse", true}, {"colbert", true}}));
  const nlohmann::json& b = j["batch"];
  REQUIRE(b["cpu_s"].size() == 3);
  std::vector<double> cpu = b["cpu_s"].get<std::vector<double>>();
  for (double c : cpu) CHECK(c >= 0);
  std::sort(cpu.begin(), cpu.end());
  CHECK(b["cpu_median_s"].get<double>() == cpu[1]);
  const Run dense = run_embed("bench " + f.m3.string() + in + " --json -t 1 --repeat 1 --latency 0");
  REQUIRE(dense.code == 0);
  CHECK(nlohmann::json::parse(dense.out)["outputs"] == nlohmann::json({{"dense", true}, {"sparse", false}, {"colbert", false}}));
  const Run missing = run_embed("bench " + f.plain.string() + in + " --repeat 1 --latency 0 --output sparse");
  CHECK(missing.code != 0);
  CHECK_THAT(missing.err, Catch::Contains("no sparse head"));
}

namespace {

// FlagEmbedding's scores written out from the CLI's read-outs (m3.py): dense = q . p of the
// L2-normalized rows; sparse = sum over shared ids of w_q * w_p; colbert = mean over the query's
// vectors of the best dot product with the passage's; the hybrids are weighted means.
double dot(const nlohmann::json& a, const nlohmann::json& b) {
  double s = 0;
  for (size_t k = 0; k < a.size(); k++) s += a[k].get<double>() * b[k].get<double>();
  return s;
}

double lexical(const nlohmann::json& q, const nlohmann::json& p) {
  double s = 0;
  for (const auto& a : q)
    for (const auto& b : p)
      if (a["index"] == b["index"]) s += a["value"].get<double>() * b["value"].get<double>();
  return s;
}

double maxsim(const nlohmann::json& q, const nlohmann::json& p) {
  double total = 0;
  for (const auto& v : q) {
    double best = -1e300;
    for (const auto& u : p) best = std::max(best, dot(v, u));
    total += best;
  }
  return total / static_cast<double>(q.size());
}

std::vector<float> floats(const nlohmann::json& row) {
  std::vector<float> v;
  for (const auto& x : row) v.push_back(x.get<float>());
  return v;
}

}  // namespace

TEST_CASE("embed rerank --score on a BGE-M3-shaped model: compute_score's five scores, worked from the read-outs", "[cli][m3]") {
  Folders f;
  const std::string query = "Wer sitzt auf der Matte?";
  // The query as a one-line file, for its read-outs through `embed --output`.
  const fs::path qfile = f.dir.path() / "query.txt";
  write_text(qfile, query + "\n");
  const Run q = run_embed(f.m3.string() + " " + qfile.string() + " --output dense,sparse,colbert");
  const Run d = run_embed(f.m3.string() + " " + f.input.string() + " --output dense,sparse,colbert");
  INFO(q.err << d.err);
  REQUIRE(q.code == 0);
  REQUIRE(d.code == 0);
  const nlohmann::json qr = json_lines(q.out).at(0);
  const auto docs = json_lines(d.out);
  const double w[3] = {0.4, 0.2, 0.4};
  size_t checked = 0;
  for (const char* name : {"dense", "sparse", "colbert", "sparse+dense", "colbert+sparse+dense"}) {
    const Run r = run_embed("rerank " + f.m3.string() + " " + f.input.string() + " --query '" + query + "' --score " + name +
                            " --weights 0.4,0.2,0.4 --format jsonl");
    INFO(name << ": " << r.err);
    REQUIRE(r.code == 0);
    const auto ranked = json_lines(r.out);
    REQUIRE(ranked.size() == 3);
    for (const auto& row : ranked) {
      const nlohmann::json& p = docs.at(row["index"].get<size_t>());
      const double s_dense = dot(qr["dense"], p["dense"]), s_sparse = lexical(qr["sparse"], p["sparse"]),
                   s_colbert = maxsim(qr["colbert"], p["colbert"]);
      const std::string n = name;
      const double want = n == "dense"          ? s_dense
                          : n == "sparse"       ? s_sparse
                          : n == "colbert"      ? s_colbert
                          : n == "sparse+dense" ? (w[1] * s_sparse + w[0] * s_dense) / (w[0] + w[1])
                                                : (w[0] * s_dense + w[1] * s_sparse + w[2] * s_colbert) / (w[0] + w[1] + w[2]);
      CHECK(row["relevance_score"].get<double>() == Approx(want).epsilon(1e-6).margin(1e-7));
      checked++;
    }
  }
  CHECK(checked == 15);
  const Run bad = run_embed("rerank " + f.m3.string() + " " + f.input.string() + " --query x --score lexical");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("unknown --score 'lexical'"));
  const Run plain = run_embed("rerank " + f.plain.string() + " " + f.input.string() + " --query x --score dense");
  CHECK(plain.code == 2);
  CHECK_THAT(plain.err, Catch::Contains("lacks a sparse head"));
}

TEST_CASE("embed serve: /embed_sparse, /embed_multi_vector and M3 scores on /v1/rerank equal the command's numbers", "[cli][m3][server]") {
  Folders f;
  const Run cli = run_embed(f.m3.string() + " " + f.input.string() + " --output sparse,colbert");
  INFO(cli.err);
  REQUIRE(cli.code == 0);
  const auto rows = json_lines(cli.out);
  REQUIRE(rows.size() == 3);
  embed::test::ServerProcess s(f.m3.string());
  REQUIRE(s.port() > 0);
  httplib::Client c("127.0.0.1", s.port());
  const nlohmann::json inputs = {"Die Katze sitzt auf der Matte.", "A man is playing a guitar.", "日本語のテキストです。"};
  auto sparse = c.Post("/embed_sparse", nlohmann::json{{"inputs", inputs}}.dump(), "application/json");
  REQUIRE(sparse);
  INFO(sparse->body);
  REQUIRE(sparse->status == 200);
  const auto sj = nlohmann::json::parse(sparse->body);
  auto multi = c.Post("/embed_multi_vector", nlohmann::json{{"inputs", inputs}}.dump(), "application/json");
  REQUIRE(multi);
  REQUIRE(multi->status == 200);
  const auto mj = nlohmann::json::parse(multi->body);
  REQUIRE(sj.size() == 3);
  REQUIRE(mj.size() == 3);
  size_t entries = 0;
  for (size_t i = 0; i < 3; i++) {
    entries += sj[i].size();
    REQUIRE(sj[i].size() == rows[i]["sparse"].size());
    for (size_t k = 0; k < sj[i].size(); k++) {
      CHECK(sj[i][k]["index"] == rows[i]["sparse"][k]["index"]);
      CHECK(sj[i][k]["value"].get<float>() == rows[i]["sparse"][k]["value"].get<float>());  // the same float, bit for bit
    }
    REQUIRE(mj[i].size() == rows[i]["colbert"].size());
    for (size_t t = 0; t < mj[i].size(); t++) CHECK(floats(mj[i][t]) == floats(rows[i]["colbert"][t]));
  }
  CHECK(entries >= 3);  // the comparisons above compared weights
  // A single string is one input; "model" is accepted.
  auto one = c.Post("/embed_sparse", R"({"inputs": "A man is playing a guitar.", "model": "x"})", "application/json");
  REQUIRE(one);
  REQUIRE(one->status == 200);
  CHECK(nlohmann::json::parse(one->body) == nlohmann::json::array({sj[1]}));
  // M3 scores on the rerank route: the command's --score, the same float.
  const Run ranked = run_embed("rerank " + f.m3.string() + " " + f.input.string() +
                               " --query 'Wer sitzt auf der Matte?' --score sparse+dense --weights 1,0.3,1 --format jsonl");
  REQUIRE(ranked.code == 0);
  auto rr = c.Post("/v1/rerank",
                   nlohmann::json{{"query", "Wer sitzt auf der Matte?"}, {"documents", inputs}, {"score", "sparse+dense"}, {"weights", {1, 0.3, 1}}}
                       .dump(),
                   "application/json");
  REQUIRE(rr);
  INFO(rr->body);
  REQUIRE(rr->status == 200);
  const auto results = nlohmann::json::parse(rr->body)["results"];
  const auto want = json_lines(ranked.out);
  REQUIRE(results.size() == want.size());
  for (size_t k = 0; k < want.size(); k++) {
    CHECK(results[k]["index"] == want[k]["index"]);
    CHECK(results[k]["relevance_score"].get<float>() == want[k]["relevance_score"].get<float>());
  }
  auto bad = c.Post("/v1/rerank", R"({"query": "q", "documents": ["d"], "score": "lexical"})", "application/json");
  REQUIRE(bad);
  CHECK(bad->status == 422);
  CHECK_THAT(bad->body, Catch::Contains("field 'score'"));
  // A model without the heads: TEI's 424 for /embed_sparse.
  embed::test::ServerProcess plain(f.plain.string());
  REQUIRE(plain.port() > 0);
  httplib::Client pc("127.0.0.1", plain.port());
  auto none = pc.Post("/embed_sparse", R"({"inputs": ["x"]})", "application/json");
  REQUIRE(none);
  CHECK(none->status == 424);
  CHECK_THAT(none->body, Catch::Contains("no sparse head"));
}
