// End-to-end tests of the `embed` command: every output format parsed back and compared with
// the C++ API's result for the same lines, and every error case with its exit code and message.
// Uses the committed tiny BERT cross-encoder fixture (WordPiece tokenizer, mean pooling, rank head).
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cpu/isa.h"
#include "engine/api.h"
#include "engine/intrinsic_dim.h"
#include "tests/models/fixtures.h"

using namespace embed;

namespace {

const std::string kModel = std::string(EMBED_FIXTURES_DIR) + "/models/tiny-bert-rank/model.gguf";

struct Run {
  int code;
  std::string out, err;
};

// env: "NAME=value" assignments for the command's environment.
Run run(const std::string& args, const std::string& stdin_text = "", const std::string& env = "") {
  const std::string dir = "/tmp/embed_cli_test_" + std::to_string(::getpid());
  std::system(("mkdir -p " + dir).c_str());
  std::string cmd = (env.empty() ? "" : env + " ") + std::string(EMBED_BIN) + " " + args + " >" + dir + "/out 2>" + dir + "/err";
  if (!stdin_text.empty()) {
    std::ofstream(dir + "/in") << stdin_text;
    cmd += " <" + dir + "/in";
  }
  const int status = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir + "/out"), slurp(dir + "/err")};
}

std::string write_input(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/embed_cli_test_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

const std::vector<std::string> kLines = {"A man is playing a guitar.", "Someone plays the guitar!", "The stock market fell 3% today.",
                                         "Ünïcödé and emoji 🎸 too"};

Embeddings api_embed(const std::vector<std::string>& lines, int normalize = 2, bool llama_cpp_rounding = false, Request o = {}) {
  ModelOptions mo;
  mo.llama_cpp_rounding = llama_cpp_rounding;
  auto m = Model::load(kModel, mo);
  REQUIRE(m.ok());
  Context c(m.value(), 2);
  o.normalize = normalize;
  auto e = c.embed(lines, o);
  REQUIRE(e.ok());
  return e.value();
}

void expect_rows(const std::vector<std::vector<float>>& got, const Embeddings& want) {
  REQUIRE(static_cast<int64_t>(got.size()) == want.rows);
  for (int64_t r = 0; r < want.rows; r++) {
    REQUIRE(static_cast<int64_t>(got[r].size()) == want.cols);
    for (int64_t k = 0; k < want.cols; k++) REQUIRE(got[r][k] == want.row(r)[k]);  // shortest round-trip text: exact
  }
}

std::vector<std::vector<float>> parse_lines(const std::string& text, char sep) {
  std::vector<std::vector<float>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<float> row;
    std::istringstream ls(line);
    std::string tok;
    while (std::getline(ls, tok, sep))
      if (!tok.empty()) row.push_back(std::stof(tok));
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST_CASE("every output format reads back as the API's vectors", "[cli]") {
  std::string text;
  for (const std::string& l : kLines) text += l + "\n";
  const std::string input = write_input("in.txt", text);
  const Embeddings want = api_embed(kLines);

  Run r = run(kModel + " " + input + " -t 2");  // default: jsonl
  REQUIRE(r.code == 0);
  std::vector<std::vector<float>> rows;
  std::istringstream in(r.out);
  std::string line;
  for (size_t i = 0; std::getline(in, line); i++) {
    const auto j = nlohmann::json::parse(line);
    CHECK(j.at("index") == i);
    rows.push_back(j.at("embedding").get<std::vector<float>>());
  }
  expect_rows(rows, want);

  r = run(kModel + " " + input + " -t 2 --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("object") == "list");
  rows.clear();
  for (size_t i = 0; i < j.at("data").size(); i++) {
    CHECK(j["data"][i].at("object") == "embedding");
    CHECK(j["data"][i].at("index") == i);
    rows.push_back(j["data"][i].at("embedding").get<std::vector<float>>());
  }
  expect_rows(rows, want);
  int64_t tokens = 0;
  for (int32_t n : want.n_tokens) tokens += n;
  CHECK(j.at("usage").at("prompt_tokens") == tokens);

  r = run(kModel + " " + input + " -t 2 --format csv");
  REQUIRE(r.code == 0);
  expect_rows(parse_lines(r.out, ','), want);
  r = run(kModel + " " + input + " -t 2 --format raw");
  REQUIRE(r.code == 0);
  expect_rows(parse_lines(r.out, ' '), want);

  const std::string npy = "/tmp/embed_cli_test_" + std::to_string(::getpid()) + ".npy";
  r = run(kModel + " " + input + " -t 2 --format npy --out " + npy);
  REQUIRE(r.code == 0);
  const test::NpyArray a = test::read_npy(npy);
  REQUIRE(a.shape == std::vector<int64_t>{want.rows, want.cols});
  CHECK(a.data == want.data);
}

TEST_CASE("stdin, prefixes, normalization and dims reach the vectors", "[cli]") {
  Run r = run(kModel + " - -t 2 -f raw --normalize -1", kLines[0] + "\n" + kLines[1] + "\n");
  REQUIRE(r.code == 0);
  expect_rows(parse_lines(r.out, ' '), api_embed({kLines[0], kLines[1]}, -1));
  r = run(kModel + " - -t 2 -f raw --prefix 'query: '", kLines[0] + "\n");
  REQUIRE(r.code == 0);
  expect_rows(parse_lines(r.out, ' '), api_embed({"query: " + kLines[0]}));
  // A prompt by name (a preset here: this model has no prompts of its own) is its text.
  r = run(kModel + " - -t 2 -f raw --prompt-name e5-query", kLines[0] + "\n");
  REQUIRE(r.code == 0);
  expect_rows(parse_lines(r.out, ' '), api_embed({"query: " + kLines[0]}));
  // A template puts the line in its {text} slot.
  r = run(kModel + " - -t 2 -f raw --template 'query: {text} (end)'", kLines[0] + "\n");
  REQUIRE(r.code == 0);
  expect_rows(parse_lines(r.out, ' '), api_embed({"query: " + kLines[0] + " (end)"}));
  r = run(kModel + " - -t 2 -f raw --template ''", kLines[0] + "\n");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--template must contain {text} exactly once"));
  r = run(kModel + " - -t 2 -f raw --prompt-name e5-query --prefix 'x'", kLines[0] + "\n");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("either --prefix or --prompt-name"));
  // --truncate-direction left keeps the end of a long line (the API's Left, same request).
  Request left;
  left.max_tokens = 5;
  left.truncate = true;
  left.truncation_direction = TruncationDirection::Left;
  r = run(kModel + " - -t 2 -f raw --max-tokens 5 --truncate --truncate-direction left", kLines[2] + "\n");
  REQUIRE(r.code == 0);
  const Embeddings want_left = api_embed({kLines[2]}, 2, false, left);
  expect_rows(parse_lines(r.out, ' '), want_left);
  left.truncation_direction = TruncationDirection::Right;
  CHECK(want_left.data != api_embed({kLines[2]}, 2, false, left).data);
  r = run(kModel + " - -t 2 --truncate --truncate-direction up", kLines[2] + "\n");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown --truncate-direction 'up' (left, right)"));
  r = run(kModel + " - -t 2 -f raw --dims 8", kLines[0] + "\n");
  REQUIRE(r.code == 0);
  const auto rows = parse_lines(r.out, ' ');
  REQUIRE(rows.size() == 1);
  REQUIRE(rows[0].size() == 8);
  double n2 = 0;
  for (float v : rows[0]) n2 += v * v;
  CHECK(n2 == Approx(1.0).epsilon(1e-5));  // truncated, then renormalized
}

TEST_CASE("the similarity flag prints the cosine matrix", "[cli]") {
  std::string text;
  for (const std::string& l : kLines) text += l + "\n";
  const Run r = run(kModel + " " + write_input("sim.txt", text) + " -t 2 --similarity --format csv");
  REQUIRE(r.code == 0);
  const auto m = parse_lines(r.out, ',');
  const Embeddings e = api_embed(kLines);
  REQUIRE(m.size() == kLines.size());
  for (size_t i = 0; i < m.size(); i++)
    for (size_t k = 0; k < m.size(); k++) {
      double dot = 0;
      for (int64_t c = 0; c < e.cols; c++) dot += static_cast<double>(e.row(i)[c]) * e.row(k)[c];
      CHECK(m[i][k] == Approx(dot).margin(1e-5));
    }
}

TEST_CASE("errors name the problem and exit non-zero", "[cli]") {
  const std::string good = write_input("good.txt", "hello\nworld\n");
  Run r = run(kModel + " /nonexistent/input.txt");
  CHECK(r.code == 4);
  CHECK_THAT(r.err, Catch::Contains("/nonexistent/input.txt") && Catch::Contains("cannot open"));
  r = run("/nonexistent/model.gguf " + good);
  CHECK(r.code == 4);
  CHECK_THAT(r.err, Catch::Contains("/nonexistent/model.gguf"));
  const std::string corrupt = write_input("corrupt.gguf", "GGUF\x03\x00\x00\x00garbage");
  r = run(corrupt + " " + good);
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("invalid GGUF"));
  r = run(kModel + " " + write_input("bad_utf8.txt", "fine\nbad \xff byte\n"));
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("line 2 is not valid UTF-8") && Catch::Contains("0xFF"));
  r = run(kModel + " " + write_input("empty_line.txt", "one\n\nthree\n"));
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("line 2 is empty") && Catch::Contains("--skip-empty"));
  r = run(kModel + " " + write_input("empty_line2.txt", "one\n\nthree\n") + " --skip-empty -f raw -t 2");
  CHECK(r.code == 0);
  CHECK_THAT(r.err, Catch::Contains("skipped 1 empty line(s): 2"));
  CHECK(parse_lines(r.out, ' ').size() == 2);
  std::string long_line;
  for (int i = 0; i < 400; i++) long_line += "word ";
  r = run(kModel + " " + write_input("long.txt", "short\n" + long_line + "\n"));
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::Contains("line 2") && Catch::Contains("tokens, more than the limit") && Catch::Contains("--truncate"));
  r = run(kModel + " " + write_input("long2.txt", "short\n" + long_line + "\n") + " --truncate -f raw -t 2");
  CHECK(r.code == 0);
  CHECK(parse_lines(r.out, ' ').size() == 2);
  r = run(kModel + " " + good + " --fromat json");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown flag --fromat") && Catch::Contains("did you mean --format?"));
  // Bad option values are usage errors (2), as --help says, whether the command or the request
  // check finds them; the request's messages name the flag, not the field behind it.
  r = run(kModel + " " + good + " --dims 100000");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--dims 100000 is outside 1..64"));
  r = run(kModel + " " + good + " --dims -3");
  CHECK(r.code == 2);
  r = run(kModel + " " + good + " --dims 0");  // not "the full width": the range is 1..width
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--dims 0 is outside 1..64"));
  r = run(kModel + " " + good + " --pooling average");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown --pooling 'average'"));
  r = run(kModel + " " + good + " --format yaml");
  CHECK(r.code == 2);
  r = run(kModel + " " + good + " --device tpu");
  CHECK(r.code == 2);
  r = run(kModel + " " + good + " --compat ollama");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown --compat 'ollama' (llama.cpp)"));
  r = run(kModel + " " + good + " --template 'no slot here'");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--template must contain {text} exactly once"));
  CHECK(r.err.find("prompt_template") == std::string::npos);
  r = run(kModel + " " + good + " --long chunk --truncate");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--long chunk keeps all of a long text: give it or --truncate, not both"));
}

TEST_CASE("the first commands a new user types: no arguments, --version, swapped arguments", "[cli]") {
  Run r = run("");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("nothing to embed: type `embed MODEL.gguf texts.txt`") && Catch::Contains("embed --help"));
  CHECK(r.err.find("model_and_input") == std::string::npos);

  r = run("--version");
  CHECK(r.code == 0);
  CHECK(r.out == std::string("embed ") + EMBED_PROJECT_VERSION + "\n");

  const std::string input = write_input("swapped.txt", "hello\n");
  r = run(input + " " + kModel);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("the model comes first") && Catch::Contains("`embed " + kModel + " " + input + "`"));
  CHECK(r.err.find("bad magic") == std::string::npos);
}

TEST_CASE("exit codes are the ones --help and docs/cli.md give", "[cli]") {
  const Run help = run("--help");
  REQUIRE(help.code == 0);
  const std::string codes =
      "Exit codes: 0 ok; 1 model or engine failure (invalid or unsupported model file, device); 2 usage (unknown flag, "
      "missing argument, bad option value); 3 bad input data (a line that cannot be embedded); 4 a file could not be read or written.";
  CHECK_THAT(help.out, Catch::Contains(codes));
  // docs/cli.md's table says the same, code by code.
  std::ifstream in(std::string(EMBED_SOURCE_DIR) + "/docs/cli.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* row : {"| 1 | model or engine failure: invalid or unsupported model file, device error, non-finite output |",
                          "| 2 | usage: unknown flag, missing argument, bad option value |",
                          "| 3 | bad input data: an empty, invalid UTF-8 or too-long line or record |",
                          "| 4 | a file could not be read or written |"})
    CHECK_THAT(doc, Catch::Contains(row));
  const std::string good = write_input("codes.txt", "hello\n");
  CHECK(run(kModel + " " + good + " --pooling average").code == 2);                               // bad option value
  CHECK(run(write_input("codes_corrupt.gguf", "GGUF\x03\x00\x00\x00garbage") + " " + good).code == 1);  // model
  CHECK(run(kModel + " " + write_input("codes_empty.txt", "a\n\nb\n")).code == 3);                    // input data
  CHECK(run(kModel + " /nonexistent/codes.txt").code == 4);                                        // file
}

TEST_CASE("bf16's fidelity is stated once, in docs/kernels.md, and pointed to elsewhere", "[cli]") {
  auto slurp = [](const std::string& rel) {
    std::ifstream in(std::string(EMBED_SOURCE_DIR) + "/" + rel);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  // A cosine figure on a line about the bf16 compute type.
  auto figures = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("bf16") == std::string::npos || line.find("cosine") == std::string::npos) continue;
      for (size_t at = line.find("0.999"); at != std::string::npos; at = line.find("0.999", at + 1)) {
        size_t end = at;
        while (end < line.size() && (std::isdigit(static_cast<unsigned char>(line[end])) || line[end] == '.')) end++;
        out.push_back(line.substr(at, end - at));
      }
    }
    return out;
  };
  const Run help = run("--help");
  REQUIRE(help.code == 0);
  CHECK(figures(help.out).empty());
  CHECK_THAT(help.out, Catch::Contains("docs/kernels.md has the measured fidelity"));
  for (const char* doc : {"README.md", "docs/cli.md", "docs/python.md"}) {
    INFO(doc);
    CHECK(figures(slurp(doc)).empty());
  }
  const std::vector<std::string> kernels = figures(slurp("docs/kernels.md"));
  CHECK(kernels.size() == 1);
}

TEST_CASE("'default' names the default model in every subcommand that takes a model", "[cli]") {
  const std::string input = write_input("default.txt", "hello world\n");
  const std::string env = "EMBED_MODEL=" + kModel;
  const Run info = run("info default", "", env);
  REQUIRE(info.code == 0);
  CHECK_THAT(info.out, Catch::Contains("file:          " + kModel));
  const Run tok = run("tokenize default " + input, "", env);
  REQUIRE(tok.code == 0);
  CHECK(tok.out == run("tokenize " + kModel + " " + input).out);
  CHECK(run("default " + input, "", env).out == run(kModel + " " + input).out);
  // Without a default model installed, the message says how to get one.
  const Run missing = run("info default", "", "EMBED_MODEL= EMBED_CACHE=/nonexistent/cache");
  CHECK(missing.code == 4);
  CHECK_THAT(missing.err, Catch::Contains("tools/models.sh default"));
}

TEST_CASE("embed info spells the separator role and says tied only where a model has an LM head", "[cli]") {
  const Run bert = run("info " + kModel);
  REQUIRE(bert.code == 0);
  CHECK_THAT(bert.out, Catch::Contains("  separator"));
  CHECK(bert.out.find("seperator") == std::string::npos);
  CHECK(bert.out.find("(tied)") == std::string::npos);  // BERT has no LM head to tie
  const Run gemma = run("info " + std::string(EMBED_FIXTURES_DIR) + "/models/tiny-gemma3/model.gguf");
  REQUIRE(gemma.code == 0);
  CHECK_THAT(gemma.out, Catch::Contains("token_embd.weight serves both (tied)"));
}

TEST_CASE("an empty text is refused by the library as by the command and the server", "[cli][api]") {
  auto m = Model::load(kModel);
  REQUIRE(m.ok());
  Context c(m.value(), 1);
  auto e = c.embed({"fine", ""});
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().index == 1);
  CHECK_THAT(e.error().message, Catch::Contains("text 1 is empty"));
  auto s = c.rerank("query", {"doc", ""});
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().index == 1);
  CHECK_THAT(s.error().message, Catch::Contains("document 1 is empty"));
}

TEST_CASE("compat llama.cpp (--compat) gives the API's vectors with llama.cpp rounding", "[cli]") {
  std::string text;
  for (const std::string& l : kLines) text += l + "\n";
  const std::string input = write_input("compat.txt", text);
  const Embeddings want = api_embed(kLines, 2, true), exact = api_embed(kLines);
  const Run r = run(kModel + " " + input + " -t 2 --compat llama.cpp --format csv");
  REQUIRE(r.code == 0);
  expect_rows(parse_lines(r.out, ','), want);
  // This model's weights are f32, so only its GELU changes (f16 table): close to, not equal to, exact.
  double max_diff = 0.0;
  for (size_t i = 0; i < want.data.size(); i++) max_diff = std::max(max_diff, std::fabs(double(want.data[i]) - exact.data[i]));
  CHECK(max_diff > 0.0);
  CHECK(max_diff < 1e-2);
}

// --split-special: the API's Request::split_special on embed and rerank. The default reads
// "[SEP]" and "[CLS]" as the tokens (other vectors and scores), the flag as characters.
TEST_CASE("the split-special flag reaches embed and rerank", "[cli]") {
  const std::string line = "a [SEP] b [CLS] c";
  Request split;
  split.split_special = true;
  Run r = run(kModel + " - -t 2 -f raw --split-special", line + "\n");
  REQUIRE(r.code == 0);
  const Embeddings want = api_embed({line}, 2, false, split);
  expect_rows(parse_lines(r.out, ' '), want);
  CHECK(want.data != api_embed({line}).data);
  const std::string docs = write_input("split_docs.txt", "The cat [SEP] sat on the mat.\n");
  r = run("rerank " + kModel + " " + docs + " --query 'Where is the cat?' -f jsonl -t 2 --split-special");
  REQUIRE(r.code == 0);
  auto m = Model::load(kModel);
  REQUIRE(m.ok());
  Context c(m.value(), 2);
  Request rr;
  rr.truncate = true;  // what the command asks for
  const auto plain = c.rerank("Where is the cat?", {"The cat [SEP] sat on the mat."}, rr);
  rr.split_special = true;
  const auto as_text = c.rerank("Where is the cat?", {"The cat [SEP] sat on the mat."}, rr);
  REQUIRE((plain.ok() && as_text.ok()));
  CHECK(nlohmann::json::parse(r.out).at("relevance_score").get<float>() == as_text.value()[0]);
  CHECK(plain.value()[0] != as_text.value()[0]);
}

TEST_CASE("rerank prints documents best first with the model's scores", "[cli]") {
  const std::string docs = write_input("docs.txt", "The cat sat on the mat.\nStocks fell sharply.\nA kitten sleeps.\n");
  const Run r = run("rerank " + kModel + " " + docs + " --query 'Where is the cat?' -f jsonl -t 2");
  REQUIRE(r.code == 0);
  auto m = Model::load(kModel);
  REQUIRE(m.ok());
  Context c(m.value(), 2);
  const auto scores = c.rerank("Where is the cat?", {"The cat sat on the mat.", "Stocks fell sharply.", "A kitten sleeps."});
  REQUIRE(scores.ok());
  std::istringstream in(r.out);
  std::string line;
  float prev = INFINITY;
  int n = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const float s = j.at("relevance_score");
    CHECK(s == scores.value()[j.at("index").get<size_t>()]);
    CHECK(s <= prev);
    prev = s;
    n++;
  }
  CHECK(n == 3);
  // --top-n 1 keeps only the best document: the first line of the full list.
  const Run top = run("rerank " + kModel + " " + docs + " --query 'Where is the cat?' --top-n 1 -f jsonl -t 2");
  REQUIRE(top.code == 0);
  CHECK(top.out == r.out.substr(0, r.out.find('\n') + 1));
}

TEST_CASE("precision: calibrate, then int8 / uint8 / binary / ubinary rows in every format equal the API's codes", "[cli][quantize]") {
  std::string text;
  for (const std::string& l : kLines) text += l + "\n";
  const std::string input = write_input("prec.txt", text);
  const std::string ranges = "/tmp/embed_cli_test_" + std::to_string(::getpid()) + "_ranges.json";
  Run r = run("calibrate " + kModel + " " + input + " -t 2 --dims 12 -o " + ranges);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(std::ifstream(ranges));
  CHECK(j.at("embed_quantization_ranges") == 1);
  CHECK(j.at("dimensions") == 12);
  CHECK(j.at("count") == kLines.size());
  CHECK(j.at("model") == "model.gguf");
  CHECK(j.at("pooling") == "mean");
  const Embeddings floats = api_embed(kLines, 2, false, [] { Request q; q.dimensions = 12; return q; }());
  const QuantizationRanges want_ranges = ranges_from_rows(floats.data.data(), floats.rows, floats.cols);
  CHECK(j.at("min").get<std::vector<float>>() == want_ranges.min);
  CHECK(j.at("max").get<std::vector<float>>() == want_ranges.max);

  for (const char* name : {"int8", "uint8", "binary", "ubinary"}) {
    INFO(name);
    Request q;
    q.dimensions = 12;
    REQUIRE(parse_precision(name, &q.precision));
    const bool ranged = q.precision == Precision::Int8 || q.precision == Precision::Uint8;
    if (ranged) q.ranges = std::make_shared<QuantizationRanges>(load_ranges(ranges));
    const Embeddings want = api_embed(kLines, 2, false, q);
    const std::string flags = " -t 2 --dims 12 --precision " + std::string(name) + (ranged ? " --ranges " + ranges : "");
    std::vector<std::vector<int>> want_rows;
    for (int64_t i = 0; i < want.rows; i++) {
      std::vector<int> row;
      for (int64_t b = 0; b < want.code_bytes; b++)
        row.push_back(precision_signed(want.precision) ? static_cast<int8_t>(want.code_row(i)[b]) : want.code_row(i)[b]);
      want_rows.push_back(row);
    }
    r = run(kModel + " " + input + flags);
    REQUIRE(r.code == 0);
    std::istringstream in(r.out);
    std::string line;
    for (size_t i = 0; std::getline(in, line); i++) CHECK(nlohmann::json::parse(line).at("embedding").get<std::vector<int>>() == want_rows[i]);
    r = run(kModel + " " + input + flags + " -f csv");
    REQUIRE(r.code == 0);
    const auto csv = parse_lines(r.out, ',');
    REQUIRE(csv.size() == want_rows.size());
    for (size_t i = 0; i < csv.size(); i++) CHECK(std::vector<int>(csv[i].begin(), csv[i].end()) == want_rows[i]);
    const std::string npy = "/tmp/embed_cli_test_" + std::to_string(::getpid()) + "_q.npy";
    r = run(kModel + " " + input + flags + " -f npy -o " + npy);
    REQUIRE(r.code == 0);
    std::ifstream f(npy, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t header = 10 + (static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8);
    CHECK_THAT(bytes.substr(10, header - 10),
               Catch::Contains(std::string("'descr': '") + (precision_signed(want.precision) ? "|i1" : "|u1") + "'") &&
                   Catch::Contains("'shape': (4, " + std::to_string(want.code_bytes) + ")"));
    CHECK(bytes.substr(header) == std::string(want.codes.begin(), want.codes.end()));
  }
  r = run(kModel + " " + input + " -t 2 --precision int4");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown --precision 'int4' (float32, int8, uint8, binary, ubinary)"));
  r = run(kModel + " " + input + " -t 2 --precision int8");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--precision int8 needs calibration ranges: give --ranges"));
  r = run(kModel + " " + input + " -t 2 --precision int8 --ranges " + ranges);  // calibrated at 12 dims
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--ranges have 12 dimensions but the output has") && Catch::Contains("(calibrate with the same --dims)"));
  r = run(kModel + " " + input + " -t 2 --precision binary --similarity");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--similarity compares float vectors"));
  r = run("calibrate " + kModel + " " + input + " -t 2");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--out") && Catch::Contains("is required"));
}

// The kernel level: `embed info` reports the one the backend would choose (cpu/isa.h), EMBED_ISA
// forces one, and an unknown level or a compute type the level cannot run is a named error.
TEST_CASE("embed info reports the CPU kernel level, EMBED_ISA forces it, bf16 and int8 need AMX or AVX-512", "[cli]") {
  const Run best = run("info " + kModel);
  REQUIRE(best.code == 0);
  CHECK(best.out.find(std::string("kernels:     ") + cpu_isa_name(cpu::best_isa()) + "\n") != std::string::npos);

  const Run forced = run("info " + kModel, "", "EMBED_ISA=avx2");
  REQUIRE(forced.code == 0);
  CHECK(forced.out.find("kernels:     avx2 (forced by EMBED_ISA)") != std::string::npos);
  CHECK(forced.out.find("bf16 needs AMX or AVX512-BF16, int8 AMX or AVX-512 VNNI") != std::string::npos);

  const Run unknown = run("info " + kModel, "", "EMBED_ISA=avx9");
  REQUIRE(unknown.code == 0);  // the file is described all the same
  CHECK(unknown.out.find("EMBED_ISA=avx9 is not a kernel level") != std::string::npos);

  const std::string input = write_input("isa.txt", "A man is playing a guitar.\n");
  for (const char* type : {"bf16", "int8"}) {
    const Run refused = run(kModel + " " + input + " --compute-type " + type, "", "EMBED_ISA=avx2");
    CHECK(refused.code != 0);
    CHECK(refused.err.find("needs AMX") != std::string::npos);
  }
  const Run bogus = run(kModel + " " + input + " --compute-type f8");
  CHECK(bogus.code == 2);
  CHECK(bogus.err.find("unknown --compute-type 'f8'") != std::string::npos);
}

TEST_CASE("kv-layers: per-layer TwoNN of the model's states, the band, and a copy of the model that stores it", "[cli][kv]") {
  const std::string decoder = std::string(EMBED_FIXTURES_DIR) + "/models/tiny-qwen3-embed/model.gguf";
  const test::Fixture f = test::load_fixture(std::string(EMBED_FIXTURES_DIR) + "/models/tiny-qwen3-embed");
  std::vector<std::string> texts;
  std::string text;
  for (const test::FixtureCase& c : f.cases)
    if (c.text.size() < 120 && c.text.find('\n') == std::string::npos && !c.text.empty() && texts.size() < 40) {
      texts.push_back(c.text);
      text += c.text + "\n";
    }
  REQUIRE(texts.size() >= 20);
  const std::string input = write_input("kv.txt", text);
  Run r = run("kv-layers " + decoder + " " + input + " -t 2 --json");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  // The command's numbers are TwoNN (tested against numpy in the model tests) of the API's states.
  auto m = Model::load(decoder, ModelOptions{Device::Cpu, 2, 0});
  REQUIRE(m);
  Context ctx(m.value(), 2);
  auto states = ctx.layer_states(texts);
  REQUIRE(states);
  const LayerStates& ls = states.value();
  std::vector<double> dims;
  for (int64_t l = 0; l < ls.n_layers; l++) dims.push_back(twonn_dimension(ls.row(l, 0), ls.rows, ls.d_model).dimension);
  CHECK(j.at("texts") == texts.size());
  CHECK(j.at("intrinsic_dimension").get<std::vector<double>>() == dims);
  // 3 layers: the middle-third width is 1 and the middle two thirds are layers 0-2.
  const std::pair<int, int> band = lowest_dimension_band(dims, 1, 0, 2);
  CHECK(j.at("band") == std::vector<int>{band.first, band.second});

  const std::string copy = "/tmp/embed_cli_test_" + std::to_string(::getpid()) + "_kv.gguf";
  r = run("kv-layers " + decoder + " " + input + " -t 2 -o " + copy);
  REQUIRE(r.code == 0);
  const std::string flag = "--kv-layers " + std::to_string(band.first) + "-" + std::to_string(band.second);
  CHECK(r.out.find("--kv-embedding " + flag) != std::string::npos);
  CHECK(run("info " + copy).out.find("kv-embedding:  layers " + std::to_string(band.first) + "-" + std::to_string(band.second) +
                                     " (stored by embed kv-layers from " + std::to_string(texts.size()) + " texts") != std::string::npos);
  // The copy is the same model (same vectors); --kv-embedding alone uses the stored band.
  CHECK(run(copy + " " + input + " -t 2").out == run(decoder + " " + input + " -t 2").out);
  const Run stored = run(copy + " " + input + " -t 2 --kv-embedding");
  REQUIRE(stored.code == 0);
  CHECK(stored.out == run(decoder + " " + input + " -t 2 --kv-embedding " + flag).out);
  const int other = band.first == 0 ? 1 : 0;
  CHECK(stored.out != run(decoder + " " + input + " -t 2 --kv-embedding --kv-layers " + std::to_string(other) + "-" + std::to_string(other)).out);
  std::remove(copy.c_str());

  r = run("kv-layers " + kModel + " " + input);
  CHECK(r.code == 2);  // usage: the command does not apply to this model
  CHECK(r.err.find("is for decoders") != std::string::npos);
  // The model is checked before the texts: an encoder with too few texts hears about the model.
  r = run("kv-layers " + kModel + " " + write_input("kv_enc2.txt", "one\ntwo\n"));
  CHECK(r.code == 2);
  CHECK(r.err.find("is for decoders") != std::string::npos);
  r = run("kv-layers " + decoder + " " + input + " --kv-embedding");
  CHECK(r.code == 2);  // usage
  CHECK(r.err.find("leave out --kv-embedding") != std::string::npos);
  r = run("kv-layers " + decoder + " " + write_input("kv2.txt", "one\ntwo\n"));
  CHECK(r.code == 3);  // input data
  CHECK(r.err.find("at least 3 texts") != std::string::npos);
  r = run("kv-layers " + decoder + " " + input + " --width 4");
  CHECK(r.code == 2);  // usage
  CHECK(r.err.find("--width 4 is wider than the middle layers 0-2") != std::string::npos);
}
