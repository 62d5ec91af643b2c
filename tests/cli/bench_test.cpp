// End-to-end tests of `embed bench`: its JSON report checked against the C++ API (text and token
// counts), against its own definitions (pass counts, nearest-rank percentiles, rates) and every
// error case with its exit code. Timings themselves are not asserted: the machine is shared.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/api.h"
#include "tests/cpuinfo_flags.h"

using namespace embed;

namespace {

const std::string kModel = std::string(EMBED_FIXTURES_DIR) + "/models/tiny-bert-rank/model.gguf";

struct Run {
  int code;
  std::string out, err;
};

std::string tmp_path(const std::string& name) { return "/tmp/embed_bench_test_" + std::to_string(::getpid()) + "_" + name; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Run run(const std::string& args) {
  const std::string out = tmp_path("out"), err = tmp_path("err");
  const int status = std::system((std::string(EMBED_BIN) + " bench " + args + " >" + out + " 2>" + err).c_str());
  return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

std::string write_input(const std::string& name, const std::string& text) {
  const std::string path = tmp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

const std::vector<std::string> kLines = {"A man is playing a guitar.", "Someone plays the guitar!",
                                         "The stock market fell 3% today.", "A cat sleeps on the warm windowsill all afternoon.",
                                         "Short."};

std::string input_with_blank_line() {
  std::string text;
  for (size_t i = 0; i < kLines.size(); i++) text += kLines[i] + (i == 1 ? "\n\n" : "\n");  // the empty line is left out
  return write_input("in.txt", text);
}

int64_t api_token_count(const std::vector<std::string>& lines) {
  auto m = Model::load(kModel);
  REQUIRE(m.ok());
  Context c(m.value(), 1);
  auto e = c.embed(lines);
  REQUIRE(e.ok());
  int64_t n = 0;
  for (int32_t t : e.value().n_tokens) n += t;
  return n;
}

}  // namespace

TEST_CASE("embed bench --json reports the input's texts and tokens, the passes asked for and consistent rates", "[cli][bench]") {
  const Run r = run(kModel + " " + input_with_blank_line() + " --json -t 2 --repeat 4 --latency 3");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["engine"] == "embed");
  CHECK(j["arch"] == "bert");
  CHECK(j["threads"] == 2);
  CHECK(j["pooling"] == "mean");
  CHECK(j["texts"] == kLines.size());
  CHECK(j["tokens"] == api_token_count(kLines));
  const nlohmann::json& b = j["batch"];
  REQUIRE(b["passes_s"].size() == 4);
  std::vector<double> passes = b["passes_s"].get<std::vector<double>>();
  std::sort(passes.begin(), passes.end());
  const double median = 0.5 * (passes[1] + passes[2]);
  CHECK(b["median_s"].get<double>() == Approx(median).epsilon(1e-12));
  CHECK(b["texts_per_s"].get<double>() == Approx(kLines.size() / median).epsilon(1e-9));
  CHECK(b["tokens_per_s"].get<double>() == Approx(j["tokens"].get<double>() / median).epsilon(1e-9));
  CHECK(j["load_s"].get<double>() > 0);
  CHECK(j["warmup_s"].get<double>() > 0);
  CHECK(j["rss_after_load_mib"].get<double>() > 0);
  CHECK(j["peak_rss_mib"].get<double>() >= j["rss_after_load_mib"].get<double>());
  // The kernel level, against the OS's own view of the CPU (/proc/cpuinfo flags).
  CHECK(j["isa"] == cpu_isa_name(test::cpuinfo_best_isa()));
  CHECK(j["compute_type"] == "f32");
}

TEST_CASE("embed bench latency: one text per call over the first N lines, nearest-rank p50 and p99", "[cli][bench]") {
  const Run r = run(kModel + " " + input_with_blank_line() + " --json -t 1 --repeat 1 --latency 4");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json l = nlohmann::json::parse(r.out)["latency"];
  CHECK(l["texts"] == 4);
  // Token counts of the first four lines, one call each: the mean must be the API's.
  CHECK(l["tokens_mean"].get<double>() == Approx(api_token_count({kLines.begin(), kLines.begin() + 4}) / 4.0));
  // Nearest rank over 4 samples: p50 is the 2nd smallest, p99 the largest (= max).
  CHECK(l["p99_ms"].get<double>() == l["max_ms"].get<double>());
  CHECK(l["p50_ms"].get<double>() <= l["p99_ms"].get<double>());
  CHECK(l["p50_ms"].get<double>() > 0);

  // More latency texts than lines: all lines, no more. --latency 0: no latency section.
  const nlohmann::json all = nlohmann::json::parse(run(kModel + " " + input_with_blank_line() + " --json --repeat 1 --latency 50").out);
  CHECK(all["latency"]["texts"] == kLines.size());
  const nlohmann::json none = nlohmann::json::parse(run(kModel + " " + input_with_blank_line() + " --json --repeat 1 --latency 0").out);
  CHECK_FALSE(none.contains("latency"));
}

TEST_CASE("embed bench --min-seconds repeats passes until the time is spent", "[cli][bench]") {
  const Run r = run(kModel + " " + input_with_blank_line() + " --json --repeat 1 --min-seconds 0.3 --latency 0");
  REQUIRE(r.code == 0);
  const std::vector<double> passes = nlohmann::json::parse(r.out)["batch"]["passes_s"].get<std::vector<double>>();
  double total = 0;
  for (double s : passes) total += s;
  CHECK(passes.size() >= 2);  // one pass of five short texts on a tiny model takes far less than 0.3 s
  CHECK(total < 0.3 + 1.0);   // it stops once the time is spent (one pass beyond it at most)
}

TEST_CASE("embed bench text report names every measurement", "[cli][bench]") {
  const Run r = run(kModel + " " + input_with_blank_line() + " --repeat 1 --latency 2 --pooling cls");
  INFO(r.err);
  REQUIRE(r.code == 0);
  for (const char* s : {"cls pooling", "5 texts", "load:", "texts/s", "tokens/s", "p50", "p99", "peak RSS:"})
    CHECK(r.out.find(s) != std::string::npos);
}

TEST_CASE("embed bench errors: bad numbers, missing or empty input, unknown pooling, too-long text", "[cli][bench]") {
  const std::string in = input_with_blank_line();
  struct Case {
    std::string args;
    int code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {kModel + " " + in + " --repeat 0", 2, "--repeat must be at least 1"},
      {kModel + " " + in + " --latency -1", 2, "--latency must be"},
      {kModel + " " + in + " --warmup -2", 2, "--warmup must be"},
      {kModel + " " + in + " --pooling maxx", 2, "unknown --pooling 'maxx'"},
      {kModel + " " + in + " --device tpu", 2, "unknown --device 'tpu'"},
      {kModel + " " + in + " --repeats 2", 2, "did you mean --repeat"},
      {kModel + " /nonexistent/texts.txt", 4, "/nonexistent/texts.txt"},
      {kModel + " " + write_input("empty.txt", "\n\n"), 3, "no text to embed"},
      {"/nonexistent/model.gguf " + in, 4, "/nonexistent/model.gguf"},
      {kModel + " " + in + " --max-tokens 4", 3, "use --truncate"},
      {kModel + " " + in + " --warmup-input /nonexistent/warm.txt", 4, "/nonexistent/warm.txt"},
      {kModel + " " + in + " --warmup-input " + write_input("warm-empty.txt", "\n"), 3, "no text for the warm-up call"},
  };
  for (const Case& c : cases) {
    const Run r = run(c.args);
    INFO("embed bench " << c.args << "\nstderr: " << r.err);
    CHECK(r.code == c.code);
    CHECK(r.err.find(c.message) != std::string::npos);
  }
  // The same too-long text with --truncate runs; so does a separate warm-up file.
  CHECK(run(kModel + " " + in + " --max-tokens 4 --truncate --repeat 1 --latency 1").code == 0);
  CHECK(run(kModel + " " + in + " --warmup-input " + write_input("warm.txt", "Hi.\n") + " --repeat 1 --latency 0").code == 0);
}
