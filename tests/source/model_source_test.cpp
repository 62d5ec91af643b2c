// An HF / sentence-transformers folder opened directly (open_model: converted in memory, or once
// into the cache with cache_gguf) gives the vectors, or rerank scores, of the GGUF `embed
// convert` writes from it, bit for bit: for every converter fixture and three weight types.
// Model::load of a GGUF path and open_model of the same path agree too.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <random>

#include "engine/api.h"
#include "source/model_source.h"
#include "tests/source/scoped_env.h"
#include "tools/convert/convert.h"

using namespace embed;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kTexts = {"A man is playing a guitar.", "Café crème, naïve résumé.", "東京は日本の首都です。", "a"};

fs::path scratch_dir() {
  std::random_device rd;
  const fs::path p = fs::temp_directory_path() / ("embed-source-test-" + std::to_string(rd()));
  fs::create_directories(p);
  return p;
}

// What the model computes by default: pooled vectors, or a reranker's scores.
std::vector<float> outputs(const std::shared_ptr<const Model>& m) {
  Context ctx(m, 2);
  if (m->describe().default_pooling == Pooling::Rank) {
    auto s = ctx.rerank("what is played?", kTexts);
    REQUIRE(s.ok());
    return s.value();
  }
  auto e = ctx.embed(kTexts);
  REQUIRE(e.ok());
  return e.value().data;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("an HF folder run directly equals its converted GGUF bit for bit") {
  const fs::path tmp = scratch_dir();
  const testing::ScopedEnv cache("EMBED_CACHE", (tmp / "cache").c_str());
  size_t folders = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(EMBED_SOURCE_DIR) / "tests" / "convert" / "fixtures")) {
    if (!fs::is_regular_file(entry.path() / "config.json")) continue;
    folders++;
    for (const char* type : {"f16", "f32", "q8_0"}) {
      INFO(entry.path().filename().string() << " " << type);
      convert::ConvertOptions c;
      c.model_dir = entry.path().string();
      c.out_path = (tmp / (entry.path().filename().string() + "-" + type + ".gguf")).string();
      c.type = *convert::out_type_from_name(type);
      convert::convert_hf_to_gguf(c);
      auto converted = Model::load(c.out_path);
      REQUIRE(converted.ok());
      const std::vector<float> want = outputs(converted.value());
      REQUIRE(!want.empty());
      SourceOptions so;
      so.convert_type = type;
      auto in_memory = open_model(entry.path().string(), {}, so);
      REQUIRE(in_memory.ok());
      CHECK(same_bits(outputs(in_memory.value()), want));
      so.cache_gguf = true;
      auto cached = open_model(entry.path().string(), {}, so);
      REQUIRE(cached.ok());
      CHECK(same_bits(outputs(cached.value()), want));
    }
  }
  CHECK(folders >= 8);
  auto by_path = open_model((tmp / "bert-dense-tiny-f32.gguf").string());
  auto direct = Model::load((tmp / "bert-dense-tiny-f32.gguf").string());
  REQUIRE((by_path.ok() && direct.ok()));
  CHECK(same_bits(outputs(by_path.value()), outputs(direct.value())));
  fs::remove_all(tmp);
}

TEST_CASE("open_model reports what is wrong with a model argument") {
  const fs::path tmp = scratch_dir();
  auto missing = open_model((tmp / "absent.gguf").string());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::Io);
  CHECK_THAT(missing.error().message, Catch::Contains("absent.gguf: no such file or folder"));
  auto not_hf = open_model(tmp.string());
  REQUIRE_FALSE(not_hf.ok());
  CHECK_THAT(not_hf.error().message, Catch::Contains("without config.json"));
  SourceOptions so;
  so.convert_type = "q4_k";
  auto bad_type = open_model((fs::path(EMBED_SOURCE_DIR) / "tests/convert/fixtures/bert-dense-tiny").string(), {}, so);
  REQUIRE_FALSE(bad_type.ok());
  CHECK_THAT(bad_type.error().message, Catch::Contains("'q4_k' is not one of f32, f16, bf16, q8_0"));
  {  // offline, with an empty cache: no request, and the variable named
    const testing::ScopedEnv offline("HF_HUB_OFFLINE", "1"), hub_cache("HF_HUB_CACHE", (tmp / "hf").c_str());
    auto name = open_model("some-org/some-model");
    REQUIRE_FALSE(name.ok());
    CHECK_THAT(name.error().message, Catch::Contains("HF_HUB_OFFLINE is set"));
  }
  fs::remove_all(tmp);
}
