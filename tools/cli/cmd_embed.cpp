// `embed [MODEL] INPUT`: one result per input record, in order, in the chosen format. A thin
// layer over the public API that streams: records are read and embedded a block at a time and
// each block's rows written as soon as it finishes, so memory holds a block, not the corpus;
// --resume continues a killed run's output, --dedup embeds a repeated text once. Also `embed
// calibrate` (the ranges of --precision int8 / uint8).
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <unordered_map>

#include "engine/api.h"
#include "engine/pipeline.h"
#include "engine/quantize.h"
#include "tokenizer/tokenizer.h"
#include "tools/cli/commands.h"
#include "tools/cli/input.h"
#include "tools/cli/output.h"
#include "tools/cli/records.h"
#include "tools/cli/row_writer.h"
#include "tools/convert/encode.h"

namespace embed::cli {
namespace {

// "\r[=====>     ] 41%  120000 rows  8500.3 rows/s  ETA 1m04s" on stderr; the fraction comes from
// the bytes read of the input (no ETA when its size is unknown: stdin, pipes).
class Progress {
 public:
  explicit Progress(bool on) : on_(on), start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  void update(size_t rows, uint64_t bytes, uint64_t size, bool done) {
    if (!on_) return;
    const double secs = seconds(), rate = secs > 0 ? rows / secs : 0;
    const double frac = done ? 1.0 : size > 0 ? static_cast<double>(bytes) / size : 0.0;
    std::string line;
    char buf[160];
    if (size > 0 || done) {
      const int width = 30, filled = static_cast<int>(width * frac);
      std::string bar(static_cast<size_t>(filled), '=');
      if (filled < width) bar += '>' + std::string(static_cast<size_t>(width - filled - 1), ' ');
      const double eta = frac > 0 ? secs * (1 - frac) / frac : 0;
      std::snprintf(buf, sizeof buf, "\r[%s] %3.0f%%  %zu rows  %.1f rows/s  ETA %dm%02ds ", bar.c_str(), 100 * frac, rows, rate,
                    static_cast<int>(eta) / 60, static_cast<int>(eta) % 60);
    } else {
      std::snprintf(buf, sizeof buf, "\r%zu rows  %.1f rows/s ", rows, rate);
    }
    std::fputs(buf, stderr);
    if (done) std::fputs("\n", stderr);
    std::fflush(stderr);
  }
  bool on() const { return on_; }

 private:
  bool on_;
  std::chrono::steady_clock::time_point start_;
};


// The error of input `index` of a block, with its line in the input file.
[[noreturn]] void fail_at_record(const Status& s, const std::vector<Record>& block, const std::string& name) {
  std::string msg = s.message;
  if (s.index >= 0 && static_cast<size_t>(s.index) < block.size())
    msg = name + ": line " + std::to_string(block[static_cast<size_t>(s.index)].line) + ": " + msg;
  if (s.code == StatusCode::InputTooLong)
    msg += " (use --truncate to cut long lines, --long chunk to embed them in windows, or --max-tokens to change the limit)";
  fail(s.kind, msg);
}

// Rows of texts embedded before (--dedup), as bytes (floats, or quantized codes with
// --precision): at most `budget` bytes of rows, the oldest dropped first. A text embedded again
// gives the same row (rows do not depend on batching), so the budget only bounds the work saved.
class DedupCache {
 public:
  explicit DedupCache(size_t budget) : budget_(budget) {}
  const std::string* find(const std::string& text) const {
    const auto it = rows_.find(text);
    return it == rows_.end() ? nullptr : &it->second;
  }
  void add(const std::string& text, const void* row, size_t bytes) {
    if (rows_.count(text)) return;
    rows_.emplace(text, std::string(static_cast<const char*>(row), bytes));
    order_.push_back(text);
    bytes_ += text.size() + bytes + 64;
    while (bytes_ > budget_ && !order_.empty()) {
      const auto it = rows_.find(order_.front());
      bytes_ -= order_.front().size() + it->second.size() + 64;
      rows_.erase(it);
      order_.pop_front();
    }
  }
  // The rows' shape (Embeddings::cols, code_bytes), from the first block that embedded a text.
  int64_t cols = 0, code_bytes = 0;

 private:
  size_t budget_, bytes_ = 0;
  std::unordered_map<std::string, std::string> rows_;
  std::deque<std::string> order_;
};

struct Totals {
  size_t rows = 0, inputs = 0, truncated = 0, deduplicated = 0;
  int64_t tokens = 0;
};

// One block: its texts embedded (each distinct text once with --dedup), the rows in block order.
Embeddings embed_block(Context& ctx, const Request& req, const RunSettings& settings, const std::vector<Record>& block,
                       DedupCache* dedup, const std::string& name, Totals& totals) {
  std::vector<std::string> texts;
  std::vector<std::vector<CharSpan>> spans;
  bool any_spans = false;
  std::vector<int64_t> source(block.size(), -1);  // dedup: the text's row among `texts`, or -1: cached
  std::unordered_map<std::string, int64_t> first;
  std::vector<size_t> index_of;  // texts[k] is block[index_of[k]]
  for (size_t i = 0; i < block.size(); i++) {
    if (dedup) {
      if (dedup->find(block[i].text)) continue;
      if (const auto it = first.find(block[i].text); it != first.end()) {
        source[i] = it->second;
        continue;
      }
      first.emplace(block[i].text, static_cast<int64_t>(texts.size()));
    }
    source[i] = static_cast<int64_t>(texts.size());
    index_of.push_back(i);
    texts.push_back(block[i].text);
    spans.push_back(block[i].spans);
    any_spans |= block[i].has_spans;
  }
  if (any_spans && !req.late_chunking)
    fail(ErrorKind::InvalidArgument, name + ": line " + std::to_string(block[index_of[0]].line) + " (or later) has chunk spans: add --late-chunking");
  Embeddings e;
  if (!texts.empty()) {
    auto result = any_spans ? ctx.embed(texts, spans, req, settings) : ctx.embed(texts, req, settings);
    if (!result) {
      Status s = result.error();
      if (s.index >= 0) s.index = static_cast<int64_t>(index_of[static_cast<size_t>(s.index)]);
      fail_at_record(s, block, name);
    }
    e = std::move(result.value());
  }
  for (const std::string& w : e.warnings) std::fprintf(stderr, "embed: warning: %s\n", w.c_str());
  totals.truncated += e.truncated;
  for (int32_t n : e.n_tokens) totals.tokens += n;
  if (!dedup) return e;
  // Rows in block order, from this block's texts or the cache.
  const bool quantized = req.precision != Precision::Float32;
  if (!texts.empty()) dedup->cols = e.cols, dedup->code_bytes = e.code_bytes;
  const size_t row_bytes = quantized ? static_cast<size_t>(dedup->code_bytes) : static_cast<size_t>(dedup->cols) * sizeof(float);
  auto row_of = [&](int64_t k) {
    return quantized ? static_cast<const void*>(e.code_row(k)) : static_cast<const void*>(e.row(k));
  };
  Embeddings out;
  out.rows = static_cast<int64_t>(block.size());
  out.cols = dedup->cols;
  out.precision = req.precision;
  out.code_bytes = dedup->code_bytes;
  std::vector<uint8_t> bytes(block.size() * row_bytes);
  for (size_t i = 0; i < block.size(); i++) {
    const void* row = source[i] >= 0 ? row_of(source[i]) : static_cast<const void*>(dedup->find(block[i].text)->data());
    std::memcpy(bytes.data() + i * row_bytes, row, row_bytes);
    if (source[i] < 0 || index_of[static_cast<size_t>(source[i])] != i) totals.deduplicated++;
  }
  if (quantized) {
    out.codes = std::move(bytes);
  } else {
    out.data.resize(block.size() * static_cast<size_t>(out.cols));
    if (!bytes.empty()) std::memcpy(out.data.data(), bytes.data(), bytes.size());
  }
  for (size_t k = 0; k < texts.size(); k++) dedup->add(texts[k], row_of(static_cast<int64_t>(k)), row_bytes);
  return out;
}

// The sequences the engine runs, from the same tokenization (prompt, split_special, limits): one
// per line, or with --long chunk / --late-chunking each window of a line.
void print_tokens(const Model& model, const Request& req, const std::vector<Record>& block) {
  const tok::Tokenizer& tk = model.tokenizer();
  std::vector<std::string> texts;
  for (const Record& r : block) texts.push_back(r.text);
  try {
    const Tokenized t = tokenize_texts(model, resolve_request(model.describe(), req, Task::Embed), texts);
    for (size_t i = 0; i < t.seqs.size(); i++) {
      const std::vector<int32_t>& ids = t.seqs[i].ids;
      std::string pieces;
      for (size_t k = 0; k < ids.size() && k < 64; k++) {
        if (k) pieces += ' ';
        pieces += tk.piece(ids[k]);
      }
      std::fprintf(stderr, "%s %zu: %zu tokens: %s%s\n", t.parts.empty() ? "line" : "sequence", t.parts.empty() ? block[i].line : i + 1, ids.size(),
                   pieces.c_str(), ids.size() > 64 ? " ..." : "");
    }
  } catch (const Error&) {
    // The same error comes back from embed() below, with its line number.
  }
}

void report_skipped(const RecordReader& in) {
  if (in.skipped_count() == 0) return;
  std::string list;
  for (size_t i = 0; i < in.skipped().size(); i++) list += (i ? ", " : "") + std::to_string(in.skipped()[i]);
  std::fprintf(stderr, "embed: skipped %zu empty line(s): %s%s\n", in.skipped_count(), list.c_str(), in.skipped_count() > in.skipped().size() ? ", ..." : "");
}

// --similarity: every row is needed at once (the matrix is n x n anyway).
int run_similarity(const EmbedCommand& o, Format fmt, Context& ctx, const Request& req, const RunSettings& settings,
                   RecordReader& in) {
  std::vector<std::string> texts;
  for (Record r; in.next(r);) texts.push_back(std::move(r.text));
  report_skipped(in);
  if (texts.empty()) fail(ErrorKind::InvalidArgument, in.name() + ": no text to embed");
  auto result = ctx.embed(texts, req, settings);
  if (!result) fail(result.error().kind, result.error().message);
  const Embeddings& e = result.value();
  if (!e.row_offsets.empty()) usage_fail("--similarity needs one pooled vector per input");
  const std::vector<float> sim = cosine_matrix(e);
  std::FILE* out = stdout;
  if (!o.out.empty() && o.out != "-" && !(out = std::fopen(o.out.c_str(), fmt == Format::Npy ? "wb" : "w")))
    fail(ErrorKind::Io, o.out + ": cannot create the output file");
  if (o.format.empty()) write_similarity_table(out, sim, e.rows, texts);
  else write_similarity(out, fmt, sim, e.rows, texts);
  if (out != stdout) std::fclose(out);
  return kExitOk;
}

// Records of the input, counted without embedding them (npy to a pipe needs the count first).
size_t count_records(const std::string& input, InputFormat f, const RecordFields& fields, bool skip_empty) {
  RecordReader in(input, f, fields, skip_empty);
  size_t n = 0;
  for (Record r; in.next(r);) n++;
  return n;
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

std::optional<Pooling> parse_pooling_flag(const std::string& s) {
  if (s.empty()) return std::nullopt;
  Pooling p;
  if (!parse_pooling(s, &p)) usage_fail("unknown --pooling '" + s + "' (none, mean, cls, last, hybrid, rank)");
  return p;
}

Precision parse_precision_flag(const std::string& s) {
  Precision p = Precision::Float32;
  if (!parse_precision(s, &p)) usage_fail("unknown --precision '" + s + "' (float32, int8, uint8, binary, ubinary)");
  return p;
}

std::pair<int, int> parse_kv_layers_flag(const std::string& s) {
  int a = 0, b = 0;
  char dash = 0, extra = 0;
  if (std::sscanf(s.c_str(), "%d%c%d%c", &a, &dash, &b, &extra) != 3 || dash != '-')
    usage_fail("--kv-layers '" + s + "' is not a band A-B (e.g. 6-11)");
  return {a, b};
}

float parse_kv_bias_flag(const std::string& s) {
  char* end = nullptr;
  const float b = std::strtof(s.c_str(), &end);
  if (end == s.c_str() || *end) usage_fail("--kv-bias '" + s + "' is not a number");
  return b;
}

TruncationDirection parse_direction_flag(const std::string& s) {
  TruncationDirection d = TruncationDirection::Right;
  if (!s.empty() && !parse_truncation_direction(s, &d))
    usage_fail("unknown --truncate-direction '" + s + "' (left, right)");
  return d;
}

SourceOptions source_options(const SourceFlags& f) {
  SourceOptions s;
  s.cache_gguf = f.cache_gguf;
  if (!f.convert_type.empty()) {
    if (!convert::out_type_from_name(f.convert_type))
      usage_fail("unknown --convert-type '" + f.convert_type + "' (f32, f16, bf16, q8_0)");
    s.convert_type = f.convert_type;
  }
  return s;
}

std::shared_ptr<const Model> load_model(const std::string& model, const LoadFlags& f) {
  ModelOptions mo;
  mo.threads = f.threads;
  if (f.device == "cuda") mo.device = Device::Cuda;
  else if (f.device != "cpu") usage_fail("unknown --device '" + f.device + "' (cpu, cuda)");
  if (f.compat == "llama.cpp") mo.llama_cpp_rounding = true;
  else if (!f.compat.empty()) usage_fail("unknown --compat '" + f.compat + "' (llama.cpp)");
  if (f.compute_type == "bf16") mo.compute_type = ComputeType::BF16;
  else if (f.compute_type == "int8") mo.compute_type = ComputeType::Int8;
  else if (!f.compute_type.empty() && f.compute_type != "f32")
    usage_fail("unknown --compute-type '" + f.compute_type + "' (f32, bf16, int8)");
  auto loaded = open_model(model, mo, source_options(f.source));
  if (!loaded) fail(loaded.error().kind, loaded.error().message);
  return loaded.value();
}

const FieldNames& cli_field_names() {
  static const FieldNames names{{{"pooling", "--pooling"},
                                 {"normalize", "--normalize"},
                                 {"dimensions", "--dims"},
                                 {"prompt", "--prefix"},
                                 {"prompt_name", "--prompt-name"},
                                 {"prompt_template", "--template"},
                                 {"max_tokens", "--max-tokens"},
                                 {"truncate", "--truncate"},
                                 {"exclude_special", "--exclude-special"},
                                 {"precision", "--precision"},
                                 {"ranges", "--ranges"},
                                 {"long_inputs", "--long"},
                                 {"long_overlap", "--long-overlap"},
                                 {"late_chunking", "--late-chunking"},
                                 {"chunk_tokens", "--chunk-tokens"},
                                 {"chunk_separator", "--chunk-separator"},
                                 {"kv_embedding", "--kv-embedding"},
                                 {"kv_layers", "--kv-layers"},
                                 {"kv_bias", "--kv-bias"}}};
  return names;
}

void check_request_flags(const Model& model, const Request& r, Task task) {
  try {
    (void)resolve_request(model.describe(), r, task, cli_field_names());
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::InvalidArgument) throw;
    usage_fail(e.what());
  }
}

Request request_from_flags(const EmbedCommand& o) {
  Request req;
  req.pooling = parse_pooling_flag(o.pooling);
  req.normalize = o.normalize;
  req.dimensions = o.dims;
  if (o.prefix_given && !o.prompt_name.empty()) usage_fail("give either --prefix or --prompt-name, not both");
  if (o.prefix_given) req.prompt = o.prefix;
  req.prompt_name = o.prompt_name;
  if (o.template_given) req.prompt_template = o.prompt_template;
  req.max_tokens = o.max_tokens;
  req.truncate = o.truncate;
  req.truncation_direction = parse_direction_flag(o.truncate_direction);
  req.exclude_special = o.exclude_special;
  req.split_special = o.split_special;
  if (!o.precision.empty()) req.precision = parse_precision_flag(o.precision);
  if (!o.ranges.empty()) req.ranges = std::make_shared<QuantizationRanges>(load_ranges(o.ranges));
  req.kv_embedding = o.kv_embedding;
  if (!o.kv_layers.empty()) req.kv_layers = parse_kv_layers_flag(o.kv_layers);
  if (!o.kv_bias.empty()) req.kv_bias = parse_kv_bias_flag(o.kv_bias);
  if (!o.long_inputs.empty() && !parse_long_inputs(o.long_inputs, &req.long_inputs))
    usage_fail("unknown --long '" + o.long_inputs + "' (error, chunk)");
  req.long_overlap = o.long_overlap;
  req.late_chunking = o.late_chunking;
  if (!o.chunk_by.empty() && !parse_chunk_rule(o.chunk_by, &req.chunk_rule))
    usage_fail("unknown --chunk-by '" + o.chunk_by + "' (tokens, sentences, separator)");
  req.chunk_tokens = o.chunk_tokens;
  req.chunk_separator = o.chunk_separator;
  return req;
}

int run_embed(const EmbedCommand& o) {
  Format fmt = Format::Jsonl;
  if (!o.format.empty() && !parse_format(o.format, &fmt))
    usage_fail("unknown --format '" + o.format + "' (json, jsonl, csv, npy, raw)");
  const Request req = request_from_flags(o);
  if (o.similarity && req.precision != Precision::Float32)
    usage_fail("--similarity compares float vectors: leave out --precision");
  RunSettings settings;
  settings.batch_tokens = o.batch_tokens;
  const InputFormat in_format = input_format(o.input_format, o.input);
  RecordFields fields;
  if (!o.text_field.empty()) fields.text = o.text_field;
  if (!o.id_field.empty()) fields.id = o.id_field, fields.id_required = true;
  if (!o.spans_field.empty()) fields.spans = o.spans_field;
  if (o.block < 1) usage_fail("--block " + std::to_string(o.block) + " must be positive");

  const RowShape shape = req.late_chunking ? RowShape::Chunks : req.pooling == Pooling::None ? RowShape::PerToken : RowShape::Pooled;
  if (shape != RowShape::Pooled && !o.similarity) {
    const bool ok = fmt == Format::Json || fmt == Format::Jsonl || (shape == RowShape::Chunks && fmt == Format::Npy);
    if (!ok)
      usage_fail(shape == RowShape::PerToken ? "--pooling none gives one vector per token; only --format json or jsonl can hold that"
                                                                   : "--late-chunking gives one vector per chunk: --format jsonl, json, or npy with --spans-out");
    if (o.dedup) usage_fail("--dedup applies to one vector per input (not --pooling none or --late-chunking)");
  }
  if (!o.spans_out.empty() && !(shape == RowShape::Chunks && fmt == Format::Npy))
    usage_fail("--spans-out goes with --late-chunking and -f npy");
  if (shape == RowShape::Chunks && fmt == Format::Npy && o.spans_out.empty())
    usage_fail("--late-chunking with -f npy needs --spans-out FILE for the chunks' spans");

  if (o.outputs.empty() && (o.sparse_top_k != 0 || o.sparse_tokens)) usage_fail("--sparse-top-k and --sparse-tokens go with --output sparse");
  if (o.sparse_top_k < 0) usage_fail("--sparse-top-k " + std::to_string(o.sparse_top_k) + " must be positive");
  std::optional<Outputs> outputs;
  if (!o.outputs.empty()) {
    outputs = parse_outputs_flag(o.outputs);
    if ((o.sparse_top_k != 0 || o.sparse_tokens) && !outputs->sparse) usage_fail("--sparse-top-k and --sparse-tokens go with --output sparse");
    if (fmt != Format::Jsonl) usage_fail("--output writes JSON lines: leave out --format");
    if (o.similarity || o.dedup || o.resume || shape != RowShape::Pooled)
      usage_fail("--output takes one pooled row per input: leave out --similarity, --dedup, --resume, --late-chunking and --pooling none");
  }

  RecordReader in(o.input, in_format, fields, o.skip_empty);
  const std::shared_ptr<const Model> model = load_model(o.model, {o.device, o.threads, o.compat, o.compute_type, o.source});
  check_request_flags(*model, req, Task::Embed);
  Context ctx(model, o.threads);
  if (outputs) return run_outputs(o, *outputs, req, settings, ctx, in);
  if (o.similarity) return run_similarity(o, fmt, ctx, req, settings, in);

  RowWriterOptions wo;
  wo.path = o.out;
  wo.format = fmt;
  wo.shape = shape;
  wo.model = model->describe().path;
  wo.resume = o.resume;
  wo.spans_path = o.spans_out;
  // npy to stdout that cannot seek (a pipe): the row count goes first, from a pass over the input.
  if (fmt == Format::Npy && (o.out.empty() || o.out == "-") && lseek(fileno(stdout), 0, SEEK_CUR) < 0) {
    if (o.input == "-" || shape == RowShape::Chunks)
      usage_fail("npy to a pipe needs the row count first: give the input as a file (not with --late-chunking), or use --out FILE");
    wo.npy_rows = static_cast<int64_t>(count_records(o.input, in_format, fields, o.skip_empty));
  }
  // Writing over the input would destroy it before it is read.
  struct stat si, so;
  if (o.input != "-" && !o.out.empty() && o.out != "-" && stat(o.input.c_str(), &si) == 0 && stat(o.out.c_str(), &so) == 0 &&
      si.st_dev == so.st_dev && si.st_ino == so.st_ino)
    usage_fail(o.out + " is the input file: give another --out");
  RowWriter writer(wo);

  // Resume: the inputs the output already holds are read again, not embedded.
  Record rec;
  size_t done = 0;
  for (; done < writer.resumed(); done++)
    if (!in.next(rec))
      fail(ErrorKind::InvalidArgument, o.out + " holds " + std::to_string(writer.resumed()) + " rows but " + in.name() + " has only " +
                                           std::to_string(done) + " inputs: it is not this input's output");
  if (writer.resumed() > 0 && writer.resumed_last_index() >= 0 && writer.resumed_last_index() != static_cast<int64_t>(rec.index))
    fail(ErrorKind::InvalidArgument, o.out + ": its last row has index " + std::to_string(writer.resumed_last_index()) + ", but this input's " +
                                         std::to_string(done) + "th text has index " + std::to_string(rec.index) + ": it is not this input's output");
  if (writer.resumed() > 0) std::fprintf(stderr, "embed: %s: resuming after %zu rows\n", o.out.c_str(), writer.resumed());

  Progress progress(o.progress || isatty(fileno(stderr)));
  std::unique_ptr<DedupCache> dedup = o.dedup ? std::make_unique<DedupCache>(size_t{64} << 20) : nullptr;
  Totals totals;
  for (;;) {
    std::vector<Record> block;
    size_t bytes = 0;
    while (block.size() < static_cast<size_t>(o.block) && bytes < (size_t{8} << 20) && in.next(rec)) {
      bytes += rec.text.size();
      block.push_back(std::move(rec));
    }
    if (block.empty()) break;
    if (o.verbose) print_tokens(*model, req, block);
    const Embeddings e = embed_block(ctx, req, settings, block, dedup.get(), in.name(), totals);
    std::vector<RowLabel> labels;
    for (const Record& r : block) labels.push_back(RowLabel{r.index, r.id_json});
    writer.write(e, labels);
    totals.inputs += block.size();
    totals.rows += static_cast<size_t>(e.rows);
    progress.update(totals.inputs + done, in.bytes_read(), in.file_size(), false);
  }
  report_skipped(in);
  if (totals.inputs + done == 0) fail(ErrorKind::InvalidArgument, in.name() + ": no text to embed");
  writer.finish(totals.tokens);
  if (progress.on()) {
    progress.update(totals.inputs + done, in.bytes_read(), in.file_size(), true);
    std::fprintf(stderr, "embed: %zu inputs -> %zu rows, %lld tokens, %zu truncated, %zu skipped, %zu deduplicated%s in %.1fs\n",
                 totals.inputs, totals.rows, static_cast<long long>(totals.tokens), totals.truncated, in.skipped_count(),
                 totals.deduplicated, done ? (" (" + std::to_string(done) + " resumed)").c_str() : "", progress.seconds());
  }
  return kExitOk;
}

int run_calibrate(const EmbedCommand& o) {
  if (o.out.empty()) usage_fail("give the ranges file to write with -o FILE");
  const Request req = request_from_flags(o);
  const InputLines in = read_lines(o.input, o.skip_empty);
  if (!in.skipped.empty()) std::fprintf(stderr, "embed: skipped %zu empty line(s)\n", in.skipped.size());
  if (in.texts.size() < 2) fail(ErrorKind::InvalidArgument, "calibration needs at least 2 texts (hundreds give stable ranges)");
  const std::shared_ptr<const Model> model = load_model(o.model, {o.device, o.threads, o.compat, o.compute_type, o.source});
  check_request_flags(*model, req, Task::Embed);
  Context ctx(model, o.threads);
  RunSettings settings;
  settings.batch_tokens = o.batch_tokens;
  Progress progress(o.progress || isatty(fileno(stderr)));
  settings.progress = [&](size_t done, size_t total) { progress.update(done, done, total, done == total); };
  auto result = ctx.embed(in.texts, req, settings);
  if (!result) {
    const Status& s = result.error();
    const std::string name = o.input == "-" ? std::string("stdin") : o.input;
    fail(s.kind, s.index >= 0 && static_cast<size_t>(s.index) < in.line_numbers.size()
                     ? name + ": line " + std::to_string(in.line_numbers[static_cast<size_t>(s.index)]) + ": " + s.message
                     : s.message);
  }
  for (const std::string& w : result.value().warnings) std::fprintf(stderr, "embed: warning: %s\n", w.c_str());
  const Embeddings& e = result.value();
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
