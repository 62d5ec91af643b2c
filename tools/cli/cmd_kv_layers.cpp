// `embed kv-layers`: where to re-route for KV-Embedding. The paper (arXiv 2601.01046) picks the
// contiguous band of middle layers whose hidden states have the lowest intrinsic dimension; this
// measures it (TwoNN, engine/intrinsic_dim.h) on each layer's last-token states, the states whose
// keys and values KV-Embedding re-routes, and can store the band in a copy of the model.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/api.h"
#include "engine/intrinsic_dim.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "tools/cli/commands.h"
#include "tools/cli/input.h"

namespace embed::cli {

int run_kv_layers(const KvLayersCommand& o) {
  const EmbedCommand& e = o.request;
  const Request req = request_from_flags(e);
  if (req.kv_embedding || req.kv_layers || req.kv_bias)
    usage_fail("kv-layers measures the plain model: leave out --kv-embedding, --kv-layers and --kv-bias");
  if (o.sample < 3) usage_fail("--sample must be at least 3 (hundreds give a stable estimate)");
  // The model first: a model this command cannot use is the first thing to say, before any
  // complaint about the texts.
  const std::shared_ptr<const Model> model = load_model(e.model, {e.device, e.threads, e.compat, e.compute_type, e.source});
  const ModelDescription& d = model->describe();
  if (!d.causal)
    usage_fail("kv-layers is for decoders (KV-Embedding re-routes causal attention); this " + d.arch + " model is bidirectional");
  check_request_flags(*model, req, Task::Embed);
  InputLines in = read_lines(e.input, e.skip_empty);
  if (static_cast<int64_t>(in.texts.size()) > o.sample) in.texts.resize(static_cast<size_t>(o.sample));
  if (in.texts.size() < 3) fail(ErrorKind::InvalidArgument, "kv-layers needs at least 3 texts (hundreds give a stable estimate)");
  const int n_layers = static_cast<int>(d.n_layers);
  // The default band's width (the middle third), searched over the middle two thirds.
  const int width = o.width > 0 ? o.width : std::max(1, static_cast<int>(2 * d.n_layers / 3) - static_cast<int>(d.n_layers / 3));
  const int min_first = n_layers / 6, max_last = n_layers - 1 - n_layers / 6;
  if (width > max_last - min_first + 1)
    usage_fail("--width " + std::to_string(width) + " is wider than the middle layers " + std::to_string(min_first) + "-" +
                                         std::to_string(max_last) + " of this " + std::to_string(n_layers) + "-layer model");

  Context ctx(model, e.threads);
  RunSettings settings;
  settings.batch_tokens = e.batch_tokens;
  auto states = ctx.layer_states(in.texts, req, settings);
  if (!states) {
    const Status& s = states.error();
    const std::string name = e.input == "-" ? std::string("stdin") : e.input;
    fail(s.kind, s.index >= 0 && static_cast<size_t>(s.index) < in.line_numbers.size()
                     ? name + ": line " + std::to_string(in.line_numbers[static_cast<size_t>(s.index)]) + ": " + s.message
                     : s.message);
  }
  const LayerStates& ls = states.value();
  std::vector<double> dims(static_cast<size_t>(n_layers));
  int64_t points = 0;
  for (int l = 0; l < n_layers; l++) {
    const TwoNNResult r = twonn_dimension(ls.row(l, 0), ls.rows, ls.d_model);
    dims[static_cast<size_t>(l)] = r.dimension;
    points = r.points;
  }
  const std::pair<int, int> band = lowest_dimension_band(dims, width, min_first, max_last);
  double band_mean = 0;
  for (int l = band.first; l <= band.second; l++) band_mean += dims[static_cast<size_t>(l)] / width;

  if (o.json) {
    nlohmann::json j;
    j["model"] = d.path;
    j["texts"] = ls.rows;
    j["distinct_points"] = points;
    j["intrinsic_dimension"] = dims;
    j["band"] = {band.first, band.second};
    j["band_mean"] = band_mean;
    j["searched"] = {min_first, max_last};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("layer  intrinsic dimension (TwoNN, last-token states of %lld texts)\n", static_cast<long long>(ls.rows));
    for (int l = 0; l < n_layers; l++)
      std::printf("%5d  %8.2f%s\n", l, dims[static_cast<size_t>(l)], l >= band.first && l <= band.second ? "  *" : "");
    std::printf("band: %d-%d (mean %.2f; the lowest of the %d-layer bands inside %d-%d): --kv-embedding --kv-layers %d-%d\n", band.first,
                band.second, band_mean, width, min_first, max_last, band.first, band.second);
  }
  if (!o.out.empty()) {
    gguf::Writer edits;
    edits.set_array<int32_t>(kKvLayersKey, {band.first, band.second});
    std::vector<float> as_float(dims.begin(), dims.end());
    edits.set_array<float>(kKvDimensionsKey, as_float);
    edits.set<uint32_t>(kKvSampleKey, static_cast<uint32_t>(ls.rows));
    const gguf::File source = open_model_file(e.model, source_options(e.source));  // a folder: converted again
    gguf::write_with_metadata(source, edits, o.out);
    std::fprintf(stderr, "embed: %s written: %s with KV-Embedding band %d-%d stored (--kv-embedding uses it)\n", o.out.c_str(), d.path.c_str(),
                 band.first, band.second);
  }
  return kExitOk;
}

}  // namespace embed::cli
