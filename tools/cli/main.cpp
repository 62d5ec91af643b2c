// Entry point of the `embed` command. `embed [MODEL] INPUT [flags]` embeds; `embed SUBCOMMAND
// ...` runs info, tokenize, rerank, convert, bench. Flags are parsed by CLI11; an unknown flag is an
// error that suggests the nearest known one. Errors print "embed: error: ..." on stderr and exit
// with the codes of commands.h (documented in docs/cli.md).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "tools/cli/commands.h"
#include "engine/prompts.h"

namespace embed::cli {
namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and adjacent
// transpositions ("fromat" is one step from "format").
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); i++) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); j++) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); i++)
    for (size_t j = 1; j <= b.size(); j++) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The known flag nearest to `flag`, or "" when none is close.
std::string nearest_flag(const CLI::App& app, const std::string& flag) {
  std::string best;
  size_t best_d = std::max<size_t>(2, flag.size() / 3) + 1;
  for (const CLI::Option* opt : app.get_options())
    for (const std::string& name : opt->get_lnames()) {
      const size_t d = edit_distance(flag, "--" + name);
      if (d < best_d) best_d = d, best = "--" + name;
    }
  return best;
}

// CLI11 would take an unknown "--flag" for a positional argument; check every flag first so the
// error names it and suggests the nearest known one.
void check_flags(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    const std::string arg = argv[i];
    if (arg == "--") return;
    if (arg.size() < 2 || arg[0] != '-' || arg == "-" || (std::isdigit(static_cast<unsigned char>(arg[1])))) continue;
    const std::string flag = arg.substr(0, arg.find('='));
    const CLI::Option* opt = nullptr;
    for (const CLI::Option* o : app.get_options()) {
      for (const std::string& n : o->get_lnames())
        if (flag == "--" + n) opt = o;
      for (const std::string& n : o->get_snames())
        if (flag == "-" + n) opt = o;
    }
    if (flag == "--help" || flag == "-h") return;
    if (!opt) {
      const std::string near = nearest_flag(app, flag);
      throw Error(ErrorKind::InvalidArgument, "unknown flag " + flag + (near.empty() ? "" : " (did you mean " + near + "?)") +
                                                  "; run `" + app.get_name() + " --help` for the options");
    }
    if (opt->get_expected_min() > 0 && arg.find('=') == std::string::npos) i++;  // skip its value
  }
}

int usage_error(const CLI::App& app, const CLI::ParseError& e) {
  std::fprintf(stderr, "embed: error: %s\nRun `%s --help` for the options.\n", e.what(), app.get_name().c_str());
  return kExitUsage;
}

int exit_code_for(const Error& e) {
  if (dynamic_cast<const UsageError*>(&e)) return kExitUsage;
  switch (e.kind()) {
    case ErrorKind::InvalidArgument: return kExitInput;
    case ErrorKind::Io: return kExitIo;
    default: return kExitFailure;
  }
}

std::string presets_help() {
  std::string s = "Prompt presets (--prompt-name NAME; the model's own prompts come first):\n";
  for (const PromptPreset& p : prompt_presets()) s += "  " + std::string(p.name) + ": " + p.use + "\n";
  return s;
}

// Parses argv for `app`; returns -1 when parsing succeeded, else the exit code.
int parse(CLI::App& app, int argc, char** argv) {
  try {
    check_flags(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e);
  } catch (const Error& e) {
    std::fprintf(stderr, "embed: error: %s\n", e.what());
    return kExitUsage;
  }
  return -1;
}

// --compat's and --compute-type's help, shared by embed, rerank and bench.
constexpr const char* kCompatHelp = "llama.cpp: round activations like llama.cpp's CPU backend (8-bit into quantized matmuls, f16 GELU table) for vectors closer to llama.cpp's; CPU only";
constexpr const char* kComputeTypeHelp =
    "Arithmetic of matmuls and attention: f32 (default: f32-grade results on every CPU), bf16 (one bf16 product per pair: "
    "faster, a little less exact: docs/kernels.md has the measured fidelity), int8 (8-bit products for quantized weights, as "
    "llama.cpp); see docs/cli.md";
// --split-special's help, shared by embed, rerank, tokenize and serve.
constexpr const char* kSplitSpecialHelp =
    "Read special-token text in the input ([SEP], <|endoftext|>) as plain text, for text you do not control "
    "(default: as the special token, like HF tokenizers and llama.cpp)";

// What a model argument may be, for every command's help.
constexpr const char* kModelHelp =
    "Model: a GGUF file, an HF / sentence-transformers folder, a Hugging Face Hub name ORG/NAME, ORG/NAME:QUANT or "
    "hf://ORG/NAME@REVISION (docs/cli.md), or 'default'";

// Where the model comes from: how an HF folder (or a Hub repository of one) is converted.
void add_source_flags(CLI::App& app, SourceFlags& s) {
  app.add_flag("--cache-gguf", s.cache_gguf, "An HF folder or Hub repository of one: convert it once into the cache ($EMBED_CACHE/gguf) "
               "and map that file, instead of converting it in memory at every load");
  app.add_option("--convert-type", s.convert_type, "Weight type of that conversion: f32, f16 (default, as embed convert), bf16, q8_0");
}

// The flags that say what to compute and how to run it, shared by embed and calibrate; returns
// --prefix (whose presence matters even when empty).
CLI::Option* add_request_flags(CLI::App& app, EmbedCommand& o) {
  app.add_option("--pooling", o.pooling, "none, mean, cls, last, hybrid, rank (default: the model's)");
  app.add_option("--normalize", o.normalize, "-1 none, 0 max-abs (int16 range), 1 L1, 2 L2 (default), p > 2 p-norm");
  app.add_option("--dims", o.dims, "Matryoshka: keep the first N dimensions, then normalize");
  CLI::Option* prefix = app.add_option("--prefix", o.prefix, "Prompt text prepended to every line (e.g. 'query: '); '' turns off the model's default prompt");
  app.add_option("--prompt-name,--prompt", o.prompt_name, "A prompt by name: the model's own (GGUF metadata), else a preset (see below)");
  app.add_option("--template", o.prompt_template, "Prompt template with a {text} slot, e.g. 'This sentence: \"{text}\" means in one word: \"'")
      ->each([&o](const std::string&) { o.template_given = true; });
  app.add_option("--max-tokens", o.max_tokens, "Token limit per line (default: the model's context length)");
  app.add_flag("--truncate", o.truncate, "Cut lines longer than the limit instead of failing");
  app.add_option("--truncate-direction", o.truncate_direction, "right (default): keep the start of a long line; left: keep its end");
  app.add_option("-t,--threads", o.threads, "CPU threads (default: all cores)");
  app.add_option("--batch-tokens", o.batch_tokens, "Tokens per forward pass (default 4096; a causal model runs a longer text in pieces of this size)");
  app.add_option("--long", o.long_inputs, "A text longer than --max-tokens: error (default), or chunk: windows of max-tokens, each pooled, "
                 "combined by their token-weighted mean (docs/long-inputs.md)");
  app.add_option("--long-overlap", o.long_overlap, "Tokens two consecutive windows share (default: a quarter of the window)");
  app.add_flag("--skip-empty", o.skip_empty, "Leave empty lines out (reported on stderr) instead of failing");
  app.add_flag("--exclude-special", o.exclude_special, "Mean pooling without special tokens ([CLS], [SEP], BOS, EOS)");
  app.add_flag("--split-special", o.split_special, kSplitSpecialHelp);
  app.add_flag("--progress", o.progress, "Show a progress bar on stderr (default: only on a terminal)");
  app.add_flag("--kv-embedding", o.kv_embedding, "KV-Embedding (decoders): re-route each text's last key/value as a prefix at middle layers; hybrid pooling");
  app.add_option("--kv-layers", o.kv_layers, "KV-Embedding layers A-B, counted from 0 (default: the middle third)");
  app.add_option("--kv-bias", o.kv_bias, "KV-Embedding logit bias of the re-routed position (default 1.0)");
  app.add_option("--device", o.device, "cpu (default) or cuda");
  app.add_option("--compat", o.compat, kCompatHelp);
  app.add_option("--compute-type", o.compute_type, kComputeTypeHelp);
  return prefix;
}

int embed_main(int argc, char** argv) {
  CLI::App app{"embed: text embeddings from GGUF models. One vector per input line, in order.", "embed"};
  app.footer("Subcommands: embed info | tokenize | rerank | convert | bench | serve | calibrate | kv-layers  (embed SUBCOMMAND --help)\n\n" + presets_help() +
             "\n" + kExitCodesHelp);
  app.set_version_flag("--version", std::string("embed ") + EMBED_VERSION);
  EmbedCommand o;
  std::vector<std::string> positional;
  app.add_option("model_and_input", positional, "[MODEL] INPUT: model (a GGUF file, HF folder or Hub name ORG/NAME; default: the "
                 "default model) and input file, - for stdin")
      ->expected(1, 2);
  app.add_option("-m,--model", o.model, kModelHelp);
  CLI::Option* prefix = add_request_flags(app, o);
  add_source_flags(app, o.source);
  app.add_option("--precision", o.precision, "float32 (default), int8, uint8 (need --ranges), binary, ubinary (bit-packed, dims/8 bytes)");
  app.add_option("--ranges", o.ranges, "Calibration ranges for --precision int8 / uint8 (written by `embed calibrate`)");
  app.add_option("-f,--format", o.format, "jsonl (default), json, csv, npy, raw");
  app.add_option("-o,--out", o.out, "Output file (default: stdout)");
  app.add_flag("--similarity", o.similarity, "Print the cosine-similarity matrix of the lines instead of the vectors");
  app.add_flag("-v,--verbose", o.verbose, "Print the tokens of every line on stderr");
  app.add_flag("--late-chunking", o.late_chunking, "One vector per chunk of each text, each the mean of its tokens encoded with the whole text "
               "(docs/long-inputs.md)");
  app.add_option("--chunk-by", o.chunk_by, "Late chunking's chunks: tokens (default, every --chunk-tokens), sentences, separator "
                 "(--chunk-separator); JSONL spans override it per text");
  app.add_option("--chunk-tokens", o.chunk_tokens, "Tokens per chunk with --chunk-by tokens")->capture_default_str();
  app.add_option("--chunk-separator", o.chunk_separator, "Text that separates chunks with --chunk-by separator")->capture_default_str();
  app.add_option("--spans-out", o.spans_out, "Late chunking with -f npy: a JSONL file of each row's input index and character span");
  app.add_option("--input-format", o.input_format, "text (one text per line), jsonl, csv, tsv (default: by the file's extension)");
  app.add_option("--text-field", o.text_field, "JSONL field / CSV column holding the text (default: text)");
  app.add_option("--id-field", o.id_field, "JSONL field / CSV column holding an id copied to the output rows (default: id, when present)");
  app.add_option("--spans-field", o.spans_field, "JSONL field holding late chunking's character spans [[begin, end], ...] (default: spans)");
  app.add_flag("--resume", o.resume, "Continue an output file a killed run left: after its last complete row (a partial one is rewritten)");
  app.add_flag("--dedup", o.dedup, "Embed identical texts once (rows stay one per input)");
  app.add_option("--output", o.outputs, "BGE-M3's read-outs from one pass, any of dense,sparse,colbert (JSON lines: \"dense\", "
                 "\"sparse\" [{index: token id, value}], \"colbert\" [[...] per token after CLS])");
  app.add_option("--sparse-top-k", o.sparse_top_k, "--output sparse: keep the K largest weights of each input (default: all)");
  app.add_flag("--sparse-tokens", o.sparse_tokens, "--output sparse: add each token id's vocabulary piece");
  app.add_option("--block", o.block, "Inputs embedded and written together (memory grows with it)")->capture_default_str();
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  o.prefix_given = prefix->count() > 0;
  if (positional.empty())
    usage_fail("nothing to embed: type `embed MODEL.gguf texts.txt` (one text per line; - reads stdin), or `embed texts.txt` "
               "for the default model (tools/models.sh default installs it); `embed --help` lists every flag");
  if (positional.size() == 2) {
    if (!o.model.empty()) usage_fail("give the model either as the first argument or with --model, not both");
    if (!is_gguf_file(positional[0]) && is_gguf_file(positional[1]))
      usage_fail(positional[1] + " is the model and " + positional[0] + " the input: the model comes first (`embed " + positional[1] + " " +
                 positional[0] + "`)");
    o.model = positional[0];
    o.input = positional[1];
  } else {
    o.input = positional[0];
    if (o.model.empty() && is_gguf_file(o.input))
      usage_fail(o.input + " is a model file: give an input file after it (or - for stdin)");
    std::error_code ec;
    if (o.model.empty() && o.input != "-" && !std::filesystem::exists(o.input, ec) && parse_hub_name(o.input))
      usage_fail("no input file " + o.input + "; if it is a model name, give an input file after it: embed " + o.input +
                 " INPUT (or - for stdin)");
  }
  return run_embed(o);
}

int calibrate_main(int argc, char** argv) {
  CLI::App app{"Per-dimension ranges of a model's vectors over sample texts, for --precision int8 / uint8", "embed calibrate"};
  EmbedCommand o;
  app.add_option("model", o.model, kModelHelp)->required();
  app.add_option("input", o.input, "Sample texts, one per line (- for stdin); hundreds or more")->required();
  app.add_option("-o,--out", o.out, "Ranges file to write (JSON)")->required();
  CLI::Option* prefix = add_request_flags(app, o);
  add_source_flags(app, o.source);
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  o.prefix_given = prefix->count() > 0;
  return run_calibrate(o);
}

int kv_layers_main(int argc, char** argv) {
  CLI::App app{"KV-Embedding's layers: the intrinsic dimension (TwoNN) of each layer's last-token states over sample texts, "
               "the band of lowest dimension, and with -o a copy of the model with that band stored",
               "embed kv-layers"};
  KvLayersCommand o;
  app.add_option("model", o.request.model, "Model (a decoder): a GGUF file, HF folder or Hub name ORG/NAME[:QUANT], or 'default'")->required();
  app.add_option("input", o.request.input, "Sample texts, one per line (- for stdin); hundreds give a stable estimate")->required();
  app.add_option("-o,--out", o.out, "Write a copy of the model with the band stored (--kv-embedding then uses it)");
  app.add_option("--width", o.width, "Layers in the band (default: as many as the middle third)");
  app.add_option("--sample", o.sample, "Use at most the first N texts (TwoNN compares every pair)")->capture_default_str();
  app.add_flag("--json", o.json, "One JSON object on stdout instead of the table");
  CLI::Option* prefix = add_request_flags(app, o.request);
  add_source_flags(app, o.request.source);
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  o.request.prefix_given = prefix->count() > 0;
  return run_kv_layers(o);
}

int info_main(int argc, char** argv) {
  CLI::App app{"Describe a GGUF file: architecture, hyperparameters, tokenizer, tensors", "embed info"};
  InfoOptions o;
  app.add_option("model", o.model, "Model: a GGUF file, an HF folder (described as converted), a Hub name ORG/NAME[:QUANT], or 'default'")->required();
  app.add_flag("--all-tensors", o.all_tensors, "List the tensors of every block");
  add_source_flags(app, o.source);
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  return run_info(o);
}

int rerank_main(int argc, char** argv) {
  CLI::App app{"Score documents (one per line) against a query with a reranker; best first", "embed rerank"};
  RerankCommand o;
  app.add_option("model", o.model, "Reranker model: a GGUF file, HF folder or Hub name ORG/NAME[:QUANT]")->required();
  app.add_option("documents", o.documents, "Documents file, one per line (- for stdin)")->required();
  app.add_option("-q,--query", o.query, "The query")->required();
  app.add_option("-n,--top-n", o.top_n, "Print only the best N");
  app.add_option("--max-tokens", o.max_tokens, "Token limit for query + document (default: the model's context length)");
  app.add_option("--truncate-direction", o.truncate_direction, "right (default): keep the start of a long document; left: keep its end");
  app.add_flag("--split-special", o.split_special, kSplitSpecialHelp);
  app.add_option("-f,--format", o.format, "text (default), json, jsonl");
  app.add_option("--score", o.score,
                 "On a model with BGE-M3's sparse and ColBERT heads instead of a classifier: score by dense, sparse, colbert, "
                 "sparse+dense or colbert+sparse+dense (FlagEmbedding's compute_score)");
  app.add_option("--weights", o.weights, "--score's weights of dense, sparse and colbert (default 1,1,1)");
  app.add_option("-t,--threads", o.threads, "CPU threads");
  app.add_flag("--skip-empty", o.skip_empty, "Leave empty lines out instead of failing");
  app.add_option("--device", o.device, "cpu (default) or cuda");
  app.add_option("--compat", o.compat, kCompatHelp);
  app.add_option("--compute-type", o.compute_type, kComputeTypeHelp);
  add_source_flags(app, o.source);
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  return run_rerank(o);
}

int convert_main(int argc, char** argv) {
  CLI::App app{"Convert a HuggingFace / sentence-transformers folder to GGUF (llama.cpp names and keys)", "embed convert"};
  ConvertOptions o;
  app.add_option("model_dir", o.model_dir, "Folder with config.json, tokenizer.json, model.safetensors, or a Hub repository of one (ORG/NAME)")->required();
  app.add_option("output", o.out_path, "GGUF file to write")->required();
  app.add_option("--type", o.type, "Weight type: f32, f16, bf16 or q8_0 (norms and biases stay f32)")->capture_default_str();
  app.add_option("--name", o.name, "general.name (default: the folder's name)");
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  return run_convert(o);
}

int tokenize_main(int argc, char** argv) {
  CLI::App app{"Print the token ids of each input line (one output line per input line)", "embed tokenize"};
  TokenizeOptions o;
  app.add_option("model", o.model, "Model: a GGUF file, an HF folder, a Hub name ORG/NAME[:QUANT], or 'default'")->required();
  app.add_option("input", o.input, "Text file, one input per line (default: standard input)");
  add_source_flags(app, o.source);
  app.add_flag("--pieces", o.pieces, "Print the pieces instead of the ids");
  app.add_flag("--no-special", o.no_special, "Leave out the special tokens the model adds (BOS/CLS/EOS/SEP)");
  app.add_flag("--split-special", o.split_special, kSplitSpecialHelp);
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  return run_tokenize(o);
}

int bench_main(int argc, char** argv) {
  CLI::App app{"Measure embedding speed: model load time, batch texts/s and tokens/s, single-text p50/p99 latency, peak RSS",
               "embed bench"};
  BenchCommand o;
  app.add_option("model", o.model, kModelHelp)->required();
  app.add_option("input", o.input, "Texts, one per line (- for stdin)")->required();
  add_source_flags(app, o.source);
  app.add_option("-t,--threads", o.threads, "CPU threads (default: all cores)");
  app.add_option("--batch-tokens", o.batch_tokens, "Tokens per forward pass (default 4096)");
  app.add_option("--max-tokens", o.max_tokens, "Token limit per text (default: the model's context length)");
  app.add_flag("--truncate", o.truncate, "Cut texts longer than the limit instead of failing");
  app.add_option("--pooling", o.pooling, "none, mean, cls, last, rank (default: the model's)");
  app.add_option("--repeat", o.repeat, "Timed passes over the whole input, after one warm-up call")->capture_default_str();
  app.add_option("--warmup", o.warmup, "Texts in the untimed warm-up call (default: all)");
  app.add_option("--warmup-input", o.warmup_input, "Texts for the warm-up call instead of the input (e.g. a few short ones)");
  app.add_option("--min-seconds", o.min_seconds, "Keep repeating passes until this many seconds have passed")->capture_default_str();
  app.add_option("--latency", o.latency, "Embed the first N texts one at a time for p50/p99 latency (0: skip)")->capture_default_str();
  app.add_flag("--json", o.json, "One JSON object on stdout instead of the text report");
  app.add_option("--device", o.device, "cpu (default) or cuda");
  app.add_option("--compat", o.compat, kCompatHelp);
  app.add_option("--compute-type", o.compute_type, kComputeTypeHelp);
  app.add_option("--output", o.outputs, "Read-outs every pass computes: dense, sparse, colbert, comma-separated (default: dense), "
                 "to time BGE-M3's or SPLADE's heads with the pass");
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  return run_bench(o);
}

int serve_main(int argc, char** argv) {
  CLI::App app{"Serve embeddings and reranking over HTTP: OpenAI, TEI, Jina/Cohere, llama.cpp and Ollama routes (docs/server.md)",
               "embed serve"};
  ServeCommand o;
  app.add_option("model", o.model, std::string(kModelHelp) + " (the first model; optional with --model or --models-file)");
  app.add_option("--model", o.models, "Serve a model under a name: NAME=MODEL (repeated); requests choose it by their \"model\" field, "
                 "TEI's routes and requests without one get the first; loaded on first use");
  app.add_option("--models-file", o.models_file, "A file of NAME=MODEL lines (as --model; # comments)");
  app.add_option("--max-memory", o.max_memory, "Resident memory bound (e.g. 8G): loading a model unloads the least recently used "
                 "idle ones while the process's measured RSS would exceed it");
  add_source_flags(app, o.source);
  app.add_option("--host,--hostname", o.host, "Address to listen on (0.0.0.0: every interface)")->capture_default_str();
  app.add_option("-p,--port", o.port, "Port (0: any free port, printed on stderr)")->capture_default_str();
  app.add_option("-t,--threads", o.threads, "Compute threads (default: all cores)");
  app.add_option("--http-threads", o.http_threads, "Transport threads: HTTP, JSON, tokenization")->capture_default_str();
  app.add_option("--device", o.device, "cpu (default) or cuda");
  app.add_option("--compat", o.compat, kCompatHelp);
  app.add_option("--compute-type", o.compute_type, kComputeTypeHelp);
  app.add_option("--model-name", o.model_name, "Model id in answers and /v1/models (default: ORG/NAME for a Hub name, else the file name)");
  app.add_option("--max-concurrent-requests", o.max_concurrent_requests, "Requests queued or computing at once; more get 429")->capture_default_str();
  app.add_option("--max-batch-tokens", o.max_batch_tokens, "Tokens per forward pass, across requests")->capture_default_str();
  app.add_option("--max-client-batch-size", o.max_client_batch_size, "Inputs per request; more get 413")->capture_default_str();
  app.add_option("--payload-limit", o.payload_limit, "Request body bytes; more get 413")->capture_default_str();
  app.add_flag("--auto-truncate", o.auto_truncate, "Truncate long inputs when a request does not say (default: 413)");
  app.add_flag("--split-special", o.split_special, kSplitSpecialHelp);
  app.add_option("--max-input-tokens", o.max_input_tokens, "Tokens per input (default: the model's context length)");
  app.add_option("--max-request-tokens", o.max_request_tokens, "Tokens of all inputs of a request; more get 413 (default: no bound but inputs x tokens per input)");
  app.add_option("--interactive-tokens", o.interactive_tokens, "Requests of at most this many tokens skip ahead of bulk ones")->capture_default_str();
  app.add_option("--api-key", o.api_key, "Require 'Authorization: Bearer KEY' (not on /health and /metrics)");
  app.add_option("--cors", o.cors, "Allow browsers from this origin ('*' for any)");
  app.add_option("--read-timeout", o.read_timeout, "Seconds to receive a whole request, from its first byte (slower clients are closed)")->capture_default_str();
  app.add_option("--keep-alive-timeout", o.keep_alive_timeout, "Seconds an idle connection waits for its next request")->capture_default_str();
  app.add_option("--keep-alive-requests", o.keep_alive_requests, "Requests per connection (the last answer closes it)")->capture_default_str();
  app.add_option("--max-connections", o.max_connections, "Open connections (default: max-concurrent-requests + 64)");
  app.add_option("--drain-timeout", o.drain_timeout, "Seconds to finish requests in flight after SIGTERM")->capture_default_str();
  // Defaults of every embedding request; a request's own fields (precision, prompt_template,
  // kv_embedding, kv_layers, kv_bias) win. --pooling has no request field.
  app.add_option("--pooling", o.pooling, "Pooling of the embedding routes: none (per-token vectors: /embed_all and /embedding only), "
                 "mean, cls, last, hybrid (default: the model's); the rerank routes keep rank pooling");
  app.add_option("--precision", o.precision, "Default output precision: float32 (default), int8, uint8 (need --ranges), binary, ubinary");
  app.add_option("--ranges", o.ranges, "Calibration ranges (written by `embed calibrate`) for int8 / uint8 output, loaded at startup");
  app.add_option("--template", o.prompt_template, "Default prompt template with a {text} slot, e.g. 'This sentence: \"{text}\" means in one word: \"'")
      ->each([&o](const std::string&) { o.template_given = true; });
  app.add_flag("--kv-embedding", o.kv_embedding, "KV-Embedding (decoders) by default: re-route each text's last key/value as a prefix at middle layers; hybrid pooling");
  app.add_option("--kv-layers", o.kv_layers, "KV-Embedding layers A-B, counted from 0 (default: the middle third)");
  app.add_option("--kv-bias", o.kv_bias, "KV-Embedding logit bias of the re-routed position (default 1.0)");
  app.add_option("--long", o.long_inputs, "An input longer than --max-input-tokens: error (default; 413 unless truncated), or chunk: "
                 "windows of max-input-tokens, each pooled, combined by their token-weighted mean (docs/long-inputs.md)");
  app.add_option("--long-overlap", o.long_overlap, "Tokens two consecutive windows share (default: a quarter of the window)");
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  return run_serve(o);
}

struct Subcommand {
  const char* name;
  int (*main)(int, char**);
};

const Subcommand kSubcommands[] = {
    {"info", info_main},
    {"rerank", rerank_main},
    {"tokenize", tokenize_main},
    {"convert", convert_main},
    {"bench", bench_main},
    {"serve", serve_main},
    {"calibrate", calibrate_main},
    {"kv-layers", kv_layers_main},
};

}  // namespace
}  // namespace embed::cli

int main(int argc, char** argv) {
  using namespace embed::cli;
  try {
    if (argc > 1)
      for (const Subcommand& s : kSubcommands)
        if (std::string(argv[1]) == s.name) return s.main(argc - 1, argv + 1);
    return embed_main(argc, argv);
  } catch (const embed::Error& e) {
    std::fprintf(stderr, "embed: error: %s\n", e.what());
    return exit_code_for(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embed: error: %s\n", e.what());
    return kExitFailure;
  }
}
