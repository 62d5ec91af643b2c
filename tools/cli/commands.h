// The `embed` command's subcommands: options structs and entry points. The CLI is a thin layer
// over the library; each run_* returns the process exit code (see docs/cli.md).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "engine/request.h"
#include "source/model_source.h"

namespace embed {
class Model;
}

namespace embed::cli {

// Exit codes (documented in docs/cli.md and printed by --help, both from kExitCodesHelp).
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;       // the model or the engine failed (invalid or unsupported model file, device)
constexpr int kExitUsage = 2;         // bad flags, arguments or option values
constexpr int kExitInput = 3;         // bad input data (a line or record that cannot be embedded)
constexpr int kExitIo = 4;            // a file could not be read or written
inline constexpr const char* kExitCodesHelp =
    "Exit codes: 0 ok; 1 model or engine failure (invalid or unsupported model file, device); 2 usage (unknown flag, "
    "missing argument, bad option value); 3 bad input data (a line that cannot be embedded); 4 a file could not be read or written.";

// A bad flag, argument or option value: exit code kExitUsage. Other InvalidArgument errors are
// about the input data (kExitInput).
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(ErrorKind::InvalidArgument, message) {}
};
[[noreturn]] inline void usage_fail(const std::string& message) { throw UsageError(message); }

// How the command's flags spell Request fields, for resolve_request's messages.
const FieldNames& cli_field_names();
// resolve_request(model, r, task) as a check of the flags before any input is read: a request the
// model cannot run is a UsageError naming the flags.
void check_request_flags(const Model& model, const Request& r, Task task);

// Where the model comes from (source/model_source.h): shared by every command that loads one.
struct SourceFlags {
  bool cache_gguf = false;    // --cache-gguf: an HF folder's conversion kept in the cache
  std::string convert_type;   // --convert-type: f32, f16, bf16, q8_0 (empty: f16, as embed convert)
};

struct EmbedCommand {
  std::string model;          // GGUF file, HF folder, Hub name, or "default"
  SourceFlags source;
  std::string input;          // path or "-"
  std::string pooling;        // empty: the model's
  int normalize = 2;
  std::optional<int> dims;    // --dims N (1..width); none: the full width
  std::string prefix;          // --prefix: explicit prompt text
  bool prefix_given = false;   // --prefix was on the command line (even as '')
  std::string prompt_name;     // --prompt-name (alias --prompt)
  int64_t max_tokens = 0;
  bool truncate = false;
  std::string truncate_direction;  // --truncate-direction left|right (empty: right)
  int threads = 0;
  int64_t batch_tokens = 0;
  std::string format;         // empty: jsonl (a table for --similarity)
  std::string out;
  bool similarity = false;
  bool verbose = false;
  bool progress = false;
  bool skip_empty = false;
  bool exclude_special = false;
  bool split_special = false;  // special-token text in the lines is plain text
  std::string device = "cpu";
  std::string compat;         // "llama.cpp": round activations like llama.cpp (empty: exact)
  std::string compute_type;   // f32 (default), bf16, int8
  // Long inputs and late chunking (engine/request.h).
  std::string long_inputs;    // --long error|chunk (empty: error)
  int64_t long_overlap = -1;
  bool late_chunking = false;
  std::string chunk_by;       // tokens (default), sentences, separator
  int64_t chunk_tokens = 256;
  std::string chunk_separator = "<<<CHUNK>>>";
  std::string spans_out;      // late chunking as npy: the chunks' spans
  // Structured input (tools/cli/records.h).
  std::string input_format;   // text, jsonl, csv, tsv (empty: by extension)
  std::string text_field, id_field, spans_field;
  // Bulk runs.
  bool resume = false;
  bool dedup = false;
  int64_t block = 4096;       // inputs embedded and written together
  std::string precision;      // --precision: float32 (default), int8, uint8, binary, ubinary
  std::string ranges;         // --ranges: calibration ranges file (int8 / uint8)
  bool kv_embedding = false;  // --kv-embedding
  std::string kv_layers;      // --kv-layers A-B (empty: the default band)
  std::string kv_bias;        // --kv-bias B (empty: 1.0)
  std::string prompt_template;  // --template '...{text}...'
  bool template_given = false;  // --template was on the command line (even as '')
  // BGE-M3's read-outs (tools/cli/cmd_outputs.cpp): any of dense, sparse, colbert, comma-separated.
  std::string outputs;          // --output (empty: the plain embedding rows)
  int64_t sparse_top_k = 0;     // --sparse-top-k: the k largest sparse weights (0: all)
  bool sparse_tokens = false;   // --sparse-tokens: each sparse entry with its vocabulary piece
};
int run_embed(const EmbedCommand& o);
// --output's read-outs, one JSON line per input (after run_embed has loaded the model).
Outputs parse_outputs_flag(const std::string& s);
class RecordReader;
int run_outputs(const EmbedCommand& o, const Outputs& outputs, const Request& req, const RunSettings& settings, Context& ctx,
                RecordReader& in);
// The request the flags describe (embed, calibrate and kv-layers); throws naming a bad flag.
Request request_from_flags(const EmbedCommand& o);
// `embed calibrate MODEL texts.txt -o ranges.json`: per-dimension ranges of the vectors the same
// request flags give, for --precision int8 / uint8 (format: engine/quantize.h, docs/cli.md).
int run_calibrate(const EmbedCommand& o);

// `embed kv-layers MODEL texts.txt [-o OUT.gguf]`: the TwoNN intrinsic dimension of each layer's
// last-token states over the texts (tokenized as the request flags say), the band of lowest
// dimension proposed for --kv-embedding, and with -o a copy of the model with that band stored.
struct KvLayersCommand {
  EmbedCommand request;     // model, input, threads and the request flags
  int width = 0;            // layers in the band (0: as many as the default middle third)
  int64_t sample = 1000;    // texts used at most (the first ones); TwoNN is O(n^2) in them
  std::string out;          // -o: the model with the band stored
  bool json = false;        // one JSON object on stdout instead of the table
};
int run_kv_layers(const KvLayersCommand& o);

struct RerankCommand {
  std::string model;
  SourceFlags source;
  std::string query;
  std::string documents;     // path or "-"
  int64_t top_n = 0;
  int64_t max_tokens = 0;
  std::string truncate_direction;  // which end of a long document is kept (empty: right = the start)
  bool split_special = false;  // special-token text in the query and documents is plain text
  std::string format;        // empty: text table; json, jsonl
  // A model with BGE-M3's heads and no classifier: compute_score's score by this name (dense,
  // sparse, colbert, sparse+dense, colbert+sparse+dense) with these weights (dense,sparse,colbert).
  std::string score;
  std::string weights = "1,1,1";
  int threads = 0;
  bool skip_empty = false;
  std::string device = "cpu";
  std::string compat;
  std::string compute_type;
};
int run_rerank(const RerankCommand& o);

// --cache-gguf and --convert-type as source/model_source.h takes them; throws naming the flag.
SourceOptions source_options(const SourceFlags& f);
bool is_gguf_file(const std::string& path);
// --pooling and --truncate-direction as the request type takes them; throws naming the flag.
std::optional<Pooling> parse_pooling_flag(const std::string& s);
TruncationDirection parse_direction_flag(const std::string& s);
// --precision, --kv-layers A-B and --kv-bias B as the request type takes them (shared by embed,
// calibrate and serve); throw naming the flag.
Precision parse_precision_flag(const std::string& s);
std::pair<int, int> parse_kv_layers_flag(const std::string& s);
float parse_kv_bias_flag(const std::string& s);
// How a command loads its model: --device ("cpu" or "cuda"), threads, --compat ("" or
// "llama.cpp"), --compute-type ("", f32, bf16, int8) and where the model comes from.
struct LoadFlags {
  std::string device = "cpu";
  int threads = 0;
  std::string compat, compute_type;
  SourceFlags source;
};
// Loads `model` (resolve_model, then a GGUF file, an HF folder or a Hub name); throws the
// loader's error, or names an unknown flag value.
std::shared_ptr<const Model> load_model(const std::string& model, const LoadFlags& f);

// `embed bench`: load time, batch throughput, single-text latency and peak RSS of Context::embed.
struct BenchCommand {
  std::string model;          // GGUF file, HF folder, Hub name, or "default"
  SourceFlags source;
  std::string input;          // one text per line (empty lines are left out), or "-"
  int threads = 0;            // 0: all cores
  int64_t batch_tokens = 0;   // 0: the library's default
  int64_t max_tokens = 0;
  bool truncate = false;
  std::string pooling;        // empty: the model's
  int repeat = 3;             // timed passes over the whole input, after one warm-up call
  int warmup = 0;             // texts in the warm-up call (0: all of them)
  std::string warmup_input;   // texts for the warm-up call instead of the input
  double min_seconds = 0;     // more passes until this much time has been spent
  int latency = 100;          // the first N texts embedded one at a time (0: no latency run)
  bool json = false;
  std::string device = "cpu";
  std::string compat;
  std::string compute_type;
  std::string outputs;        // --output: read-outs every pass computes (dense,sparse,colbert); empty: dense
};
int run_bench(const BenchCommand& o);

// `embed serve`: the HTTP server (tools/server/, docs/server.md). Defaults follow TEI's.
struct ServeCommand {
  std::string model;                     // the first model (optional with --model / --models-file)
  std::vector<std::string> models;       // --model NAME=MODEL, repeated
  std::string models_file;               // --models-file: NAME=MODEL lines
  std::string max_memory;                // --max-memory SIZE (empty: no bound)
  SourceFlags source;
  std::string host = "127.0.0.1";
  int port = 3000;                       // 0: any free port (printed on stderr)
  int threads = 0;                       // compute threads (0: all cores)
  int http_threads = 2;                  // transport threads (HTTP parsing, JSON, tokenization)
  std::string device = "cpu";
  std::string compat;
  std::string compute_type;              // f32 (default), bf16, int8
  std::string model_name;                // default: ORG/NAME for a Hub name, else the file name without .gguf
  size_t max_concurrent_requests = 512;
  int64_t max_batch_tokens = 16384;
  size_t max_client_batch_size = 32;
  size_t payload_limit = 2000000;
  bool auto_truncate = false;
  bool split_special = false;  // special-token text in every request is plain text
  int64_t max_input_tokens = 0;          // 0: the model's context length
  int64_t max_request_tokens = 0;        // 0: no bound beyond max_client_batch_size x max_input_tokens
  int64_t interactive_tokens = 512;
  std::string api_key;
  std::string cors;
  double read_timeout = 30;
  double keep_alive_timeout = 30;        // idle seconds between the requests of a connection
  size_t keep_alive_requests = 1000;     // requests per connection
  size_t max_connections = 0;            // 0: max_concurrent_requests + 64
  double drain_timeout = 60;
  // Defaults of every embedding request (a request's own fields win; docs/server.md).
  std::string pooling;          // --pooling: the embedding routes' pooling (empty: the model's)
  std::string precision;        // --precision: float32 (default), int8, uint8, binary, ubinary
  std::string ranges;           // --ranges FILE: calibration ranges of int8 / uint8 requests
  std::string prompt_template;  // --template '...{text}...'
  bool template_given = false;  // --template was on the command line
  bool kv_embedding = false;    // --kv-embedding
  std::string kv_layers;        // --kv-layers A-B (empty: the default band)
  std::string kv_bias;          // --kv-bias B (empty: 1.0)
  std::string long_inputs;      // --long error|chunk (empty: error)
  int64_t long_overlap = -1;    // --long-overlap N (-1: a quarter of the window)
};
int run_serve(const ServeCommand& o);

struct InfoOptions {
  std::string model;
  SourceFlags source;
  bool all_tensors = false;
};
int run_info(const InfoOptions& o);

struct ConvertOptions {
  std::string model_dir;  // HF / sentence-transformers folder, or a Hub repository of one
  std::string out_path;   // GGUF to write
  std::string type = "f16";
  std::string name;       // general.name (default: the folder's name)
};
int run_convert(const ConvertOptions& o);

struct TokenizeOptions {
  std::string model;
  SourceFlags source;
  std::string input = "-";  // a text file, or "-" for standard input
  bool pieces = false;       // print pieces instead of ids
  bool no_special = false;   // leave out the special tokens the model adds
  bool split_special = false;  // special-token text in the input is plain text
};
int run_tokenize(const TokenizeOptions& o);

}  // namespace embed::cli
