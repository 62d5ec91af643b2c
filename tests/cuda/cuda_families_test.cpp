// The encoder families of issues #24 and #25 through the CUDA backend (under the CPU emulator in
// CI, on a GPU with label cuda): each tiny fixture folder of tests/convert/fixtures is converted to
// f32 by the `embed` executable (this binary links the engine built for CUDA, not the converter),
// run on the references' own token ids, and its pooled vectors compared with the PyTorch
// references committed beside it (tools/refgen/convert_vectors.py, make_nomic_bert.py,
// make_jina_bert.py, make_gte_new.py): cosine >= 0.99999, as on every CPU level
// (tests/convert/convert_vectors_test.cpp). The families' position biases (MPNet's and T5's
// buckets, jina-bert-v2's ALiBi), alternating local attention (ModernBERT), rotary positions
// (nomic-bert, ModernBERT, GTE's NTK-scaled ones with LayerNorm or RMSNorm blocks) and RoBERTa's
// offset positions (XLM-R) each have a case.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
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

}  // namespace

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
