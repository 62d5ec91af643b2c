// Every way a model folder can be missing something or ask for something unsupported: each gets
// an embed::Error of the right kind whose message names the file, key, tensor or value.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "engine/api.h"
#include "tools/convert/convert.h"
#include "tools/convert/safetensors.h"
#include "convert_test_util.h"

using namespace embed;
using namespace embed::convert;
using namespace embed::convert::testing;

namespace {

// Converts `dir` and returns the error it raised (fails the test if none).
Error convert_error(const fs::path& dir) {
  ConvertOptions o;
  o.model_dir = dir.string();
  try {
    build_gguf(o);
  } catch (const Error& e) {
    return e;
  }
  FAIL("conversion of " << dir << " succeeded");
  return Error(ErrorKind::InvalidArgument, "");
}

void edit_config(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json c = read_json(dir / "config.json");
  edit(c);
  write_json(dir / "config.json", c);
}

// Rewrites model.safetensors with `edit` applied to the list of tensors.
void edit_weights(const fs::path& dir, const std::function<void(std::vector<RawTensor>&)>& edit) {
  std::vector<RawTensor> tensors;
  {
    const auto f = SafetensorsFile::open((dir / "model.safetensors").string());
    for (const StTensor& t : f.tensors())
      tensors.push_back({t.name, t.dtype_name, t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes)});
  }
  edit(tensors);
  write_bytes(dir / "model.safetensors", safetensors_bytes(tensors));
}

}  // namespace

TEST_CASE("convert: a missing folder or file is named", "[convert]") {
  ScratchDir scratch;
  CHECK_THAT(convert_error(scratch.path() / "nope").what(), Catch::Contains("not a directory"));
  const fs::path dir = copy_fixture(scratch, "qwen2-tiny");
  SECTION("config.json") {
    fs::remove(dir / "config.json");
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("config.json missing"));
  }
  SECTION("tokenizer.json") {
    fs::remove(dir / "tokenizer.json");
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("tokenizer.json missing"));
  }
  SECTION("weights") {
    fs::remove(dir / "model.safetensors");
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("no weights") && Catch::Contains("model.safetensors"));
  }
  SECTION("the Pooling module's config") {
    fs::remove(dir / "1_Pooling" / "config.json");
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("1_Pooling/config.json") && Catch::Contains("missing"));
  }
}

TEST_CASE("convert: config.json problems are named", "[convert]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "qwen3-embedding-tiny");
  SECTION("unsupported architecture lists the supported ones") {
    edit_config(dir, [](nlohmann::json& c) { c["architectures"] = {"GPT2LMHeadModel"}; });
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("'GPT2LMHeadModel'") && Catch::Contains("BertModel") && Catch::Contains("Qwen3Model") &&
                             Catch::Contains("LlamaForCausalLM") && Catch::Contains("Gemma3TextModel") &&
                             Catch::Contains("Gemma3ForCausalLM"));
  }
  SECTION("malformed JSON") {
    write_text(dir / "config.json", "{\"architectures\": [\"Qwen3Model\"");
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Format);
    CHECK_THAT(e.what(), Catch::Contains("config.json") && Catch::Contains("not valid JSON"));
  }
  SECTION("a missing hyperparameter") {
    edit_config(dir, [](nlohmann::json& c) { c.erase("intermediate_size"); });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("'intermediate_size'"));
  }
  SECTION("heads that do not divide") {
    edit_config(dir, [](nlohmann::json& c) { c["num_key_value_heads"] = 3; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("num_key_value_heads"));
  }
  SECTION("a hidden size the weights do not have") {
    edit_config(dir, [](nlohmann::json& c) { c["hidden_size"] = 96; });
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Format);
    CHECK_THAT(e.what(), Catch::Contains("config.json implies"));
  }
  SECTION("an unsupported rope type") {
    edit_config(dir, [](nlohmann::json& c) { c["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 1e6}, {"factor", 8}}; });
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("'llama3'"));
  }
  SECTION("sliding-window attention") {
    edit_config(dir, [](nlohmann::json& c) { c["use_sliding_window"] = true; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("use_sliding_window"));
  }
}

TEST_CASE("convert: sentence-transformers modules GGUF cannot express are refused", "[convert]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "qwen2-tiny");
  SECTION("max pooling") {
    nlohmann::json p = read_json(dir / "1_Pooling" / "config.json");
    p["pooling_mode_mean_tokens"] = false;
    p["pooling_mode_max_tokens"] = true;
    write_json(dir / "1_Pooling" / "config.json", p);
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("'max'"));
  }
  SECTION("two pooling modes at once") {
    nlohmann::json p = read_json(dir / "1_Pooling" / "config.json");
    p["pooling_mode_cls_token"] = true;
    write_json(dir / "1_Pooling" / "config.json", p);
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("'mean'") && Catch::Contains("'cls'"));
  }
  SECTION("a Dense module before pooling") {
    nlohmann::json m = read_json(dir / "modules.json");
    m.insert(m.begin() + 1, nlohmann::json::object({{"idx", 1}, {"name", "1"}, {"path", "1_Dense"}, {"type", "sentence_transformers.models.Dense"}}));
    write_json(dir / "modules.json", m);
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("1_Dense") && Catch::Contains("before pooling"));
  }
  SECTION("a module after Normalize") {
    nlohmann::json m = read_json(dir / "modules.json");
    m.push_back({{"idx", 3}, {"name", "3"}, {"path", "3_Dense"}, {"type", "sentence_transformers.models.Dense"}});
    write_json(dir / "modules.json", m);
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("sentence_transformers.models.Dense") && Catch::Contains("after Normalize"));
  }
}

TEST_CASE("convert: Dense modules and prompts that cannot be converted are named", "[convert]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "embeddinggemma-tiny");
  SECTION("a Dense config missing") {
    fs::remove(dir / "3_Dense" / "config.json");
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("3_Dense/config.json") && Catch::Contains("missing"));
  }
  SECTION("a Dense activation the engine does not have") {
    nlohmann::json c = read_json(dir / "2_Dense" / "config.json");
    c["activation_function"] = "torch.nn.modules.activation.Sigmoid";
    write_json(dir / "2_Dense" / "config.json", c);
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("Sigmoid") && Catch::Contains("tanh"));
  }
  SECTION("Dense layers that do not chain") {
    nlohmann::json c = read_json(dir / "3_Dense" / "config.json");
    c["in_features"] = 64;
    write_json(dir / "3_Dense" / "config.json", c);
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("3_Dense") && Catch::Contains("in_features 64"));
  }
  SECTION("Dense weights missing") {
    fs::remove(dir / "2_Dense" / "model.safetensors");
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("2_Dense/model.safetensors") && Catch::Contains("missing"));
  }
  SECTION("a Dense weight of the wrong shape") {
    nlohmann::json c = read_json(dir / "2_Dense" / "config.json");
    c["out_features"] = 96;
    write_json(dir / "2_Dense" / "config.json", c);
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("linear.weight") && Catch::Contains("[128, 32]"));
  }
  SECTION("a default prompt that is not a prompt") {
    nlohmann::json c = read_json(dir / "config_sentence_transformers.json");
    c["default_prompt_name"] = "retrieval";
    write_json(dir / "config_sentence_transformers.json", c);
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("default_prompt_name 'retrieval'"));
  }
  SECTION("a prompt that is not text") {
    nlohmann::json c = read_json(dir / "config_sentence_transformers.json");
    c["prompts"]["query"] = 3;
    write_json(dir / "config_sentence_transformers.json", c);
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("prompt 'query'"));
  }
}

TEST_CASE("convert: Gemma settings the GGUF cannot express are refused", "[convert]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "embeddinggemma-tiny");
  SECTION("causal attention under the bidirectional architecture") {
    edit_config(dir, [](nlohmann::json& c) { c["use_bidirectional_attention"] = false; });
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("use_bidirectional_attention") && Catch::Contains("gemma-embedding"));
  }
  SECTION("a query scale other than 1/sqrt(head_dim)") {
    edit_config(dir, [](nlohmann::json& c) { c["query_pre_attn_scalar"] = 20; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("query_pre_attn_scalar = 20"));
  }
  SECTION("sliding layers that do not repeat") {
    edit_config(dir, [](nlohmann::json& c) { c["layer_types"][3] = "full_attention"; });  // s s s f s f
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("layer_types") && Catch::Contains("layer 5"));
  }
  SECTION("a corrupt tokenizer.model") {
    write_text(dir / "tokenizer.model", std::string("\x0a\xff\xff\xff\xff", 5));
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Format);
    CHECK_THAT(e.what(), Catch::Contains("tokenizer.model") && Catch::Contains("SentencePiece"));
  }
}

TEST_CASE("convert: jina-bert-v2 settings the forward does not run are refused", "[convert][alibi]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "jina-bert-v2-tiny");
  SECTION("ReGLU instead of GEGLU") {
    edit_config(dir, [](nlohmann::json& c) { c["feed_forward_type"] = "reglu"; });
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("feed_forward_type") && Catch::Contains("jina-bert-v2"));
  }
  SECTION("no feed_forward_type (JinaBertConfig's default is BERT's plain MLP)") {
    edit_config(dir, [](nlohmann::json& c) { c.erase("feed_forward_type"); });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("feed_forward_type"));
  }
  SECTION("absolute positions instead of ALiBi") {
    edit_config(dir, [](nlohmann::json& c) { c["position_embedding_type"] = "absolute"; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("position_embedding_type"));
  }
}

TEST_CASE("convert: nomic-bert settings the forward does not run are refused", "[convert]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "nomic-bert-tiny");
  SECTION("dynamic NTK rope scaling (nomic's opt-in for 8192 tokens)") {
    edit_config(dir, [](nlohmann::json& c) { c["rotary_scaling_factor"] = 2; });
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("rotary_scaling_factor = 2") && Catch::Contains("nomic-bert"));
  }
  SECTION("interleaved rope pairs") {
    edit_config(dir, [](nlohmann::json& c) { c["rotary_emb_interleaved"] = true; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("rotary_emb_interleaved = true"));
  }
  SECTION("rope on part of the head") {
    edit_config(dir, [](nlohmann::json& c) { c["rotary_emb_fraction"] = 0.5; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("rotary_emb_fraction = 0.5"));
  }
  SECTION("pre-norm blocks") {
    edit_config(dir, [](nlohmann::json& c) { c["prenorm"] = true; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("prenorm = true"));
  }
  SECTION("the mixture-of-experts variant") {
    edit_config(dir, [](nlohmann::json& c) { c["moe_every_n_layers"] = 2; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("moe_every_n_layers = 2"));
  }
  SECTION("a GELU MLP") {
    edit_config(dir, [](nlohmann::json& c) { c["activation_function"] = "gelu"; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("activation_function = \"gelu\""));
  }
}

TEST_CASE("convert: GTE NewModel settings the forward does not run are refused", "[convert]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "gte-new-tiny");
  SECTION("mixed NTK rope scaling (mixed_b)") {
    edit_config(dir, [](nlohmann::json& c) { c["rope_scaling"]["mixed_b"] = 0.5; });
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("rope_scaling") && Catch::Contains("mixed_b"));
  }
  SECTION("another rope scaling type") {
    edit_config(dir, [](nlohmann::json& c) { c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}}; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("rope_scaling") && Catch::Contains("linear"));
  }
  SECTION("a norm type new-impl does not define") {
    edit_config(dir, [](nlohmann::json& c) { c["layer_norm_type"] = "group_norm"; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("layer_norm_type \"group_norm\""));
  }
  SECTION("logn attention scaling") {
    edit_config(dir, [](nlohmann::json& c) { c["logn_attention_scale"] = true; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("logn_attention_scale = true"));
  }
  SECTION("separate q / k / v projections") {
    edit_config(dir, [](nlohmann::json& c) { c["pack_qkv"] = false; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("pack_qkv = false"));
  }
  SECTION("absolute positions") {
    edit_config(dir, [](nlohmann::json& c) { c["position_embedding_type"] = "absolute"; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("position_embedding_type = \"absolute\""));
  }
}

// The engine's side: a `new` file whose rope scaling it does not run (another type, or an NTK
// factor below 1, where new-impl switches rule by length) fails at load by key; so do an MLP
// activation it does not know and RMSNorm blocks that carry LayerNorm biases.
TEST_CASE("new: rope scaling or activations the forward does not run and RMSNorm blocks with biases are refused at load", "[convert]") {
  ConvertOptions o;
  o.model_dir = (fixtures_dir() / "gte-new-tiny").string();
  const struct {
    const char* type;
    float factor;
    const char* key;
  } cases[] = {{"yarn", 2.0f, "new.rope.scaling.type"}, {"linear", 2.0f, "new.rope.scaling.type"},
               {"ntk", 0.5f, "new.rope.scaling.factor"}};
  for (const auto& c : cases) {
    gguf::Writer w = build_gguf(o);
    w.set_string("new.rope.scaling.type", c.type);
    w.set<float>("new.rope.scaling.factor", c.factor);
    auto m = Model::load(gguf::File::from_bytes(w.to_bytes(), "gte.gguf"), ModelOptions{Device::Cpu, 1});
    INFO(c.type << " factor " << c.factor);
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().kind == ErrorKind::Unsupported);
    CHECK_THAT(m.error().message, Catch::Contains(c.key));
  }
  {
    gguf::Writer w = build_gguf(o);
    w.set_string("new.hidden_act", "mish");
    auto m = Model::load(gguf::File::from_bytes(w.to_bytes(), "gte.gguf"), ModelOptions{Device::Cpu, 1});
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().kind == ErrorKind::Unsupported);
    CHECK_THAT(m.error().message, Catch::Contains("new.hidden_act 'mish'"));
  }
  {
    gguf::Writer w = build_gguf(o);  // LayerNorm blocks (with biases) said to be RMSNorm
    w.set<float>("new.attention.layer_norm_rms_epsilon", 1e-6f);
    auto m = Model::load(gguf::File::from_bytes(w.to_bytes(), "gte.gguf"), ModelOptions{Device::Cpu, 1});
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().kind == ErrorKind::Format);
    CHECK_THAT(m.error().message, Catch::Contains("blk.0.attn_output_norm.bias") && Catch::Contains("RMSNorm"));
  }
}

TEST_CASE("convert: ModernBERT settings the forward does not run are refused", "[convert]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "modern-bert-tiny");
  SECTION("a SwiGLU MLP (granite-embedding-97m-r2 style)") {
    edit_config(dir, [](nlohmann::json& c) { c["hidden_activation"] = "silu"; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("hidden_activation = \"silu\""));
  }
  SECTION("norm biases") {
    edit_config(dir, [](nlohmann::json& c) { c["norm_bias"] = true; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("norm_bias = true"));
  }
  SECTION("layer types that are not global every n layers from layer 0") {
    edit_config(dir, [](nlohmann::json& c) { c["layer_types"][1] = "full_attention"; });
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("layer_types") && Catch::Contains("layer 1"));
  }
  SECTION("a classifier pooling other than cls or mean") {
    edit_config(dir, [](nlohmann::json& c) { c["classifier_pooling"] = "max"; });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("classifier_pooling \"max\""));
  }
}

TEST_CASE("convert: weight problems name the tensor", "[convert]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "qwen2-tiny");
  SECTION("an unsupported dtype") {
    edit_weights(dir, [](std::vector<RawTensor>& ts) {
      for (RawTensor& t : ts)
        if (t.name == "layers.1.mlp.up_proj.weight") {
          t.dtype = "I32";
          t.bytes.resize(t.bytes.size() * 2);
        }
    });
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("'layers.1.mlp.up_proj.weight'") && Catch::Contains("I32"));
  }
  SECTION("a tensor with no GGUF name") {
    edit_weights(dir, [](std::vector<RawTensor>& ts) { ts.push_back({"layers.0.mlp.extra.weight", "BF16", {2}, {0, 0, 0, 0}}); });
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("'layers.0.mlp.extra.weight'"));
  }
  SECTION("a missing tensor") {
    edit_weights(dir, [](std::vector<RawTensor>& ts) {
      std::erase_if(ts, [](const RawTensor& t) { return t.name == "layers.1.mlp.up_proj.weight"; });
    });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("'blk.1.ffn_up.weight'"));
  }
  SECTION("a layer index beyond num_hidden_layers") {
    edit_weights(dir, [](std::vector<RawTensor>& ts) { ts.push_back({"layers.7.input_layernorm.weight", "BF16", {64}, std::vector<uint8_t>(128)}); });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("blk.7.attn_norm.weight"));
  }
  SECTION("a truncated safetensors file") {
    fs::resize_file(dir / "model.safetensors", fs::file_size(dir / "model.safetensors") - 100);
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Format);
    CHECK_THAT(e.what(), Catch::Contains("model.safetensors"));
  }
}

TEST_CASE("convert: a reranker whose vocabulary lacks \"yes\" is refused", "[convert]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "qwen3-reranker-tiny");
  nlohmann::json tok = read_json(dir / "tokenizer.json");
  tok["model"]["vocab"].erase("yes");
  write_json(dir / "tokenizer.json", tok);
  CHECK_THAT(convert_error(dir).what(), Catch::Contains("'yes'"));
}

TEST_CASE("convert: a classifier whose labels disagree with its rows is refused", "[convert]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "bert-cls-tiny");
  edit_config(dir, [](nlohmann::json& c) { c["id2label"] = {{"0", "no"}, {"1", "yes"}}; });
  CHECK_THAT(convert_error(dir).what(), Catch::Contains("id2label has 2 labels") && Catch::Contains("1 rows"));
}

TEST_CASE("convert: SPLADE folders the read-out cannot follow are refused", "[convert][splade]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "splade-tiny");
  SECTION("SpladePooling other than max / relu") {
    nlohmann::json p = read_json(dir / "1_SpladePooling" / "config.json");
    p["pooling_strategy"] = "sum";
    write_json(dir / "1_SpladePooling" / "config.json", p);
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("pooling_strategy 'sum'"));
  }
  SECTION("SpladePooling without an MLM head") {
    edit_weights(dir, [](std::vector<RawTensor>& t) {
      std::erase_if(t, [](const RawTensor& r) { return r.name.rfind("cls.predictions.", 0) == 0; });
    });
    const Error e = convert_error(dir);
    CHECK(e.kind() == ErrorKind::Format);
    CHECK_THAT(e.what(), Catch::Contains("SpladePooling") && Catch::Contains("no MLM head"));
  }
  SECTION("a partial MLM head") {
    edit_weights(dir, [](std::vector<RawTensor>& t) {
      std::erase_if(t, [](const RawTensor& r) { return r.name == "cls.predictions.transform.LayerNorm.bias"; });
    });
    CHECK_THAT(convert_error(dir).what(), Catch::Contains("'mlm.norm.bias'"));
  }
}

TEST_CASE("convert: is_causal false is read for qwen2 only", "[convert][qwen2]") {
  ScratchDir scratch;
  const fs::path dir = copy_fixture(scratch, "llama-tiny");
  edit_config(dir, [](nlohmann::json& c) { c["is_causal"] = false; });
  const Error e = convert_error(dir);
  CHECK(e.kind() == ErrorKind::Unsupported);
  CHECK_THAT(e.what(), Catch::Contains("is_causal") && Catch::Contains("llama"));
}
