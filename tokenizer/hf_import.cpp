// HF tokenizer.json -> tokenizer.ggml.* metadata (llama.cpp conventions, as convert_hf_to_gguf.py
// and gguf-py's SpecialVocab write them). Each HF model type has one writer function below; the
// special ids and add_* flags come from the post-processor template first, then the configs.
#include "tokenizer/hf_import.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "base/error.h"
#include "tokenizer/sentencepiece_model.h"
#include "tokenizer/vocab.h"

namespace embed::tok {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::optional<json> read_json(const fs::path& p, bool required) {
  std::ifstream in(p);
  if (!in) {
    if (required) fail(ErrorKind::Io, p.string() + ": cannot open (an HF tokenizer folder needs tokenizer.json)");
    return std::nullopt;
  }
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    fail(ErrorKind::Format, p.string() + ": not valid JSON: " + e.what());
  }
}

// Everything the import needs from the folder's JSON files.
struct HfFolder {
  std::string dir;
  json tok;
  json config;  // tokenizer_config.json merged over special_tokens_map.json ({} when absent)
  json model_config;
  [[noreturn]] void bad(const std::string& what) const { fail(ErrorKind::Format, dir + "/tokenizer.json: " + what); }
  [[noreturn]] void unsupported(const std::string& what) const {
    fail(ErrorKind::Unsupported, dir + "/tokenizer.json: " + what);
  }
};

// A token written in the configs either as "text" or as {"content": "text", ...}.
std::optional<std::string> token_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

struct Added {
  int32_t id;
  std::string content;
  bool special;
  uint8_t flags;  // AddedFlag bits (tokenizer/vocab.h)
};

// The added tokens with their HF attributes; `in_model(id, content)` says whether the model's own
// vocabulary has the token (otherwise only the added-token matching ever produces it).
template <class InModel>
std::vector<Added> added_tokens(const HfFolder& h, InModel in_model) {
  std::vector<Added> out;
  if (!h.tok.contains("added_tokens")) return out;
  for (const auto& a : h.tok["added_tokens"]) {
    if (!a.contains("id") || !a.contains("content")) h.bad("an added_tokens entry lacks id or content");
    const int64_t id = a["id"].get<int64_t>();
    if (id < 0 || id > (1 << 28)) h.bad("added token id " + std::to_string(id) + " is out of range");
    Added t{static_cast<int32_t>(id), a["content"].get<std::string>(), a.value("special", false), 0};
    if (a.value("lstrip", false)) t.flags |= kLstrip;
    if (a.value("rstrip", false)) t.flags |= kRstrip;
    if (a.value("single_word", false)) t.flags |= kSingleWord;
    if (a.value("normalized", !t.special)) t.flags |= kNormalized;  // HF's default: normalized unless special
    if (!in_model(t.id, t.content)) t.flags |= kAddedOnly;
    out.push_back(std::move(t));
  }
  return out;
}

// In a {"piece": id} vocabulary (WordPiece, BPE).
auto in_vocab_map(const json& vocab) {
  return [&vocab](int32_t id, const std::string& content) {
    const auto it = vocab.find(content);
    return it != vocab.end() && it->is_number_integer() && it->get<int64_t>() == id;
  };
}

// tokenizer.embed.<flag>: the ids of the added tokens carrying each attribute. Written always
// (empty lists included), so readers know the file says which tokens have none.
void write_added_flags(gguf::Writer& w, const std::vector<Added>& added) {
  for (const AddedFlagKey& k : kAddedFlagKeys) {
    std::vector<uint32_t> ids;
    for (const Added& a : added)
      if (a.flags & k.flag) ids.push_back(static_cast<uint32_t>(a.id));
    w.set_array<uint32_t>(k.key, ids);
  }
}

// Id-ordered pieces from a {"piece": id} vocabulary plus added tokens; holes get llama.cpp's
// "[PAD<id>]" filler so that ids stay positions.
std::vector<std::string> ordered_pieces(const HfFolder& h, const json& vocab, const std::vector<Added>& added) {
  std::map<int64_t, std::string> by_id;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) by_id[it.value().get<int64_t>()] = it.key();
  for (const auto& a : added) by_id[a.id] = a.content;
  if (by_id.empty()) h.bad("the vocabulary is empty");
  if (by_id.begin()->first < 0 || by_id.rbegin()->first > (1 << 28)) h.bad("vocabulary ids out of range");
  std::vector<std::string> pieces(static_cast<size_t>(by_id.rbegin()->first + 1));
  for (size_t i = 0; i < pieces.size(); ++i) pieces[i] = "[PAD" + std::to_string(i) + "]";
  for (auto& [id, text] : by_id) pieces[static_cast<size_t>(id)] = text;
  return pieces;
}

std::vector<int32_t> token_types(size_t n, const std::vector<Added>& added) {
  std::vector<int32_t> types(n, static_cast<int32_t>(TokenType::Normal));
  for (const auto& a : added)
    types[static_cast<size_t>(a.id)] = static_cast<int32_t>(a.special ? TokenType::Control : TokenType::UserDefined);
  return types;
}

// Special ids: the post-processor template decides BOS/EOS and whether they are added (as gguf-py
// does, which gives Qwen3-Embedding add_eos_token=true with <|endoftext|>); configs fill the rest.
struct Specials {
  std::map<std::string, int32_t> ids;  // "bos", "eos", "unk", "sep", "pad", "cls", "mask"
  std::optional<bool> add_bos, add_eos;
};

void specials_from_template(const HfFolder& h, const std::map<std::string, int32_t>& id_of, Specials& s) {
  if (!h.tok.contains("post_processor") || h.tok["post_processor"].is_null()) return;
  const json& pp = h.tok["post_processor"];
  const std::string type = pp.value("type", "");
  auto lookup = [&](const std::string& text) -> int32_t {
    auto it = id_of.find(text);
    if (it == id_of.end()) h.bad("post_processor names \"" + text + "\", which is not in the vocabulary");
    return it->second;
  };
  if (type == "TemplateProcessing" && pp.contains("single")) {
    const json& single = pp["single"];
    if (single.empty()) return;
    const json& first = single.front();
    const json& last = single.back();
    s.add_bos = first.contains("SpecialToken");
    s.add_eos = single.size() > 1 && last.contains("SpecialToken");
    if (*s.add_bos) s.ids["bos"] = lookup(first["SpecialToken"]["id"].get<std::string>());
    if (*s.add_eos) s.ids["eos"] = lookup(last["SpecialToken"]["id"].get<std::string>());
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    s.ids["bos"] = lookup(pp["cls"][0].get<std::string>());
    s.ids["eos"] = lookup(pp["sep"][0].get<std::string>());
    s.add_bos = s.add_eos = true;
  }
}

Specials collect_specials(const HfFolder& h, const std::vector<std::string>& pieces) {
  std::map<std::string, int32_t> id_of;
  for (size_t i = 0; i < pieces.size(); ++i) id_of.emplace(pieces[i], static_cast<int32_t>(i));
  Specials s;
  for (const char* role : {"bos", "eos", "unk", "sep", "pad", "cls", "mask"}) {
    const std::string key = std::string(role) + "_token";
    if (!h.config.contains(key)) continue;
    if (auto text = token_text(h.config[key])) {
      auto it = id_of.find(*text);
      if (it != id_of.end()) s.ids[role] = it->second;
    }
  }
  specials_from_template(h, id_of, s);
  if (!s.add_bos && h.config.contains("add_bos_token") && h.config["add_bos_token"].is_boolean())
    s.add_bos = h.config["add_bos_token"].get<bool>();
  if (!s.add_eos && h.config.contains("add_eos_token") && h.config["add_eos_token"].is_boolean())
    s.add_eos = h.config["add_eos_token"].get<bool>();
  return s;
}

void write_specials(gguf::Writer& w, const Specials& s) {
  static const std::map<std::string, std::string> kKey = {
      {"bos", "bos_token_id"}, {"eos", "eos_token_id"}, {"unk", "unknown_token_id"}, {"sep", "seperator_token_id"},
      {"pad", "padding_token_id"}, {"cls", "cls_token_id"}, {"mask", "mask_token_id"}};
  for (const auto& [role, id] : s.ids) w.set<uint32_t>("tokenizer.ggml." + kKey.at(role), static_cast<uint32_t>(id));
  if (s.add_bos) w.set<bool>("tokenizer.ggml.add_bos_token", *s.add_bos);
  if (s.add_eos) w.set<bool>("tokenizer.ggml.add_eos_token", *s.add_eos);
}

// The normalizer list, flattening one level of "Sequence".
std::vector<json> flatten(const json& node, const char* list_key) {
  std::vector<json> out;
  if (node.is_null()) return out;
  if (node.value("type", "") == "Sequence") {
    for (const auto& n : node[list_key]) out.push_back(n);
  } else {
    out.push_back(node);
  }
  return out;
}

std::string import_wordpiece(const HfFolder& h, gguf::Writer& w) {
  const json& model = h.tok["model"];
  const auto added = added_tokens(h, in_vocab_map(model["vocab"]));
  auto pieces = ordered_pieces(h, model["vocab"], added);
  const auto types = token_types(pieces.size(), added);
  const std::string prefix = model.value("continuing_subword_prefix", "##");
  // llama.cpp's WPM vocabulary: control tokens unchanged, continuation pieces lose their
  // prefix, word-initial pieces gain U+2581. User-defined tokens stay as the text they match
  // (llama.cpp's converter prefixes them too; the tokenizer accepts both).
  const Specials s = collect_specials(h, pieces);
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (types[i] == static_cast<int32_t>(TokenType::Control) || types[i] == static_cast<int32_t>(TokenType::UserDefined)) continue;
    if (!prefix.empty() && pieces[i].rfind(prefix, 0) == 0 && pieces[i].size() > prefix.size())
      pieces[i] = pieces[i].substr(prefix.size());
    else
      pieces[i] = "\xE2\x96\x81" + pieces[i];
  }
  bool lowercase = true;
  std::optional<bool> strip;
  for (const json& n : flatten(h.tok.value("normalizer", json()), "normalizers")) {
    if (n.value("type", "") != "BertNormalizer") h.unsupported("WordPiece with normalizer " + n.value("type", "?"));
    lowercase = n.value("lowercase", true);
    if (n.contains("strip_accents") && n["strip_accents"].is_boolean()) strip = n["strip_accents"].get<bool>();
  }
  w.set_string("tokenizer.ggml.model", "bert");
  w.set_string("tokenizer.ggml.pre", "default");
  w.set_string_array("tokenizer.ggml.tokens", pieces);
  w.set_array<int32_t>("tokenizer.ggml.token_type", types);
  Specials out = s;
  if (auto unk = model.find("unk_token"); unk != model.end() && unk->is_string()) {
    for (size_t i = 0; i < pieces.size(); ++i)
      if (types[i] == static_cast<int32_t>(TokenType::Control) && pieces[i] == unk->get<std::string>()) out.ids["unk"] = static_cast<int32_t>(i);
  }
  // WPM: BOS is the [CLS] id and SEP closes every sequence (BertProcessing / the template).
  if (out.ids.count("cls")) out.ids["bos"] = out.ids["cls"];
  out.ids.erase("eos");  // llama.cpp's WPM has no EOS; [SEP] is the separator
  out.add_bos = true;
  out.add_eos = false;
  write_specials(w, out);
  w.set<bool>("tokenizer.ggml.add_sep_token", true);
  w.set<bool>("tokenizer.ggml.normalizer.lowercase", lowercase);
  w.set<bool>("tokenizer.ggml.normalizer.strip_accents", strip.value_or(lowercase));
  w.set<uint32_t>("tokenizer.ggml.token_type_count", h.model_config.value("type_vocab_size", 2u));
  write_added_flags(w, added);
  return "bert";
}

std::string detect_bpe_pre(const HfFolder& h) {
  bool byte_level = false;
  std::string regex;
  for (const json& p : flatten(h.tok.value("pre_tokenizer", json()), "pretokenizers")) {
    const std::string type = p.value("type", "");
    if (type == "ByteLevel") {
      byte_level = true;
      if (p.value("use_regex", true)) regex = kGpt2Regex;
    } else if (type == "Split" && p.contains("pattern") && p["pattern"].contains("Regex")) {
      regex = p["pattern"]["Regex"].get<std::string>();
    } else {
      h.unsupported("BPE pre-tokenizer " + type + " (supported: ByteLevel, Split with a known regex)");
    }
  }
  if (!byte_level) h.unsupported("BPE without a ByteLevel pre-tokenizer (only byte-level BPE is supported)");
  if (regex == kQwen2Regex) return "qwen2";
  if (regex == kLlama3Regex) return "llama-bpe";
  if (regex == kGpt2Regex) return "gpt-2";
  h.unsupported("BPE pre-tokenizer regex " + regex + " (supported: the qwen2, llama3 and gpt-2 patterns)");
}

std::string import_bpe(const HfFolder& h, gguf::Writer& w) {
  const json& model = h.tok["model"];
  const std::string pre = detect_bpe_pre(h);
  for (const json& n : flatten(h.tok.value("normalizer", json()), "normalizers"))
    if (n.value("type", "") != "NFC") h.unsupported("byte-level BPE with normalizer " + n.value("type", "?") + " (only NFC)");
  const auto added = added_tokens(h, in_vocab_map(model["vocab"]));
  const auto pieces = ordered_pieces(h, model["vocab"], added);
  std::vector<std::string> merges;
  merges.reserve(model["merges"].size());
  for (const auto& m : model["merges"]) {
    if (m.is_string()) merges.push_back(m.get<std::string>());
    else if (m.is_array() && m.size() == 2) merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    else h.bad("a merges entry is neither \"a b\" nor [\"a\", \"b\"]");
  }
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  w.set_string_array("tokenizer.ggml.tokens", pieces);
  w.set_array<int32_t>("tokenizer.ggml.token_type", token_types(pieces.size(), added));
  w.set_string_array("tokenizer.ggml.merges", merges);
  Specials s = collect_specials(h, pieces);
  if (!s.add_bos) s.add_bos = false;
  // No BOS in the HF files (Qwen): name the EOS, as llama.cpp's Qwen GGUFs do, rather than let
  // readers fall back to the gpt2 family default (id 11, an ordinary token). It is never added.
  if (!s.ids.count("bos") && s.ids.count("eos")) s.ids["bos"] = s.ids["eos"];
  write_specials(w, s);
  write_added_flags(w, added);
  return "gpt2";
}

std::vector<uint8_t> base64_decode(const HfFolder& h, const std::string& in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' || c == '\n') continue;
    const int v = val(c);
    if (v < 0) h.bad("precompiled_charsmap is not base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

std::string import_unigram(const HfFolder& h, gguf::Writer& w) {
  const json& model = h.tok["model"];
  std::vector<std::string> pieces;
  std::vector<float> scores;
  for (const auto& e : model["vocab"]) {
    if (!e.is_array() || e.size() != 2) h.bad("a Unigram vocab entry is not [piece, score]");
    pieces.push_back(e[0].get<std::string>());
    scores.push_back(e[1].get<float>());
  }
  if (pieces.empty()) h.bad("the Unigram vocabulary is empty");
  const size_t n_model = pieces.size();
  const auto added = added_tokens(h, [&](int32_t id, const std::string& content) {
    return static_cast<size_t>(id) < n_model && pieces[static_cast<size_t>(id)] == content;
  });
  // Added tokens outside the model's vocabulary extend it (holes as in ordered_pieces); the model
  // never produces them (added_only), so their score does not matter.
  for (const Added& a : added) {
    if (static_cast<size_t>(a.id) < n_model) {
      if (pieces[static_cast<size_t>(a.id)] != a.content)
        h.bad("added token " + std::to_string(a.id) + " \"" + a.content + "\" differs from the vocabulary's \"" +
              pieces[static_cast<size_t>(a.id)] + "\"");
      continue;
    }
    while (pieces.size() <= static_cast<size_t>(a.id)) pieces.push_back("[PAD" + std::to_string(pieces.size()) + "]"), scores.push_back(0.f);
    pieces[static_cast<size_t>(a.id)] = a.content;
  }
  auto types = token_types(pieces.size(), added);
  const int64_t unk = model.value("unk_id", int64_t{-1});
  if (unk >= 0 && static_cast<size_t>(unk) < pieces.size()) types[static_cast<size_t>(unk)] = static_cast<int32_t>(TokenType::Unknown);
  if (model.value("byte_fallback", false))
    for (size_t i = 0; i < pieces.size(); ++i)
      if (pieces[i].size() == 6 && pieces[i].rfind("<0x", 0) == 0 && pieces[i].back() == '>') types[i] = static_cast<int32_t>(TokenType::Byte);
  std::vector<uint8_t> charsmap;
  bool remove_extra_ws = false;
  for (const json& n : flatten(h.tok.value("normalizer", json()), "normalizers")) {
    const std::string type = n.value("type", "");
    if (type == "Precompiled") {
      charsmap = base64_decode(h, n.value("precompiled_charsmap", ""));
    } else if (type == "Replace" && n["pattern"].value("Regex", "") == " {2,}" && n.value("content", "") == " ") {
      remove_extra_ws = true;
    } else {
      h.unsupported("Unigram with normalizer " + type + " (supported: Precompiled, Replace \" {2,}\")");
    }
  }
  bool space_prefix = false;
  for (const json& p : flatten(h.tok.value("pre_tokenizer", json()), "pretokenizers")) {
    const std::string type = p.value("type", "");
    if (type == "Metaspace") {
      space_prefix = p.value("prepend_scheme", std::string(p.value("add_prefix_space", true) ? "always" : "never")) != "never";
    } else if (type == "WhitespaceSplit") {
      // transformers 5's SentencePiece conversion (T5): words split at whitespace runs, each then
      // "▁"-prefixed by Metaspace. SentencePiece's pieces never hold "▁" after their start, so
      // this equals one Viterbi pass over the text with its whitespace runs collapsed and trimmed:
      // remove_extra_whitespaces.
      remove_extra_ws = true;
    } else {
      h.unsupported("Unigram with pre-tokenizer " + type + " (supported: Metaspace, WhitespaceSplit)");
    }
  }
  w.set_string("tokenizer.ggml.model", "t5");
  w.set_string("tokenizer.ggml.pre", "default");
  w.set_string_array("tokenizer.ggml.tokens", pieces);
  w.set_array<float>("tokenizer.ggml.scores", scores);
  w.set_array<int32_t>("tokenizer.ggml.token_type", types);
  if (!charsmap.empty()) w.set_array<uint8_t>("tokenizer.ggml.precompiled_charsmap", charsmap);
  w.set<bool>("tokenizer.ggml.add_space_prefix", space_prefix);
  w.set<bool>("tokenizer.ggml.remove_extra_whitespaces", remove_extra_ws);
  Specials s = collect_specials(h, pieces);
  if (unk >= 0) s.ids["unk"] = static_cast<int32_t>(unk);
  if (!s.add_bos) s.add_bos = false;
  if (!s.add_eos) s.add_eos = false;
  write_specials(w, s);
  write_added_flags(w, added);
  return "t5";
}

// llama.cpp's converter (ModelBase.does_token_look_special) marks these added tokens CONTROL
// even when the config does not say "special".
bool looks_special(const std::string& t) {
  auto wrapped = [&](std::string_view open, std::string_view close) {
    return t.size() >= open.size() + close.size() && t.compare(0, open.size(), open) == 0 &&
           t.compare(t.size() - close.size(), close.size(), close) == 0;
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xEF\xBD\x9C", "\xEF\xBD\x9C>") || wrapped("<unused", ">");
}

// SentencePiece BPE (Gemma, Llama 2): the pieces, scores and types of tokenizer.model, padded or
// cut to config.json's vocab_size, then added_tokens.json and tokenizer_config.json's
// added_tokens_decoder on top, as llama.cpp's _create_vocab_sentencepiece does.
std::string import_sentencepiece(const HfFolder& h, gguf::Writer& w) {
  const fs::path path = fs::path(h.dir) / "tokenizer.model";
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::Io, path.string() + ": cannot open");
  std::stringstream bytes;
  bytes << in.rdbuf();
  const SentencePieceModel m = parse_sentencepiece_model(bytes.str(), path.string());
  if (m.model_type != 2)
    fail(ErrorKind::Unsupported, path.string() + ": SentencePiece model type " + std::to_string(m.model_type) + " is not supported (BPE)");
  size_t n = m.pieces.size();
  if (const auto v = h.model_config.find("vocab_size"); v != h.model_config.end() && v->is_number_unsigned() && v->get<uint64_t>() > 0) {
    if (v->get<uint64_t>() > (1u << 28)) fail(ErrorKind::Format, h.dir + "/config.json: vocab_size is implausible");
    n = v->get<size_t>();
  }
  std::vector<std::string> pieces(n);
  std::vector<float> scores(n, -10000.0f);
  std::vector<int32_t> types(n, static_cast<int32_t>(TokenType::Unused));
  for (size_t i = 0; i < n; ++i) {
    if (i >= m.pieces.size()) {
      pieces[i] = "[PAD" + std::to_string(i) + "]";
      continue;
    }
    const auto& p = m.pieces[i];
    pieces[i] = p.text;
    scores[i] = p.score;
    // llama.cpp keeps UNKNOWN, CONTROL, UNUSED and BYTE; USER_DEFINED pieces count as NORMAL here.
    types[i] = p.type == SentencePieceModel::UserDefined ? static_cast<int32_t>(TokenType::Normal) : p.type;
  }
  auto add = [&](int64_t id, std::string text, TokenType type) {
    if (id < 0 || static_cast<size_t>(id) >= n) return;  // outside the vocabulary: llama.cpp ignores it too
    pieces[static_cast<size_t>(id)] = std::move(text);
    scores[static_cast<size_t>(id)] = -1000.0f;
    types[static_cast<size_t>(id)] = static_cast<int32_t>(type);
  };
  if (auto added = read_json(fs::path(h.dir) / "added_tokens.json", false); added && added->is_object())
    for (auto it = added->begin(); it != added->end(); ++it)
      if (it.value().is_number_integer()) add(it.value().get<int64_t>(), it.key(), TokenType::UserDefined);
  if (auto cfg = read_json(fs::path(h.dir) / "tokenizer_config.json", false); cfg && cfg->contains("added_tokens_decoder")) {
    const json& dec = (*cfg)["added_tokens_decoder"];
    for (auto it = dec.begin(); it != dec.end(); ++it) {
      const auto text = token_text(it.value());
      if (!text) h.bad("tokenizer_config.json added_tokens_decoder entry " + it.key() + " has no content");
      std::string t = *text;
      const bool control = (it.value().is_object() && it.value().value("special", false)) || looks_special(t);
      if (!control)
        for (size_t at; (at = t.find("\xE2\x96\x81")) != std::string::npos;) t.replace(at, 3, " ");
      add(std::strtoll(it.key().c_str(), nullptr, 10), t, control ? TokenType::Control : TokenType::UserDefined);
    }
  }
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string("tokenizer.ggml.pre", "default");
  w.set_string_array("tokenizer.ggml.tokens", pieces);
  w.set_array<float>("tokenizer.ggml.scores", scores);
  w.set_array<int32_t>("tokenizer.ggml.token_type", types);
  w.set<bool>("tokenizer.ggml.add_space_prefix", m.add_dummy_prefix);
  write_specials(w, collect_specials(h, pieces));
  return "llama";
}

// tokenizer.json of a SentencePiece BPE model (byte fallback, no byte-level pre-tokenizer) whose
// folder also has tokenizer.model: the model file holds the scores llama.cpp's "llama" vocab needs.
bool is_sentencepiece_bpe(const HfFolder& h) {
  return h.tok["model"].value("byte_fallback", false) && fs::is_regular_file(fs::path(h.dir) / "tokenizer.model");
}

}  // namespace

std::string import_hf_tokenizer(const std::string& model_dir, gguf::Writer& w) {
  HfFolder h;
  h.dir = model_dir;
  h.tok = *read_json(fs::path(model_dir) / "tokenizer.json", true);
  h.config = json::object();
  if (auto m = read_json(fs::path(model_dir) / "special_tokens_map.json", false)) h.config.update(*m);
  if (auto c = read_json(fs::path(model_dir) / "tokenizer_config.json", false)) h.config.update(*c);
  h.model_config = read_json(fs::path(model_dir) / "config.json", false).value_or(json::object());
  if (!h.tok.contains("model") || !h.tok["model"].contains("type")) h.bad("no model.type");
  const std::string type = h.tok["model"]["type"].get<std::string>();
  if (h.tok["model"].contains("vocab") == false) h.bad("no model.vocab");
  std::string kind;
  try {
    if (type == "WordPiece") kind = import_wordpiece(h, w);
    else if (type == "BPE" && is_sentencepiece_bpe(h)) kind = import_sentencepiece(h, w);
    else if (type == "BPE") kind = import_bpe(h, w);
    else if (type == "Unigram") kind = import_unigram(h, w);
    else h.unsupported("model type \"" + type + "\" (supported: WordPiece, BPE, Unigram)");
  } catch (const json::exception& e) {
    h.bad(std::string("unexpected structure: ") + e.what());
  }
  if (h.config.contains("chat_template") && h.config["chat_template"].is_string())
    w.set_string("tokenizer.chat_template", h.config["chat_template"].get<std::string>());
  return kind;
}

}  // namespace embed::tok
