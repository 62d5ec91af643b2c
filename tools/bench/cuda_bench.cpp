// embed-cuda-bench: throughput of whole models on the CUDA backend (tokens/s at several batch
// shapes, end to end through Runner::run: packing, upload, forward, pooling, download), the
// fraction of the GPU's measured bf16 matrix rate that the linear layers reach, and the cosine of
// CUDA's vectors against the CPU path's. Prints a compact markdown table last. --device cpu
// times the CPU path the same way (no ceiling, no cosines): the same table for comparison.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <thread>

#include "cuda/gemm_rate.h"
#include "engine/runner.h"
#include "gguf/file.h"
#include "tools/bench/synthetic_models.h"

using namespace embed;

namespace {

struct Shape {
  int n_seqs = 0, len = 0;
};

struct Row {
  std::string model, weights, math;
  Shape shape;
  double ms = 0, tokens_per_s = 0, linear_tflops = 0, peak_fraction = 0;
};

struct CosineRow {
  std::string model, math;
  double min_cosine = 0;
  int n_seqs = 0;
};

std::vector<Shape> parse_shapes(const std::string& text) {
  std::vector<Shape> out;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    Shape s;
    if (std::sscanf(item.c_str(), "%dx%d", &s.n_seqs, &s.len) != 2 || s.n_seqs <= 0 || s.len <= 0)
      fail(ErrorKind::InvalidArgument, "--shapes: '" + item + "' is not N_SEQSxLENGTH (e.g. 32x128)");
    out.push_back(s);
  }
  return out;
}

// Multiply-adds of the linear layers per token, times 2: every 2-D block weight is one matmul row
// per token (tables are gathered, not multiplied).
double linear_flops_per_token(const gguf::File& f) {
  double flops = 0;
  for (const gguf::TensorInfo& t : f.tensors())
    if (t.n_dims == 2 && t.name.rfind("blk.", 0) == 0) flops += 2.0 * static_cast<double>(t.ne[0]) * static_cast<double>(t.ne[1]);
  return flops;
}

std::string weight_types(const gguf::File& f) {
  std::vector<std::string> names;
  for (const gguf::TensorInfo& t : f.tensors())
    if (t.n_dims == 2 && t.name.rfind("blk.", 0) == 0) {
      const std::string n = gguf::type_name(t.type);
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : "+") + n;
  return out;
}

std::vector<SequenceInput> make_batch(const ModelInfo& info, Shape shape, uint32_t seed) {
  std::vector<SequenceInput> seqs(static_cast<size_t>(shape.n_seqs));
  uint64_t x = seed * 2654435761ull + 1;
  for (SequenceInput& q : seqs)
    for (int i = 0; i < std::min<int64_t>(shape.len, info.n_ctx_train); i++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      q.ids.push_back(static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(info.n_vocab)));
    }
  return seqs;
}

PassOptions run_options(const ModelInfo& info) {
  PassOptions o;
  o.pooling = info.default_pooling == Pooling::None || info.default_pooling == Pooling::Rank ? Pooling::Mean : info.default_pooling;
  return o;
}

double median_ms(Runner& r, const std::vector<SequenceInput>& seqs, const PassOptions& o, int reps) {
  for (int i = 0; i < 2; i++) r.run(seqs, o);  // warm-up: workspace growth, cuBLAS handle and heuristics
  std::vector<double> ms;
  for (int i = 0; i < reps; i++) {
    const auto t0 = std::chrono::steady_clock::now();
    r.run(seqs, o);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

double min_cosine(const RunOutput& a, const RunOutput& b) {
  double worst = 1;
  for (int64_t s = 0; s < a.rows; s++) {
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < a.cols; i++) {
      const double x = a.pooled[s * a.cols + i], y = b.pooled[s * b.cols + i];
      ab += x * y;
      aa += x * x;
      bb += y * y;
    }
    worst = std::min(worst, aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0);
  }
  return worst;
}

struct Config {
  std::vector<std::string> models, synthetic;
  std::string device = "cuda", shapes = "1x16,32x128,64x512";
  int reps = 10, gemm_size = 8192;
  bool f32 = false, cpu_check = false;
  bool on_cuda() const { return device == "cuda"; }
};

BackendOptions backend_options(const Config& c, bool f32_math) {
  BackendOptions o;
  if (c.on_cuda()) {
    o.device = Device::Cuda;
    o.compute_type = f32_math ? ComputeType::F32 : ComputeType::BF16;
  } else {
    o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  return o;
}

const char* math_label(const Config& c, bool f32_math) {
  if (!c.on_cuda()) return "cpu";
  return f32_math ? "f32" : "bf16";
}

void bench_model(const Config& c, const std::string& label, const std::string& path, double peak_tflops, std::vector<Row>& rows,
                 std::vector<CosineRow>& cosines) {
  const gguf::File f = gguf::File::open(path);
  const double flops = linear_flops_per_token(f);
  const std::string weights = weight_types(f);
  for (bool f32_math : {false, true}) {
    if (f32_math && !(c.f32 && c.on_cuda())) continue;
    Runner r(LoadedModel::load(path, backend_options(c, f32_math)), 0);
    const PassOptions o = run_options(r.model().info());
    for (Shape s : parse_shapes(c.shapes)) {
      const std::vector<SequenceInput> seqs = make_batch(r.model().info(), s, 7);
      Row row{label, weights, math_label(c, f32_math), s};
      // The f32 mode is the slow reference: fewer repetitions keep the run short.
      row.ms = median_ms(r, seqs, o, f32_math ? std::max(2, c.reps / 3) : c.reps);
      double tokens = 0;
      for (const SequenceInput& q : seqs) tokens += static_cast<double>(q.ids.size());
      row.tokens_per_s = tokens / (row.ms * 1e-3);
      row.linear_tflops = flops * row.tokens_per_s / 1e12;
      row.peak_fraction = peak_tflops > 0 ? row.linear_tflops / peak_tflops : 0;
      std::fprintf(stderr, "  %s %s %dx%d: %.2f ms, %.0f tokens/s\n", label.c_str(), row.math.c_str(), s.n_seqs, s.len, row.ms,
                   row.tokens_per_s);
      rows.push_back(row);
    }
  }
  if (!c.cpu_check || !c.on_cuda()) return;
  BackendOptions cpu;
  cpu.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  Runner cpu_runner(LoadedModel::load(path, cpu), 0);
  std::vector<SequenceInput> seqs;
  for (int len : {5, 17, 64, 128}) {
    std::vector<SequenceInput> one = make_batch(cpu_runner.model().info(), Shape{1, len}, static_cast<uint32_t>(len));
    seqs.push_back(one[0]);
  }
  const PassOptions o = run_options(cpu_runner.model().info());
  const RunOutput want = cpu_runner.run(seqs, o);
  for (bool f32_math : {false, true}) {
    Runner r(LoadedModel::load(path, backend_options(c, f32_math)), 0);
    cosines.push_back({label, f32_math ? "f32" : "bf16", min_cosine(r.run(seqs, o), want), static_cast<int>(seqs.size())});
  }
}

void print_tables(const cuda::GemmRate& peak, const std::vector<Row>& rows, const std::vector<CosineRow>& cosines) {
  if (peak.size) std::printf("\nbf16 GEMM ceiling (cuBLAS, %d^3, random data): %.1f TFLOP/s (%.3f ms)\n\n", peak.size, peak.tflops, peak.ms);
  else std::printf("\n(no GPU: no bf16 ceiling)\n\n");
  std::printf("| model | weights | math | batch (seqs x tokens) | ms/batch | tokens/s | linear TFLOP/s | of bf16 ceiling |\n");
  std::printf("|---|---|---|---|---:|---:|---:|---:|\n");
  for (const Row& r : rows)
    std::printf("| %s | %s | %s | %d x %d | %.2f | %.0f | %.1f | %.1f%% |\n", r.model.c_str(), r.weights.c_str(), r.math.c_str(),
                r.shape.n_seqs, r.shape.len, r.ms, r.tokens_per_s, r.linear_tflops, 100 * r.peak_fraction);
  if (cosines.empty()) return;
  std::printf("\n| model | CUDA math | min cosine vs CPU | sequences |\n|---|---|---:|---:|\n");
  for (const CosineRow& c : cosines)
    std::printf("| %s | %s | %.7f | %d |\n", c.model.c_str(), c.math.c_str(), c.min_cosine, c.n_seqs);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"embed-cuda-bench: whole-model throughput on the CUDA backend"};
  Config c;
  app.add_option("--model", c.models, "GGUF model file (repeatable)");
  app.add_option("--device", c.device, "cuda, or cpu to time the CPU path")->check(CLI::IsMember({"cuda", "cpu"}))->capture_default_str();
  app.add_option("--synthetic", c.synthetic, "random-weight model of a real shape: minilm-l6, bge-large, qwen3-0.6b (repeatable)");
  app.add_option("--shapes", c.shapes, "batches as N_SEQSxLENGTH, comma-separated")->capture_default_str();
  app.add_option("--reps", c.reps, "timed runs per batch (median)")->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--gemm-size", c.gemm_size, "size of the bf16 GEMM that measures the ceiling")->check(CLI::Range(256, 16384));
  app.add_flag("--f32", c.f32, "also time compute type f32 (the default is timed in bf16, the tensor cores)");
  app.add_flag("--cpu-check", c.cpu_check, "compare CUDA's vectors with the CPU path's (cosine)");
  CLI11_PARSE(app, argc, argv);
  try {
    cuda::GemmRate peak;
    if (c.on_cuda()) {
      std::string why;
      if (!backend_available(Device::Cuda, &why)) fail(ErrorKind::Unsupported, "cannot use device cuda: " + why);
      peak = cuda::measure_bf16_gemm_rate(0, c.gemm_size, c.reps);
      std::fprintf(stderr, "bf16 GEMM ceiling: %.1f TFLOP/s\n", peak.tflops);
    }
    std::vector<Row> rows;
    std::vector<CosineRow> cosines;
    for (const std::string& name : c.synthetic) {
      const bench::SyntheticShape* s = bench::find_synthetic_shape(name);
      if (!s) fail(ErrorKind::InvalidArgument, "--synthetic: unknown shape '" + name + "' (minilm-l6, bge-large, qwen3-0.6b)");
      const std::string path = "/tmp/embed-bench-" + name + ".gguf";
      bench::write_synthetic_model(*s, path);
      bench_model(c, name + " (synthetic)", path, peak.tflops, rows, cosines);
      std::remove(path.c_str());
    }
    for (const std::string& path : c.models) bench_model(c, path.substr(path.find_last_of('/') + 1), path, peak.tflops, rows, cosines);
    print_tables(peak, rows, cosines);
  } catch (const Error& e) {
    std::fprintf(stderr, "embed-cuda-bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
