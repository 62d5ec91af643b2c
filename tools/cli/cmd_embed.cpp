// `embed [MODEL] INPUT`: one vector per input line, in order, in the chosen format. A thin layer
// over the public API: reading lines, mapping errors to line numbers, progress, output.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "engine/api.h"
#include "engine/pipeline.h"
#include "tokenizer/tokenizer.h"
#include "tools/cli/commands.h"
#include "tools/cli/input.h"
#include "tools/cli/output.h"

namespace embed::cli {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f && f != stdout) std::fclose(f);
  }
};

std::unique_ptr<std::FILE, FileCloser> open_output(const std::string& path, bool binary) {
  if (path.empty() || path == "-") {
    if (binary && isatty(fileno(stdout)))
      fail(ErrorKind::InvalidArgument, "refusing to write binary npy to a terminal: use --out FILE or redirect stdout");
    return std::unique_ptr<std::FILE, FileCloser>(stdout);
  }
  std::FILE* f = std::fopen(path.c_str(), binary ? "wb" : "w");
  if (!f) fail(ErrorKind::Io, path + ": cannot create the output file");
  return std::unique_ptr<std::FILE, FileCloser>(f);
}

// "\r[=====>     ] 120/500 texts  85.3 texts/s  ETA 4s" on stderr.
class Progress {
 public:
  explicit Progress(bool on) : on_(on), start_(std::chrono::steady_clock::now()) {}
  void update(size_t done, size_t total) {
    if (!on_ || total == 0) return;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double rate = secs > 0 ? done / secs : 0;
    const int width = 30, filled = static_cast<int>(width * done / total);
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < width) bar += '>' + std::string(static_cast<size_t>(width - filled - 1), ' ');
    const double eta = rate > 0 ? (total - done) / rate : 0;
    std::fprintf(stderr, "\r[%s] %zu/%zu texts  %.1f texts/s  ETA %.0fs ", bar.c_str(), done, total, rate, eta);
    if (done == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  bool on_;
  std::chrono::steady_clock::time_point start_;
};

[[noreturn]] void fail_at_line(const Status& s, const InputLines& in, const std::string& input) {
  std::string msg = s.message;
  if (s.index >= 0 && static_cast<size_t>(s.index) < in.line_numbers.size())
    msg = (input == "-" ? std::string("stdin") : input) + ": line " + std::to_string(in.line_numbers[s.index]) + ": " + msg;
  if (msg.find("tokens, more than the limit") != std::string::npos)
    msg += " (use --truncate to cut long lines, or --max-tokens to change the limit)";
  fail(s.kind, msg);
}

}  // namespace

bool is_gguf_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char magic[4] = {};
  const bool ok = std::fread(magic, 1, 4, f) == 4 && std::string(magic, 4) == "GGUF";
  std::fclose(f);
  return ok;
}

std::string resolve_model(const std::string& model) {
  if (!model.empty() && model != "default") return model;
  if (const char* env = std::getenv("EMBED_MODEL"); env && *env) return env;
  const char* cache = std::getenv("EMBED_CACHE");
  const char* home = std::getenv("HOME");
  const std::string dir = cache && *cache ? std::string(cache) : std::string(home ? home : ".") + "/.cache/embed";
  const std::string path = dir + "/models/all-MiniLM-L6-v2-f16.gguf";
  if (!is_gguf_file(path))
    fail(ErrorKind::Io, "no model given and the default model is not installed at " + path +
                            ": run `tools/models.sh default` once, or pass a GGUF file");
  return path;
}

std::optional<Pooling> parse_pooling_flag(const std::string& s) {
  if (s.empty()) return std::nullopt;
  Pooling p;
  if (!parse_pooling(s, &p)) fail(ErrorKind::InvalidArgument, "unknown --pooling '" + s + "' (none, mean, cls, last, hybrid, rank)");
  return p;
}

TruncationDirection parse_direction_flag(const std::string& s) {
  TruncationDirection d = TruncationDirection::Right;
  if (!s.empty() && !parse_truncation_direction(s, &d))
    fail(ErrorKind::InvalidArgument, "unknown --truncate-direction '" + s + "' (left, right)");
  return d;
}

std::shared_ptr<const Model> load_model(const std::string& model, const std::string& device, int threads,
                                        const std::string& compat, const std::string& compute_type) {
  ModelOptions mo;
  mo.threads = threads;
  if (device == "cuda") mo.device = Device::Cuda;
  else if (device != "cpu") fail(ErrorKind::InvalidArgument, "unknown --device '" + device + "' (cpu, cuda)");
  if (compat == "llama.cpp") mo.llama_cpp_rounding = true;
  else if (!compat.empty()) fail(ErrorKind::InvalidArgument, "unknown --compat '" + compat + "' (llama.cpp)");
  if (compute_type == "bf16") mo.compute_type = ComputeType::BF16;
  else if (compute_type == "int8") mo.compute_type = ComputeType::Int8;
  else if (!compute_type.empty() && compute_type != "f32")
    fail(ErrorKind::InvalidArgument, "unknown --compute-type '" + compute_type + "' (f32, bf16, int8)");
  auto loaded = Model::load(resolve_model(model), mo);
  if (!loaded) fail(loaded.error().kind, loaded.error().message);
  return loaded.value();
}

// The lines of the input (--skip-empty reported on stderr); at least one.
InputLines read_input(const EmbedCommand& o) {
  const InputLines in = read_lines(o.input, o.skip_empty);
  if (!in.skipped.empty()) {
    std::string list;
    for (size_t i = 0; i < in.skipped.size() && i < 20; i++) list += (i ? ", " : "") + std::to_string(in.skipped[i]);
    std::fprintf(stderr, "embed: skipped %zu empty line(s): %s%s\n", in.skipped.size(), list.c_str(), in.skipped.size() > 20 ? ", ..." : "");
  }
  if (in.texts.empty()) fail(ErrorKind::InvalidArgument, (o.input == "-" ? std::string("stdin") : o.input) + ": no text to embed");
  return in;
}

// The rows of every line (--verbose tokens and --progress on stderr); errors name the line.
Embeddings embed_lines(const EmbedCommand& o, const Request& req, const InputLines& in, const std::shared_ptr<const Model>& model) {
  RunSettings settings;
  settings.batch_tokens = o.batch_tokens;
  Context ctx(model, o.threads);

  if (o.verbose) {
    // The sequences the engine runs, from the same tokenization (prompt, split_special, limits).
    const tok::Tokenizer& tk = model->tokenizer();
    try {
      const Tokenized t = tokenize_texts(*model, resolve_request(model->describe(), req, Task::Embed), in.texts);
      for (size_t i = 0; i < t.seqs.size(); i++) {
        const std::vector<int32_t>& ids = t.seqs[i].ids;
        std::string pieces;
        for (size_t k = 0; k < ids.size() && k < 64; k++) pieces += (k ? " " : "") + std::string(tk.piece(ids[k]));
        std::fprintf(stderr, "line %zu: %zu tokens: %s%s\n", in.line_numbers[i], ids.size(), pieces.c_str(), ids.size() > 64 ? " ..." : "");
      }
    } catch (const Error&) {
      // The same error comes back from embed() below, with its line number.
    }
  }
  Progress progress(o.progress || isatty(fileno(stderr)));
  settings.progress = [&](size_t done, size_t total) { progress.update(done, total); };
  auto result = ctx.embed(in.texts, req, settings);
  if (!result) fail_at_line(result.error(), in, o.input);
  for (const std::string& w : result.value().warnings) std::fprintf(stderr, "embed: warning: %s\n", w.c_str());
  return std::move(result).value();
}

// The request the flags describe (the same for embed and calibrate).
Request request_from_flags(const EmbedCommand& o) {
  Request req;
  req.pooling = parse_pooling_flag(o.pooling);
  req.normalize = o.normalize;
  req.dimensions = o.dims;
  if (o.prefix_given && !o.prompt_name.empty()) fail(ErrorKind::InvalidArgument, "give either --prefix or --prompt-name, not both");
  if (o.prefix_given) req.prompt = o.prefix;
  req.prompt_name = o.prompt_name;
  if (o.template_given) req.prompt_template = o.prompt_template;
  req.max_tokens = o.max_tokens;
  req.truncate = o.truncate;
  req.truncation_direction = parse_direction_flag(o.truncate_direction);
  req.exclude_special = o.exclude_special;
  req.split_special = o.split_special;
  if (!o.precision.empty() && !parse_precision(o.precision, &req.precision))
    fail(ErrorKind::InvalidArgument, "unknown --precision '" + o.precision + "' (float32, int8, uint8, binary, ubinary)");
  if (!o.ranges.empty()) req.ranges = std::make_shared<QuantizationRanges>(load_ranges(o.ranges));
  req.kv_embedding = o.kv_embedding;
  if (!o.kv_layers.empty()) {
    int a = 0, b = 0;
    char dash = 0, extra = 0;
    if (std::sscanf(o.kv_layers.c_str(), "%d%c%d%c", &a, &dash, &b, &extra) != 3 || dash != '-')
      fail(ErrorKind::InvalidArgument, "--kv-layers '" + o.kv_layers + "' is not a band A-B (e.g. 6-11)");
    req.kv_layers = std::make_pair(a, b);
  }
  if (!o.kv_bias.empty()) {
    char* end = nullptr;
    const float b = std::strtof(o.kv_bias.c_str(), &end);
    if (end == o.kv_bias.c_str() || *end) fail(ErrorKind::InvalidArgument, "--kv-bias '" + o.kv_bias + "' is not a number");
    req.kv_bias = b;
  }
  return req;
}

int run_embed(const EmbedCommand& o) {
  Format fmt = Format::Jsonl;
  if (!o.format.empty() && !parse_format(o.format, &fmt))
    fail(ErrorKind::InvalidArgument, "unknown --format '" + o.format + "' (json, jsonl, csv, npy, raw)");
  const Request req = request_from_flags(o);
  if (o.similarity && req.precision != Precision::Float32)
    fail(ErrorKind::InvalidArgument, "--similarity compares float vectors: leave out --precision");
  const InputLines in = read_input(o);
  const std::shared_ptr<const Model> model = load_model(o.model, o.device, o.threads, o.compat, o.compute_type);
  const Embeddings e = embed_lines(o, req, in, model);

  OutputMeta meta;
  meta.model = model->describe().path;
  for (size_t n : in.line_numbers) meta.indices.push_back(n - 1);
  for (int32_t n : e.n_tokens) meta.total_tokens += n;
  const bool per_token = !e.row_offsets.empty();
  if (o.similarity) {
    if (per_token) fail(ErrorKind::InvalidArgument, "--similarity needs pooled vectors, not --pooling none");
    auto out = open_output(o.out, fmt == Format::Npy);
    const std::vector<float> sim = cosine_matrix(e);
    if (o.format.empty()) write_similarity_table(out.get(), sim, e.rows, in.texts);
    else write_similarity(out.get(), fmt, sim, e.rows, in.texts);
    return kExitOk;
  }
  if (per_token && fmt != Format::Json && fmt != Format::Jsonl)
    fail(ErrorKind::InvalidArgument, "--pooling none gives one vector per token; only --format json or jsonl can hold that");
  auto out = open_output(o.out, fmt == Format::Npy);
  if (per_token) write_token_embeddings(out.get(), fmt, e, meta);
  else write_embeddings(out.get(), fmt, e, meta);
  if (std::fflush(out.get()) != 0) fail(ErrorKind::Io, "cannot write the output");
  return kExitOk;
}

int run_calibrate(const EmbedCommand& o) {
  if (o.out.empty()) fail(ErrorKind::InvalidArgument, "give the ranges file to write with -o FILE");
  const Request req = request_from_flags(o);
  const InputLines in = read_input(o);
  if (in.texts.size() < 2) fail(ErrorKind::InvalidArgument, "calibration needs at least 2 texts (hundreds give stable ranges)");
  const std::shared_ptr<const Model> model = load_model(o.model, o.device, o.threads, o.compat, o.compute_type);
  const Embeddings e = embed_lines(o, req, in, model);
  QuantizationRanges r = ranges_from_rows(e.data.data(), e.rows, e.cols);
  const std::string& path = model->describe().path;
  r.model = path.substr(path.find_last_of('/') + 1);
  r.pooling = pooling_name(req.pooling.value_or(model->describe().default_pooling));
  r.normalize = o.normalize;
  const std::string json = ranges_to_json(r);
  std::FILE* f = std::fopen(o.out.c_str(), "w");
  if (!f) fail(ErrorKind::Io, o.out + ": cannot create the ranges file");
  const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  if (std::fclose(f) != 0 || !ok) fail(ErrorKind::Io, o.out + ": cannot write the ranges file");
  std::fprintf(stderr, "embed: ranges of %lld dimensions from %lld texts written to %s\n", static_cast<long long>(e.cols),
               static_cast<long long>(e.rows), o.out.c_str());
  return kExitOk;
}

}  // namespace embed::cli
