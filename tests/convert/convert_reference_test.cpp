// `embed convert` output against llama.cpp's converter: every model key, tensor name, type,
// shape and byte (tests/convert/fixtures/expected/*.json, from tools/refgen/convert_reference.py),
// for the tiny fixture folders and for all-MiniLM-L6-v2; plus MiniLM facts written out by hand.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "gguf/file.h"
#include "tools/convert/convert.h"
#include "tools/convert/safetensors.h"
#include "convert_test_util.h"
#include "tests/real_models.h"

using namespace embed;
using namespace embed::convert;
using namespace embed::convert::testing;
using embed::test::kMiniLmDir;
using embed::test::real_model_path;

namespace {

gguf::File convert_in_memory(const std::string& dir, OutType type) {
  ConvertOptions o;
  o.model_dir = dir;
  o.type = type;
  return gguf::File::from_bytes(build_gguf(o).to_bytes(), dir);
}

void check_case(const std::string& case_name, const std::string& dir) {
  for (OutType type : {OutType::F32, OutType::F16, OutType::BF16, OutType::Q8_0}) {
    const std::string tname = out_type_name(type);
    DYNAMIC_SECTION(case_name << " --type " << tname) {
      const nlohmann::json expected = read_json(fixtures_dir() / "expected" / (case_name + "-" + tname + ".json"));
      check_against_expected(convert_in_memory(dir, type), expected);
    }
  }
}

}  // namespace

TEST_CASE("bert cross-encoder converts as llama.cpp does, plus its pooler as cls", "[convert]") {
  check_case("bert-cls-tiny", (fixtures_dir() / "bert-cls-tiny").string());
}

TEST_CASE("qwen2 converts as llama.cpp does", "[convert]") {
  check_case("qwen2-tiny", (fixtures_dir() / "qwen2-tiny").string());
}

TEST_CASE("qwen3 embedding converts as llama.cpp does (pooling LAST)", "[convert]") {
  check_case("qwen3-embedding-tiny", (fixtures_dir() / "qwen3-embedding-tiny").string());
}

TEST_CASE("qwen3 reranker converts as llama.cpp does (RANK, cls.output = lm_head yes/no)", "[convert]") {
  check_case("qwen3-reranker-tiny", (fixtures_dir() / "qwen3-reranker-tiny").string());
  const gguf::File f = convert_in_memory((fixtures_dir() / "qwen3-reranker-tiny").string(), OutType::F16);
  const nlohmann::json expected = read_json(fixtures_dir() / "expected" / "qwen3-reranker-tiny-f16.json");
  CHECK(f.get<std::string>("tokenizer.chat_template.rerank") ==
        expected["tokenizer"]["tokenizer.chat_template.rerank"].get<std::string>());
  CHECK(f.get_string_array("tokenizer.chat_templates") == std::vector<std::string_view>{"rerank"});
}

TEST_CASE("llama converts as llama.cpp does (Q/K permuted for NORM rope)", "[convert]") {
  check_case("llama-tiny", (fixtures_dir() / "llama-tiny").string());
}

TEST_CASE("EmbeddingGemma converts as llama.cpp does, with its Dense layers", "[convert]") {
  check_case("embeddinggemma-tiny", (fixtures_dir() / "embeddinggemma-tiny").string());
}

TEST_CASE("Gemma 3 causal LM converts as llama.cpp does", "[convert]") {
  check_case("gemma3-tiny", (fixtures_dir() / "gemma3-tiny").string());
}

// The XLM-R family, written by llama.cpp as `bert` with a `t5` vocabulary (its converter given
// the folder's SentencePiece model, as real XLM-R folders ship it: convert_reference.py).
TEST_CASE("XLM-R embedder converts as llama.cpp does (positions from pad_token_id + 1 dropped)", "[convert][xlmr]") {
  check_case("xlmr-tiny", (fixtures_dir() / "xlmr-tiny").string());
}

TEST_CASE("XLM-R cross-encoder converts as llama.cpp does, plus pooling RANK", "[convert][xlmr]") {
  check_case("xlmr-cls-tiny", (fixtures_dir() / "xlmr-cls-tiny").string());
}

TEST_CASE("BGE-M3 converts as llama.cpp does, plus its sparse and ColBERT heads", "[convert][xlmr]") {
  check_case("bge-m3-tiny", (fixtures_dir() / "bge-m3-tiny").string());
}

TEST_CASE("bidirectional qwen2 converts as llama.cpp does (attention.causal = false)", "[convert][qwen2]") {
  check_case("qwen2-bidir-tiny", (fixtures_dir() / "qwen2-bidir-tiny").string());
}

// ALiBi and a fused GEGLU ffn_up {E, 2F}; no position table.
TEST_CASE("jina-bert-v2 converts as llama.cpp does", "[convert][alibi]") {
  check_case("jina-bert-v2-tiny", (fixtures_dir() / "jina-bert-v2-tiny").string());
}

// The expectations' "deviations" list what embed writes differently (docs/convert.md).
TEST_CASE("nomic-bert converts as llama.cpp does, context_length = n_positions", "[convert][rotary]") {
  check_case("nomic-bert-tiny", (fixtures_dir() / "nomic-bert-tiny").string());
}

TEST_CASE("ModernBERT converts as llama.cpp does, norm_eps under layer_norm_epsilon", "[convert][families]") {
  check_case("modern-bert-tiny", (fixtures_dir() / "modern-bert-tiny").string());
}

TEST_CASE("ModernBERT cross-encoder converts as llama.cpp does, plus pooling RANK", "[convert][families]") {
  check_case("modern-bert-cls-tiny", (fixtures_dir() / "modern-bert-cls-tiny").string());
}

TEST_CASE("T5 encoders convert as llama.cpp does, plus pooling, Dense and an F32 bias table", "[convert][families]") {
  check_case("t5-gtr-tiny", (fixtures_dir() / "t5-gtr-tiny").string());
  check_case("t5-gated-tiny", (fixtures_dir() / "t5-gated-tiny").string());
}

TEST_CASE("a BERT embedder's Dense layer keeps its bias and activation", "[convert]") {
  check_case("bert-dense-tiny", (fixtures_dir() / "bert-dense-tiny").string());
  const gguf::File f = convert_in_memory((fixtures_dir() / "bert-dense-tiny").string(), OutType::F32);
  // 2_Dense/config.json: 32 -> 32, bias, torch.nn.modules.activation.Tanh.
  CHECK(f.get<uint32_t>("bert.dense_2_feat_in") == 32);
  CHECK(f.get<uint32_t>("bert.dense_2_feat_out") == 32);
  CHECK(f.get<std::string>("bert.dense_2_activation") == "tanh");
  REQUIRE(f.find_tensor("dense_2.bias") != nullptr);
  CHECK(f.find_tensor("dense_2.bias")->type == gguf::TensorType::F32);
}

TEST_CASE("a Gemma layer pattern other than llama.cpp's default of 6 is written", "[convert]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "embeddinggemma-tiny");
  nlohmann::json c = read_json(dir / "config.json");
  for (int l = 0; l < 6; l++) c["layer_types"][l] = l % 3 == 2 ? "full_attention" : "sliding_attention";
  write_json(dir / "config.json", c);
  CHECK(convert_in_memory(dir.string(), OutType::F32).get<uint32_t>("gemma-embedding.attention.sliding_window_pattern") == 3);
  CHECK_FALSE(convert_in_memory((fixtures_dir() / "embeddinggemma-tiny").string(), OutType::F32)
                  .has("gemma-embedding.attention.sliding_window_pattern"));
}

TEST_CASE("all-MiniLM-L6-v2 converts as llama.cpp does, in every type", "[convert][minilm]") {
  const std::string dir = real_model_path(kMiniLmDir);
  check_case("minilm", dir);
}

TEST_CASE("all-MiniLM-L6-v2 GGUF holds what config.json and 1_Pooling say", "[convert][minilm]") {
  const std::string dir = real_model_path(kMiniLmDir);
  const gguf::File f = convert_in_memory(dir, OutType::Q8_0);
  // config.json: 6 layers, hidden 384, 12 heads, FFN 1536, 512 positions, 2 token types, eps 1e-12,
  // vocab 30522; 1_Pooling/config.json: mean tokens.
  CHECK(f.get<std::string>("general.architecture") == "bert");
  CHECK(f.get<uint32_t>("bert.block_count") == 6);
  CHECK(f.get<uint32_t>("bert.embedding_length") == 384);
  CHECK(f.get<uint32_t>("bert.attention.head_count") == 12);
  CHECK(f.get<uint32_t>("bert.feed_forward_length") == 1536);
  CHECK(f.get<uint32_t>("bert.context_length") == 512);
  CHECK(f.get<float>("bert.attention.layer_norm_epsilon") == 1e-12f);
  CHECK(f.get<bool>("bert.attention.causal") == false);
  CHECK(f.get<uint32_t>("bert.pooling_type") == 1);
  CHECK(f.get<uint32_t>("general.file_type") == 7);
  CHECK(f.get<uint32_t>("general.quantization_version") == 2);
  CHECK(f.get<std::string>("general.name") == "all-MiniLM-L6-v2");
  CHECK(f.tensors().size() == 5 + 6 * 16);
  const gguf::TensorInfo* emb = f.find_tensor("token_embd.weight");
  REQUIRE(emb);
  CHECK(emb->type == gguf::TensorType::F16);
  CHECK((emb->ne[0] == 384 && emb->ne[1] == 30522));
  CHECK(f.find_tensor("token_types.weight")->ne[1] == 2);
  CHECK(f.find_tensor("position_embd.weight")->type == gguf::TensorType::F32);
  CHECK(f.find_tensor("blk.5.ffn_up.weight")->type == gguf::TensorType::Q8_0);
  CHECK(f.find_tensor("blk.5.ffn_up.bias")->type == gguf::TensorType::F32);
  CHECK(f.find_tensor("blk.5.layer_output_norm.weight")->type == gguf::TensorType::F32);
  CHECK(f.find_tensor("cls.weight") == nullptr);  // no classifier: the pooler is not written
}

TEST_CASE("a sharded checkpoint converts to the same bytes as the single file", "[convert]") {
  ScratchDir dir;
  const fs::path folder = copy_fixture(dir, "qwen2-tiny");
  std::vector<RawTensor> first, second;
  {
    const auto single = SafetensorsFile::open((folder / "model.safetensors").string());
    nlohmann::json map = nlohmann::json::object();
    size_t i = 0;
    for (const StTensor& t : single.tensors()) {
      const bool one = i++ % 2 == 0;
      (one ? first : second).push_back({t.name, t.dtype_name, t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes)});
      map[t.name] = one ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
    }
    write_json(folder / "model.safetensors.index.json", {{"metadata", nlohmann::json::object()}, {"weight_map", map}});
  }
  write_bytes(folder / "model-00001-of-00002.safetensors", safetensors_bytes(first));
  write_bytes(folder / "model-00002-of-00002.safetensors", safetensors_bytes(second));
  ConvertOptions o;
  o.model_dir = (fixtures_dir() / "qwen2-tiny").string();
  o.type = OutType::Q8_0;
  const std::vector<uint8_t> want = build_gguf(o).to_bytes();
  fs::remove(folder / "model.safetensors");
  o.model_dir = folder.string();
  CHECK(build_gguf(o).to_bytes() == want);
}
