// XLM-RoBERTa folders and BGE-M3 heads without a Python reference: folders written here with
// seeded random weights and the committed XLM-R-layout Unigram vocabulary
// (tests/fixtures/tokenizer/unigram, whose token ids equal HF's in tests/tokenizer), checked
// against facts written out below:
//  * an XLMRobertaModel converts to the file a BertModel folder holding the same weights with
//    RoBERTa's positions already moved (rows pad_token_id + 1 .. of the table, context 2 shorter)
//    converts to, tensor for tensor, and both give the same vectors bit for bit;
//  * an XLMRobertaForSequenceClassification's classifier.dense / out_proj are a BERT cross-encoder's
//    pooler.dense / classifier: same tensors, same rerank scores;
//  * torch.save's format (a zip with a pickle, built here byte by byte after PyTorch's
//    serialization layout) is read, anything else refused by name, corruption never crashes;
//  * BGE-M3 read-outs follow FlagEmbedding's definitions on the hidden states of the same pass,
//    and the scores equal sums worked out by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "base/error.h"
#include "engine/api.h"
#include "engine/arch/spec.h"
#include "engine/readout.h"
#include "gguf/file.h"
#include "tools/convert/convert.h"
#include "tools/convert/torch_state.h"
#include "convert_test_util.h"
#include "xlmr_folders.h"

using namespace embed;
using namespace embed::convert;
using namespace embed::convert::testing;

namespace {

gguf::File convert_folder(const fs::path& dir) {
  ConvertOptions o;
  o.model_dir = dir.string();
  o.type = OutType::F32;
  return gguf::File::from_bytes(build_gguf(o).to_bytes(), dir.string());
}

std::vector<uint8_t> tensor_bytes(const gguf::File& f, const std::string& name) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  REQUIRE(t != nullptr);
  return std::vector<uint8_t>(t->data, t->data + t->nbytes);
}

std::shared_ptr<const Model> load(const fs::path& dir) {
  ConvertOptions o;
  o.model_dir = dir.string();
  o.type = OutType::F32;
  auto m = Model::load(gguf::File::from_bytes(build_gguf(o).to_bytes(), dir.string()), ModelOptions{Device::Cpu, 2});
  INFO((m.ok() ? std::string() : m.error().message));
  REQUIRE(m.ok());
  return m.value();
}

const std::vector<std::string> kTexts = {"Die Katze sitzt auf der Matte.", "A man is playing a guitar.", "日本語のテキストです。",
                                         "e\u0301te\u0301 ＡＢＣ１２３ non\u00a0breaking", "Two men are playing chess. Two men play chess."};

}  // namespace

TEST_CASE("XLMRobertaModel converts as a BertModel with RoBERTa's positions moved: same tensors, same vectors", "[convert][xlmr]") {
  ScratchDir dir;
  const std::vector<RawTensor> w = body(24);
  const fs::path xlmr = write_folder(dir, "xlmr", config("XLMRobertaModel", kMaxPos), w);
  const fs::path bert = write_folder(dir, "bert", config("BertModel", kMaxPos - kPad - 1), as_bert(w, ""));
  const gguf::File fx = convert_folder(xlmr), fb = convert_folder(bert);
  CHECK(fx.get<std::string>("general.architecture") == "bert");
  CHECK(fx.get<uint32_t>("bert.context_length") == kMaxPos - kPad - 1);  // 40 - (1 + 1)
  CHECK(fx.get<std::string>("tokenizer.ggml.model") == "t5");
  REQUIRE(fx.tensors().size() == fb.tensors().size());
  for (const gguf::TensorInfo& t : fb.tensors()) {
    INFO(t.name);
    CHECK(tensor_bytes(fx, t.name) == tensor_bytes(fb, t.name));
  }
  // Row 0 of the GGUF table is HF row pad_token_id + 1 = 2.
  const std::vector<uint8_t> pos = tensor_bytes(fx, "position_embd.weight");
  REQUIRE(pos.size() == static_cast<size_t>((kMaxPos - 2) * kD * 4));
  CHECK(std::memcmp(pos.data(), w[1].bytes.data() + 2 * kD * 4, pos.size()) == 0);

  Context cx(load(xlmr), 2), cb(load(bert), 2);
  auto ex = cx.embed(kTexts), eb = cb.embed(kTexts);
  INFO((ex.ok() ? std::string() : ex.error().message));
  REQUIRE(ex.ok());
  REQUIRE(eb.ok());
  CHECK(ex.value().data == eb.value().data);
  // A text past the 38 positions is refused, not read past the table.
  const std::string twenty = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
                             "seventeen eighteen nineteen twenty ";
  auto long_text = cx.embed({twenty + twenty});
  REQUIRE_FALSE(long_text.ok());
  CHECK_THAT(long_text.error().message, Catch::Contains("limit of 38 tokens"));
}

TEST_CASE("XLMRobertaForSequenceClassification: classifier.dense / out_proj are BERT's pooler / classifier", "[convert][xlmr]") {
  ScratchDir dir;
  std::vector<RawTensor> w = as_bert(body(25), "roberta.");
  std::mt19937 rng(26);
  std::vector<RawTensor> xw = w, bw = as_bert(body(25), "bert.");
  for (RawTensor& t : xw)
    if (t.name == "roberta.embeddings.position_embeddings.weight") t = body(25)[1], t.name = "roberta.embeddings.position_embeddings.weight";
  const RawTensor dense_w = f32("classifier.dense.weight", {kD, kD}, rng, 0.18f), dense_b = f32("classifier.dense.bias", {kD}, rng, 0.05f);
  const RawTensor out_w = f32("classifier.out_proj.weight", {1, kD}, rng, 0.18f), out_b = f32("classifier.out_proj.bias", {1}, rng, 0.05f);
  xw.insert(xw.end(), {dense_w, dense_b, out_w, out_b});
  for (auto [t, name] : {std::pair{dense_w, "bert.pooler.dense.weight"}, std::pair{dense_b, "bert.pooler.dense.bias"},
                         std::pair{out_w, "classifier.weight"}, std::pair{out_b, "classifier.bias"}})
    t.name = name, bw.push_back(t);
  const fs::path xlmr = write_folder(dir, "xlmr-cls", config("XLMRobertaForSequenceClassification", kMaxPos), xw);
  const fs::path bert = write_folder(dir, "bert-cls", config("BertForSequenceClassification", kMaxPos - 2), bw);
  const gguf::File fx = convert_folder(xlmr), fb = convert_folder(bert);
  for (const char* name : {"cls.weight", "cls.bias", "cls.output.weight", "cls.output.bias", "position_embd.weight", "token_embd.weight"}) {
    INFO(name);
    CHECK(tensor_bytes(fx, name) == tensor_bytes(fb, name));
  }
  CHECK(fx.get<uint32_t>("bert.pooling_type") == 4);  // RANK
  Context cx(load(xlmr), 2), cb(load(bert), 2);
  auto sx = cx.rerank("Wer spielt Gitarre?", {"Ein Mann spielt Gitarre.", "Die Börse fiel heute."});
  auto sb = cb.rerank("Wer spielt Gitarre?", {"Ein Mann spielt Gitarre.", "Die Börse fiel heute."});
  REQUIRE(sx.ok());
  REQUIRE(sb.ok());
  CHECK(sx.value() == sb.value());
  // XLM-R's pair layout <s> A </s></s> B </s>, all token type 0.
  const auto& tk = cx.model().tokenizer();
  const tok::Encoding e = tk.encode_pair("a", "b");
  REQUIRE(e.ids.size() >= 6);
  CHECK(e.ids.front() == 0);
  int sep = 0;
  for (size_t i = 0; i < e.ids.size(); i++) sep += e.ids[i] == 2;
  CHECK(sep == 3);
  for (int32_t t : e.type_ids) CHECK(t == 0);
}

TEST_CASE("XLM-R without pad_token_id, or with no position rows left, is refused", "[convert][xlmr]") {
  ScratchDir dir;
  nlohmann::json c = config("XLMRobertaModel", kMaxPos);
  c.erase("pad_token_id");
  const fs::path no_pad = write_folder(dir, "no-pad", c, body(27));
  ConvertOptions o;
  o.model_dir = no_pad.string();
  try {
    build_gguf(o);
    FAIL("converted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("pad_token_id"));
  }
  const fs::path short_ctx = write_folder(dir, "short", config("XLMRobertaModel", 2), body(27));
  o.model_dir = short_ctx.string();
  try {
    build_gguf(o);
    FAIL("converted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("leaves no positions"));
  }
}

TEST_CASE("torch.save state dicts are read, and other callables, compressed entries and corruption are refused", "[convert][m3]") {
  std::mt19937 rng(28);
  const PtTensor w = random_pt("weight", {3, 4}, rng), b = random_pt("bias", {3}, rng);
  const std::vector<uint8_t> good = torch_save({w, b});
  const std::vector<TorchTensor> got = read_torch_state_dict(good, "heads.pt");
  REQUIRE(got.size() == 2);
  CHECK(got[0].name == "weight");
  CHECK(got[0].shape == std::vector<int64_t>{3, 4});
  CHECK(got[0].values == w.values);
  CHECK(got[1].name == "bias");
  CHECK(got[1].values == b.values);

  auto refusal = [](const std::vector<uint8_t>& bytes) -> std::string {
    try {
      read_torch_state_dict(bytes, "bad.pt");
    } catch (const Error& e) {
      return e.what();
    }
    FAIL("accepted");
    return {};
  };
  std::string s(good.begin(), good.end());
  std::string hostile = s;
  hostile.replace(hostile.find("OrderedDict"), 11, "OrderedDicx");
  CHECK_THAT(refusal(std::vector<uint8_t>(hostile.begin(), hostile.end())), Catch::Contains("collections.OrderedDicx"));
  CHECK_THAT(refusal(torch_save({w}, "LongStorage")), Catch::Contains("torch.LongStorage"));
  std::string deflated = s;
  deflated[8] = 8;  // the first local header's method: deflate (the central directory still says stored)
  const size_t central = s.find(std::string("PK\x01\x02", 4));
  REQUIRE(central != std::string::npos);
  deflated[central + 10] = 8;
  CHECK_THAT(refusal(std::vector<uint8_t>(deflated.begin(), deflated.end())), Catch::Contains("compressed"));
  for (size_t cut : {size_t(0), size_t(21), good.size() / 2, good.size() - 1})
    CHECK_THROWS_AS(read_torch_state_dict(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut)), "cut.pt"),
                    Error);
  size_t refused = 0;
  for (int round = 0; round < 3000; round++) {
    std::vector<uint8_t> bytes = good;
    for (int k = 0; k < 1 + round % 4; k++) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    try {
      for (const TorchTensor& t : read_torch_state_dict(bytes, "flipped.pt")) {
        size_t n = 1;
        for (int64_t d : t.shape) n *= static_cast<size_t>(d);
        CHECK(n == t.values.size());
      }
    } catch (const Error&) {
      refused++;
    }
  }
  CHECK(refused > 0);
}

TEST_CASE("BGE-M3 heads: converted from .pt files, read out by FlagEmbedding's definitions in the same pass", "[convert][m3]") {
  ScratchDir dir;
  const fs::path m3 = write_folder(dir, "m3", config("XLMRobertaModel", kMaxPos), body(29));
  std::mt19937 rng(30);
  // Sparse bias 0.1 with small weights: some tokens positive, some not.
  const PtTensor sw = random_pt("weight", {1, kD}, rng), sb{"bias", {1}, {0.1f}};
  const PtTensor cw = random_pt("weight", {16, kD}, rng), cb = random_pt("bias", {16}, rng);
  write_bytes(m3 / "sparse_linear.pt", torch_save({sw, sb}));
  write_bytes(m3 / "colbert_linear.pt", torch_save({cw, cb}));
  const gguf::File f = convert_folder(m3);
  CHECK(f.get<std::string>("bert.sparse_formula") == "bge-m3");
  CHECK(f.get<std::string>("bert.colbert_formula") == "bge-m3");
  CHECK(f.find_tensor("cls.colbert.weight")->ne[1] == 16);
  const auto model = load(m3);
  CHECK(model->describe().colbert_dim == 16);
  Context ctx(model, 2);
  auto out = ctx.encode(kTexts, Outputs{true, true, true});
  INFO((out.ok() ? std::string() : out.error().message));
  REQUIRE(out.ok());
  auto dense = ctx.embed(kTexts);
  REQUIRE(dense.ok());
  CHECK(out.value().dense.data == dense.value().data);  // the dense row is embed()'s, bit for bit

  // The definitions, on the hidden states of a plain pass: relu(w.h + b) per token, <s> </s> <pad>
  // <unk> (ids 0, 2, 1, 3) dropped, the max kept per id; W h + b for tokens 1.., normalized.
  TokenBatch batch;
  std::vector<std::vector<int32_t>> ids;
  for (size_t i = 0; i < kTexts.size(); i++) {
    ids.push_back(model->tokenizer().encode(kTexts[i]).ids);
    batch.add(static_cast<int32_t>(i), ids.back());
  }
  Request r;
  r.hidden_states = true;
  auto run = ctx.run(batch, r);
  REQUIRE(run.ok());
  size_t kept = 0, dropped_nonpositive = 0;
  for (size_t i = 0; i < kTexts.size(); i++) {
    const float* h = run.value().hidden(static_cast<int32_t>(i));
    const int64_t n = run.value().n_tokens(static_cast<int32_t>(i));
    std::map<int32_t, float> want;
    for (int64_t t = 0; t < n; t++) {
      double s = sb.values[0];
      for (int64_t k = 0; k < kD; k++) s += double(sw.values[k]) * h[t * kD + k];
      const int32_t id = ids[i][t];
      if (id <= 3) continue;
      if (s <= 0) {
        dropped_nonpositive++;
        continue;
      }
      want[id] = std::max(want.count(id) ? want[id] : 0.0f, static_cast<float>(s));
    }
    const SparseRow& got = out.value().sparse[i];
    REQUIRE(got.ids.size() == want.size());
    size_t k = 0;
    for (const auto& [id, wv] : want) {
      CHECK(got.ids[k] == id);
      CHECK(got.weights[k] == Approx(wv).epsilon(1e-6));
      k++, kept++;
    }
    const MultiVectorRow& c = out.value().colbert[i];
    REQUIRE(c.rows == n - 1);
    REQUIRE(c.cols == 16);
    for (int64_t t = 1; t < n; t++) {
      std::vector<double> v(16);
      double norm = 0;
      for (int64_t o = 0; o < 16; o++) {
        double s = cb.values[o];
        for (int64_t q = 0; q < kD; q++) s += double(cw.values[o * kD + q]) * h[t * kD + q];
        v[o] = s, norm += s * s;
      }
      for (int64_t o = 0; o < 16; o++) CHECK(c.row(t - 1)[o] == Approx(v[o] / std::sqrt(norm)).margin(1e-6));
    }
  }
  CHECK(kept > 5);                // the test sees both sides of the relu
  CHECK(dropped_nonpositive > 5);
}

TEST_CASE("BGE-M3 scores: sparse, ColBERT and the weighted hybrid, worked by hand", "[convert][m3]") {
  const SparseRow q{{5, 9, 12}, {0.5f, 0.25f, 1.0f}}, d{{3, 9, 12, 40}, {2.0f, 0.5f, 0.75f, 1.0f}};
  CHECK(sparse_score(q, d) == Approx(0.25 * 0.5 + 1.0 * 0.75));  // shared ids 9 and 12: 0.875
  CHECK(sparse_score(q, SparseRow{}) == 0);
  // Query vectors (1,0), (0,1); document (0.6,0.8), (1,0): best dots 1 and 0.8, mean 0.9.
  const MultiVectorRow cq{2, 2, {1, 0, 0, 1}}, cd{2, 2, {0.6f, 0.8f, 1, 0}};
  CHECK(colbert_score(cq, cd) == Approx(0.9));
  const double w[3] = {0.4, 0.2, 0.4};
  CHECK(hybrid_score(0.7, 0.875, 0.9, w) == Approx((0.4 * 0.7 + 0.2 * 0.875 + 0.4 * 0.9) / 1.0));
  const double w2[3] = {1, 0.3, 0};
  CHECK(hybrid_score(0.7, 0.875, 123, w2) == Approx((0.7 + 0.3 * 0.875) / 1.3));
  const double zero[3] = {0, 0, 0};
  CHECK_THROWS_AS(hybrid_score(1, 1, 1, zero), Error);
}

TEST_CASE("BGE-M3 heads without a known formula are refused, and a model without heads says so", "[convert][m3]") {
  ScratchDir dir;
  const fs::path plain = write_folder(dir, "plain", config("XLMRobertaModel", kMaxPos), body(31));
  for (const char* formula : {"", "other-fork"}) {
    ConvertOptions o;
    o.model_dir = plain.string();
    gguf::Writer w = build_gguf(o);
    const std::vector<float> weight(kD, 0.5f), bias(1, 0.1f);
    w.add_tensor("cls.sparse.weight", gguf::TensorType::F32, {kD, 1}, weight.data(), weight.size() * 4);
    w.add_tensor("cls.sparse.bias", gguf::TensorType::F32, {1}, bias.data(), bias.size() * 4);
    const std::string key = std::string("bert.") + arch::kSparseFormulaKey;
    if (*formula) w.set_string(key, formula);
    auto m = Model::load(gguf::File::from_bytes(w.to_bytes(), "m3.gguf"), ModelOptions{Device::Cpu, 1});
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().kind == ErrorKind::Unsupported);
    CHECK_THAT(m.error().message, Catch::Contains(key));
  }
  Context ctx(load(plain), 1);
  CHECK_FALSE(ctx.model().describe().sparse_head);
  auto sparse = ctx.encode({"hello"}, Outputs{true, true, false});
  REQUIRE_FALSE(sparse.ok());
  CHECK_THAT(sparse.error().message, Catch::Contains("no sparse head"));
  auto colbert = ctx.encode({"hello"}, Outputs{false, false, true});
  REQUIRE_FALSE(colbert.ok());
  CHECK_THAT(colbert.error().message, Catch::Contains("no ColBERT head"));
}
