// Bulk runs of `embed` end to end: structured input (JSONL with chosen fields, CSV with quoted
// fields spanning lines, TSV) with ids carried to the rows, streaming in small blocks, --dedup,
// --resume after a run cut at every kind of byte offset (the bytes must equal an uncut run), and
// the errors of each. Expected vectors come from the C++ API on the same texts.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/api.h"
#include "engine/quantize.h"

using namespace embed;

namespace {

const std::string kModel = std::string(EMBED_FIXTURES_DIR) + "/models/tiny-bert-rank/model.gguf";
const std::string kDir = "/tmp/embed_bulk_test_" + std::to_string(::getpid());

// "d7" for ('d', 7), built by appending: GCC 12 reports `"d" + std::to_string(i)` as an
// overlapping memcpy (-Wrestrict false positive, GCC bug 105329).
std::string tagged(char tag, size_t i) {
  std::string s(1, tag);
  s += std::to_string(i);
  return s;
}

struct Run {
  int code;
  std::string err;
};

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string file(const std::string& name, const std::string& text) {
  std::filesystem::create_directories(kDir);
  const std::string path = kDir + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

Run run(const std::string& args) {
  std::filesystem::create_directories(kDir);
  const std::string cmd = std::string(EMBED_BIN) + " " + kModel + " " + args + " 2>" + kDir + "/err";
  const int status = std::system(cmd.c_str());
  return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(kDir + "/err")};
}

Embeddings api_embed(const std::vector<std::string>& texts) {
  auto m = Model::load(kModel);
  REQUIRE(m.ok());
  Context c(m.value(), 2);
  Request r;
  auto e = c.embed(texts, r);
  REQUIRE(e.ok());
  return e.value();
}

void check_row(const nlohmann::json& got, const Embeddings& want, int64_t r) {
  REQUIRE(static_cast<int64_t>(got.size()) == want.cols);
  for (int64_t k = 0; k < want.cols; k++) REQUIRE(got[static_cast<size_t>(k)].get<float>() == want.row(r)[k]);
}

std::vector<nlohmann::json> jsonl(const std::string& text) {
  std::vector<nlohmann::json> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

// 23 texts with repeats (for --dedup), so blocks of 4 leave a partial last block.
std::vector<std::string> corpus() {
  std::vector<std::string> t;
  const char* base[] = {"A man is playing a guitar.", "Someone plays the guitar!", "The stock market fell 3% today.",
                        "Ünïcödé and emoji 🎸 too", "A woman slices an onion, then a tomato."};
  for (int i = 0; i < 23; i++) t.push_back(i % 7 == 6 ? base[0] : std::string(base[i % 5]) + " #" + std::to_string(i));
  return t;
}

}  // namespace

TEST_CASE("jsonl, csv and tsv inputs give one row per record, in order, with its id", "[cli][bulk]") {
  const std::vector<std::string> texts = corpus();
  const Embeddings want = api_embed(texts);
  std::string jl, csv = "id,body,other\n", tsv = "key\tbody\n";
  for (size_t i = 0; i < texts.size(); i++) {
    nlohmann::json j;
    j["doc"] = i % 2 ? nlohmann::json(tagged('d', i)) : nlohmann::json(i * 10);
    j["body"] = texts[i];
    jl += j.dump() + "\n";
    // CSV: a text with a comma, a quote and a line break inside a quoted field.
    csv += tagged('r', i) + ",\"" + texts[i] + "\",x\n";
    tsv += tagged('k', i) + "\t" + texts[i] + "\n";
  }
  SECTION("jsonl, chosen fields, blocks of 4") {
    const std::string in = file("in.jsonl", jl), out = kDir + "/out.jsonl";
    REQUIRE(run(in + " --text-field body --id-field doc --block 4 -o " + out).code == 0);
    const auto rows = jsonl(slurp(out));
    REQUIRE(rows.size() == texts.size());
    for (size_t i = 0; i < rows.size(); i++) {
      INFO("row " << i);
      CHECK(rows[i]["index"] == i);
      CHECK(rows[i]["id"] == (i % 2 ? nlohmann::json(tagged('d', i)) : nlohmann::json(i * 10)));
      check_row(rows[i]["embedding"], want, static_cast<int64_t>(i));
    }
  }
  SECTION("csv with a named column, quoted fields, ids in the first column") {
    const std::vector<std::string> odd = {"plain", "with, a comma", "a \"quoted\" word", "two\nlines"};
    std::string c = "id,text\n";
    for (size_t i = 0; i < odd.size(); i++) {
      std::string q;
      for (char ch : odd[i]) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      c += std::to_string(i) + ",\"" + q + "\"\n";
    }
    const Embeddings w = api_embed(odd);
    const std::string in = file("in.csv", c), out = kDir + "/out.jsonl";
    REQUIRE(run(in + " --block 3 -o " + out).code == 0);
    const auto rows = jsonl(slurp(out));
    REQUIRE(rows.size() == odd.size());
    for (size_t i = 0; i < rows.size(); i++) {
      CHECK(rows[i]["id"] == std::to_string(i));
      check_row(rows[i]["embedding"], w, static_cast<int64_t>(i));
    }
    // CSV output: the id as the first field.
    REQUIRE(run(in + " -f csv -o " + kDir + "/out.csv").code == 0);
    std::istringstream lines(slurp(kDir + "/out.csv"));
    std::string line;
    for (size_t i = 0; i < odd.size(); i++) {
      REQUIRE(std::getline(lines, line));
      CHECK(line.substr(0, line.find(',')) == std::to_string(i));
    }
  }
  SECTION("tsv") {
    const std::string in = file("in.tsv", tsv), out = kDir + "/out.jsonl";
    REQUIRE(run(in + " --text-field body --id-field key --block 5 -o " + out).code == 0);
    const auto rows = jsonl(slurp(out));
    REQUIRE(rows.size() == texts.size());
    for (size_t i = 0; i < rows.size(); i++) {
      CHECK(rows[i]["id"] == tagged('k', i));
      check_row(rows[i]["embedding"], want, static_cast<int64_t>(i));
    }
  }
}

TEST_CASE("npy streams blocks and writes its row count at the end", "[cli][bulk]") {
  const std::vector<std::string> texts = corpus();
  const Embeddings want = api_embed(texts);
  std::string lines;
  for (const std::string& t : texts) lines += t + "\n";
  const std::string in = file("in.txt", lines), out = kDir + "/out.npy";
  REQUIRE(run(in + " --block 4 -f npy -o " + out).code == 0);
  const std::string npy = slurp(out);
  REQUIRE(npy.size() == 128 + texts.size() * static_cast<size_t>(want.cols) * 4);
  CHECK(npy.substr(0, 128).find("'shape': (" + std::to_string(texts.size()) + ", " + std::to_string(want.cols) + ")") != std::string::npos);
  CHECK(std::memcmp(npy.data() + 128, want.data.data(), want.data.size() * 4) == 0);
}

TEST_CASE("dedup (--dedup) gives the rows of a run without it", "[cli][bulk]") {
  const std::vector<std::string> texts = corpus();
  std::string lines;
  for (const std::string& t : texts) lines += t + "\n";
  const std::string in = file("dup.txt", lines);
  REQUIRE(run(in + " --block 4 -o " + kDir + "/plain.jsonl").code == 0);
  const Run d = run(in + " --block 4 --dedup --progress -o " + kDir + "/dedup.jsonl");
  REQUIRE(d.code == 0);
  CHECK(slurp(kDir + "/plain.jsonl") == slurp(kDir + "/dedup.jsonl"));
  // Texts 6, 13 and 20 are the same text: embedded once (in the second block), then taken from
  // the rows kept.
  CHECK(d.err.find("2 deduplicated") != std::string::npos);
}

TEST_CASE("resume (--resume) continues a cut output to the bytes of an uncut run", "[cli][bulk]") {
  const std::vector<std::string> texts = corpus();
  std::string jl;
  for (size_t i = 0; i < texts.size(); i++) jl += nlohmann::json{{"id", tagged('x', i)}, {"text", texts[i]}}.dump() + "\n";
  const std::string in = file("resume.jsonl", jl);
  for (const char* format : {"jsonl", "csv", "npy"}) {
    const std::string full = kDir + "/full." + format, cut = kDir + "/cut." + format;
    REQUIRE(run(in + " --block 4 -f " + format + " -o " + full).code == 0);
    const std::string whole = slurp(full);
    // Cut after a row, inside a row, inside the npy header and at 0 bytes.
    const size_t row = std::string(format) == "npy" ? (whole.size() - 128) / texts.size() : whole.find('\n') + 1;
    for (size_t at : {size_t{0}, size_t{60}, 128 + 5 * row, 128 + 5 * row + row / 2, whole.size() - 1, whole.size()}) {
      if (at > whole.size()) continue;
      INFO(format << " cut at " << at << " of " << whole.size() << " bytes");
      file(std::string("cut.") + format, whole.substr(0, at));
      const Run r = run(in + " --block 4 --resume -f " + format + " -o " + cut);
      REQUIRE(r.code == 0);
      CHECK(slurp(cut) == whole);
    }
  }
  SECTION("an output of another input is refused") {
    file("other.jsonl", nlohmann::json{{"index", 7}, {"embedding", {1.0}}}.dump() + "\n");
    const Run r = run(in + " --resume -o " + kDir + "/other.jsonl");
    CHECK(r.code != 0);
    CHECK(r.err.find("not this input's output") != std::string::npos);
    std::string many;
    for (int i = 0; i < 30; i++) many += nlohmann::json{{"index", i}, {"embedding", {1.0}}}.dump() + "\n";
    file("many.jsonl", many);
    CHECK(run(in + " --resume -o " + kDir + "/many.jsonl").err.find("has only 23 inputs") != std::string::npos);
  }
  SECTION("json output and stdout cannot resume") {
    CHECK(run(in + " --resume -f json -o " + kDir + "/x.json").err.find("not json") != std::string::npos);
    CHECK(run(in + " --resume").err.find("--out FILE") != std::string::npos);
  }
}

TEST_CASE("quantized rows (--precision) stream, dedup and resume like float ones", "[cli][bulk][quantize]") {
  const std::vector<std::string> texts = corpus();
  std::string lines;
  for (const std::string& t : texts) lines += t + "\n";
  const std::string in = file("prec.txt", lines);
  for (const char* name : {"binary", "ubinary"}) {
    INFO(name);
    auto m = Model::load(kModel);
    REQUIRE(m.ok());
    Context c(m.value(), 2);
    Request q;
    REQUIRE(parse_precision(name, &q.precision));
    auto e = c.embed(texts, q);
    REQUIRE(e.ok());
    const Embeddings& want = e.value();
    REQUIRE(want.code_bytes > 1);
    const std::string flags = std::string(" --block 4 --precision ") + name;
    // Blocks of 4 and --dedup give the same jsonl bytes.
    REQUIRE(run(in + flags + " -o " + kDir + "/q_plain.jsonl").code == 0);
    REQUIRE(run(in + flags + " --dedup -o " + kDir + "/q_dedup.jsonl").code == 0);
    CHECK(slurp(kDir + "/q_plain.jsonl") == slurp(kDir + "/q_dedup.jsonl"));
    // npy: one byte per code, the API's codes after the 128-byte header.
    const std::string full = kDir + "/q_full.npy", cut = kDir + "/q_cut.npy";
    REQUIRE(run(in + flags + " -f npy -o " + full).code == 0);
    const std::string whole = slurp(full);
    REQUIRE(whole.size() == 128 + want.codes.size());
    CHECK(whole.substr(0, 128).find(std::string("'descr': '") + (std::string(name) == "binary" ? "|i1" : "|u1") + "'") != std::string::npos);
    CHECK(whole.substr(0, 128).find("'shape': (" + std::to_string(texts.size()) + ", " + std::to_string(want.code_bytes) + ")") !=
          std::string::npos);
    CHECK(whole.substr(128) == std::string(want.codes.begin(), want.codes.end()));
    const size_t row = static_cast<size_t>(want.code_bytes);
    for (size_t at : {size_t{0}, size_t{60}, 128 + 5 * row, 128 + 5 * row + row / 2, whole.size() - 1}) {
      INFO("cut at " << at << " of " << whole.size() << " bytes");
      file("q_cut.npy", whole.substr(0, at));
      REQUIRE(run(in + flags + " --resume -f npy -o " + cut).code == 0);
      CHECK(slurp(cut) == whole);
    }
  }
  // A float output is not continued with quantized rows.
  REQUIRE(run(in + " --block 4 -f npy -o " + kDir + "/f.npy").code == 0);
  file("f_cut.npy", slurp(kDir + "/f.npy").substr(0, 128 + 3 * 4 * 4 + 2));
  const Run r = run(in + " --block 4 --precision binary --resume -f npy -o " + kDir + "/f_cut.npy");
  CHECK(r.code != 0);
  CHECK(r.err.find("--precision") != std::string::npos);
}

TEST_CASE("structured input errors name the line", "[cli][bulk]") {
  CHECK(run(file("e1.jsonl", "{\"text\":\"ok\"}\n{\"txt\":\"no\"}\n")).err.find("line 2: no string field 'text'") != std::string::npos);
  CHECK(run(file("e2.jsonl", "{\"text\":\"ok\"}\nnot json\n")).err.find("line 2: not a JSON object") != std::string::npos);
  CHECK(run(file("e3.csv", "id,text\n1,a\n2,b,c\n")).err.find("line 3: has 3 fields, the header has 2") != std::string::npos);
  CHECK(run(file("e4.csv", "id,body\n1,a\n")).err.find("no column named 'text'") != std::string::npos);
  CHECK(run(file("e5.jsonl", "{\"text\":\"a\"}\n{\"text\":\"\"}\n")).err.find("line 2 is empty") != std::string::npos);
  CHECK(run(file("e6.jsonl", "{\"text\":\"a\",\"spans\":[[0,1]]}\n")).err.find("add --late-chunking") != std::string::npos);
  CHECK(run(file("e7.csv", "text\n\"open\n")).err.find("not closed") != std::string::npos);
  const Run r = run(file("e8.jsonl", "{\"text\":\"a\"}\n{\"text\":\"b\"}\n") + " --id-field doc");
  CHECK(r.err.find("line 1: no field 'doc'") != std::string::npos);
  CHECK(r.code != 0);
}

TEST_CASE("late chunking and long chunk (--late-chunking, --long chunk) write the API's rows", "[cli][bulk]") {
  const std::vector<std::string> texts = {"The river runs past the old mill. It turns the wheel all day.", "One sentence only."};
  auto m = Model::load(kModel);
  REQUIRE(m.ok());
  Context c(m.value(), 2);
  Request r;
  r.late_chunking = true;
  r.chunk_rule = ChunkRule::Sentences;
  auto want = c.embed(texts, r);
  REQUIRE(want.ok());
  const Embeddings& w = want.value();
  REQUIRE(w.row_offsets == std::vector<int64_t>{0, 2, 3});
  std::string jl;
  for (size_t i = 0; i < texts.size(); i++) jl += nlohmann::json{{"id", i + 100}, {"text", texts[i]}}.dump() + "\n";
  const std::string in = file("late_in.jsonl", jl);
  REQUIRE(run(in + " --late-chunking --chunk-by sentences -o " + kDir + "/late.jsonl").code == 0);
  const auto rows = jsonl(slurp(kDir + "/late.jsonl"));
  REQUIRE(rows.size() == 2);
  for (size_t i = 0; i < 2; i++) {
    CHECK(rows[i]["id"] == i + 100);
    const auto& chunks = rows[i]["chunks"];
    REQUIRE(static_cast<int64_t>(chunks.size()) == w.row_offsets[i + 1] - w.row_offsets[i]);
    for (size_t k = 0; k < chunks.size(); k++) {
      const int64_t row = w.row_offsets[i] + static_cast<int64_t>(k);
      CHECK(chunks[k]["span"][0] == w.spans[static_cast<size_t>(row)].begin);
      CHECK(chunks[k]["span"][1] == w.spans[static_cast<size_t>(row)].end);
      check_row(chunks[k]["embedding"], w, row);
    }
  }
  // "The river runs past the old mill." is characters [0, 33).
  CHECK(rows[0]["chunks"][0]["span"] == nlohmann::json::array({0, 33}));
  // npy: the flat rows and a spans file.
  REQUIRE(run(in + " --late-chunking --chunk-by sentences -f npy -o " + kDir + "/late.npy --spans-out " + kDir + "/spans.jsonl").code == 0);
  const std::string npy = slurp(kDir + "/late.npy");
  REQUIRE(npy.size() == 128 + w.data.size() * 4);
  CHECK(std::memcmp(npy.data() + 128, w.data.data(), w.data.size() * 4) == 0);
  const auto spans = jsonl(slurp(kDir + "/spans.jsonl"));
  REQUIRE(spans.size() == 3);
  CHECK(spans[2]["row"] == 2);
  CHECK(spans[2]["index"] == 1);
  CHECK(spans[2]["id"] == 101);
  CHECK(run(in + " --late-chunking -f csv").err.find("one vector per chunk") != std::string::npos);

  // --long chunk with a 12-token limit: the API's rows.
  Request lr;
  lr.long_inputs = LongInputs::Chunk;
  lr.max_tokens = 12;
  auto lw = c.embed(texts, lr);
  REQUIRE(lw.ok());
  REQUIRE(run(in + " --long chunk --max-tokens 12 -o " + kDir + "/long.jsonl").code == 0);
  const auto lrows = jsonl(slurp(kDir + "/long.jsonl"));
  REQUIRE(lrows.size() == 2);
  for (size_t i = 0; i < 2; i++) check_row(lrows[i]["embedding"], lw.value(), static_cast<int64_t>(i));
  CHECK(run(in + " --max-tokens 12").err.find("--long chunk") != std::string::npos);
}

TEST_CASE("the output cannot be the input", "[cli][bulk]") {
  const std::string in = file("same.txt", "one\ntwo\n");
  const Run r = run(in + " -o " + in);
  CHECK(r.code == 2);  // usage: the flags name the same file
  CHECK(r.err.find("is the input file") != std::string::npos);
  CHECK(slurp(in) == "one\ntwo\n");
}
