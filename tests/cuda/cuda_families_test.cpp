// The encoder families of issues #24 and #25 through the CUDA backend (under the CPU emulator in
// CI, on a GPU with label cuda): each tiny fixture folder of tests/convert/fixtures is converted to
// f32 by the `embed` executable (this binary links the engine built for CUDA, not the converter),
// run on the references' own token ids, and its pooled vectors compared with the PyTorch
// references committed beside it (tools/refgen/convert_vectors.py, make_nomic_bert.py,
// make_jina_bert.py, make_gte_new.py): cosine >= 0.99999, as on every CPU level
// (tests/convert/convert_vectors_test.cpp). The families' position biases (MPNet's and T5's
// buckets, jina-bert-v2's ALiBi), alternating local attention (ModernBERT), rotary positions
// (nomic-bert, ModernBERT, GTE's NTK-scaled ones with LayerNorm or RMSNorm blocks) and RoBERTa's
// offset positions (XLM-R) each have a case. BGE-M3's sparse and ColBERT heads and SPLADE's MLM
// head run on the backend too (engine/readout.cpp): their case holds them to the CPU tests' bounds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "engine/api.h"
#include "tests/convert/convert_test_util.h"
#include "tests/device_skip.h"

using namespace embed;
using namespace embed::convert::testing;

namespace {

const char* const kFamilyCases[] = {"nomic-bert-tiny", "mpnet-tiny", "t5-gtr-tiny", "t5-gated-tiny", "modern-bert-tiny", "xlmr-tiny",
                                     "jina-bert-v2-tiny", "gte-new-tiny", "gte-new-rms-tiny"};

std::string convert_with_cli(const std::string& name, const ScratchDir& dir) {
  const std::string out = (dir.path() / (name + ".gguf")).string();
  const std::string log = (dir.path() / "convert.log").string();
  const std::string cmd = std::string("'") + EMBED_CLI_PATH + "' convert '" + (fixtures_dir() / name).string() + "' '" + out +
                          "' --type f32 > '" + log + "' 2>&1";
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
  return out;
}

double cosine(const float* a, const std::vector<float>& b) {
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < b.size(); i++) dot += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return dot / std::sqrt(aa * bb);
}

// The largest difference between a sparse row and its reference {"token id": weight}, relative to
// the row's largest weight (as tests/convert/xlmr_reference_test.cpp holds it); 1 when the ids differ.
double sparse_row_rel(const SparseRow& got, const nlohmann::json& want) {
  std::map<int32_t, double> w;
  for (const auto& [id, v] : want.items()) w[std::stoi(id)] = v.get<double>();
  if (got.ids.size() != w.size()) return 1;
  double row_max = 0, worst = 0;
  for (const auto& [id, v] : w) row_max = std::max(row_max, std::abs(v));
  for (size_t i = 0; i < got.ids.size(); i++) {
    auto it = w.find(got.ids[i]);
    if (it == w.end()) return 1;
    worst = std::max(worst, std::abs(got.weights[i] - it->second) / row_max);
  }
  return worst;
}

}  // namespace

TEST_CASE("BGE-M3's and SPLADE's read-outs run on CUDA and give FlagEmbedding's and SparseEncoder's outputs", "[cuda][models][m3]") {
  std::string why;
  if (!backend_available(Device::Cuda, &why)) {
    EMBED_SKIP_NO_DEVICE("no CUDA device (" << why << ")");
    return;
  }
  ModelOptions o;
  o.device = Device::Cuda;
  {
    const nlohmann::json ref = read_json(fixtures_dir() / "vectors" / "bge-m3-tiny.json");
    const std::vector<std::string> texts = ref["texts"];
    ScratchDir dir;
    auto model = Model::load(convert_with_cli("bge-m3-tiny", dir), o);
    REQUIRE(model.ok());
    REQUIRE(model.value()->describe().kernels == "cuda");
    Context ctx(model.value(), 1);
    Request r;
    r.normalize = 2;
    auto out = ctx.encode(texts, Outputs{true, true, true}, r);
    INFO((out.ok() ? std::string() : out.error().message));
    REQUIRE(out.ok());
    const auto& m3 = ref["m3"];
    double min_dense = 1, min_colbert = 1, worst_sparse = 0;
    for (size_t i = 0; i < texts.size(); i++) {
      min_dense = std::min(min_dense, cosine(out.value().dense.row(static_cast<int64_t>(i)), m3["dense"][i].get<std::vector<float>>()));
      worst_sparse = std::max(worst_sparse, sparse_row_rel(out.value().sparse[i], m3["sparse"][i]));
      const auto& want = m3["colbert"][i];
      REQUIRE(out.value().colbert[i].rows == static_cast<int64_t>(want.size()));
      for (size_t j = 0; j < want.size(); j++)
        min_colbert = std::min(min_colbert, cosine(out.value().colbert[i].row(static_cast<int64_t>(j)), want[j].get<std::vector<float>>()));
    }
    std::printf("CUDA-FAMILIES bge-m3-tiny dense min cosine %.9f, sparse max diff / row max %.3g, ColBERT min cosine %.9f\n", min_dense,
                worst_sparse, min_colbert);
    CHECK(min_dense >= 0.99999);
    CHECK(worst_sparse <= 1e-5);
    CHECK(min_colbert >= 0.99999);
  }
  {
    const nlohmann::json ref = read_json(fixtures_dir() / "vectors" / "splade-tiny.json");
    const std::vector<std::string> texts = ref["texts"];
    ScratchDir dir;
    auto model = Model::load(convert_with_cli("splade-tiny", dir), o);
    REQUIRE(model.ok());
    Context ctx(model.value(), 1);
    auto out = ctx.encode(texts, Outputs{false, true, false});
    INFO((out.ok() ? std::string() : out.error().message));
    REQUIRE(out.ok());
    double worst = 0;
    for (size_t i = 0; i < texts.size(); i++) worst = std::max(worst, sparse_row_rel(out.value().sparse[i], ref["sparse"][i]));
    std::printf("CUDA-FAMILIES splade-tiny sparse max diff / row max %.3g\n", worst);
    CHECK(worst <= 1e-5);
  }
}

TEST_CASE("the encoder families give their PyTorch references' vectors on CUDA", "[cuda][models][families]") {
  std::string why;
  if (!backend_available(Device::Cuda, &why)) {
    EMBED_SKIP_NO_DEVICE("no CUDA device (" << why << ")");
    return;
  }
  for (const char* name : kFamilyCases) {
    const nlohmann::json ref = read_json(fixtures_dir() / "vectors" / (std::string(name) + ".json"));
    ScratchDir dir;
    const std::string path = convert_with_cli(name, dir);
    ModelOptions o;
    o.device = Device::Cuda;
    auto model = Model::load(path, o);
    REQUIRE(model.ok());
    REQUIRE(model.value()->describe().kernels == "cuda");
    Context ctx(model.value(), 1);
    size_t compared = 0;
    for (const auto& v : ref["variants"]) {
      if (!v["pooling"].is_null()) continue;  // the model's own pooling: what every variant of these folders uses
      TokenBatch batch;
      for (size_t i = 0; i < v["ids"].size(); i++) batch.add(static_cast<int32_t>(i), v["ids"][i].get<std::vector<int32_t>>());
      Request raw;
      raw.normalize = -1;
      auto out = ctx.run(batch, raw);
      REQUIRE(out.ok());
      double worst = 1;
      for (size_t i = 0; i < v["ids"].size(); i++) {
        const std::vector<float> want = v["vectors"][i].get<std::vector<float>>();
        REQUIRE(static_cast<size_t>(out.value().pooled_dim()) == want.size());
        worst = std::min(worst, cosine(out.value().pooled(static_cast<int32_t>(i)), want));
        compared++;
      }
      std::printf("CUDA-FAMILIES %-18s %-14s min cosine %.9f\n", name, v["label"].get<std::string>().c_str(), worst);
      INFO(name << " " << v["label"].get<std::string>() << ": min cosine " << worst);
      CHECK(worst >= 0.99999);
    }
    CHECK(compared >= 8);
  }
}
