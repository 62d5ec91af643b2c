// Reads tokenizer.ggml.* metadata into a Vocab, applying llama.cpp's per-family defaults for the
// special ids and add_* flags, then the file's own values. Validates sizes; never trusts the file.
#include "tokenizer/vocab.h"

#include <string>

#include "base/error.h"

namespace embed::tok {
namespace {

constexpr const char* kSupportedModels = "bert (WordPiece), gpt2 (byte-level BPE), llama (SentencePiece BPE), t5 (Unigram)";

void set_family_defaults(Vocab& v) {
  if (v.model == "llama") {
    v.bos = 1, v.eos = 2, v.unk = 0;
    v.add_bos = true, v.add_space_prefix = true;
  } else if (v.model == "bert") {
    v.bos = 101, v.cls = 101, v.unk = 100, v.sep = 102, v.pad = 0, v.mask = 103;
    v.add_bos = true, v.add_sep = true;
  } else if (v.model == "gpt2") {
    v.bos = 11, v.eos = 11;
  } else if (v.model == "t5") {
    v.eos = 1, v.unk = 2, v.pad = 0;
    v.add_eos = true, v.add_space_prefix = true, v.remove_extra_whitespaces = true;
  } else {
    fail(ErrorKind::Unsupported, "tokenizer.ggml.model \"" + v.model + "\" is not supported; supported: " + kSupportedModels);
  }
}

void read_special_id(const gguf::File& f, Vocab& v, const char* key, int32_t& dst) {
  const std::string full = std::string("tokenizer.ggml.") + key;
  auto id = f.find<int64_t>(full);
  if (!id) return;
  if (*id < 0 || static_cast<uint64_t>(*id) >= v.pieces.size()) {
    v.warnings.push_back(full + " = " + std::to_string(*id) + " is outside the vocabulary of " +
                         std::to_string(v.pieces.size()) + " tokens; ignored");
    dst = -1;
    return;
  }
  dst = static_cast<int32_t>(*id);
}

void read_arrays(const gguf::File& f, Vocab& v) {
  const auto& toks = f.get_string_array("tokenizer.ggml.tokens");
  if (toks.empty()) fail(ErrorKind::Format, "tokenizer.ggml.tokens is empty");
  if (toks.size() > (1u << 30)) fail(ErrorKind::Format, "tokenizer.ggml.tokens has too many entries");
  v.pieces.assign(toks.begin(), toks.end());
  if (auto sc = f.find_array("tokenizer.ggml.scores")) {
    if (sc->count != v.pieces.size())
      fail(ErrorKind::Format, "tokenizer.ggml.scores has " + std::to_string(sc->count) + " entries, expected " +
                                  std::to_string(v.pieces.size()));
    if (sc->elem_type == gguf::ValueType::F32) {
      v.scores = f.get_array<float>("tokenizer.ggml.scores");
    } else {
      for (int32_t s : f.get_array<int32_t>("tokenizer.ggml.scores")) v.scores.push_back(static_cast<float>(s));
    }
  }
  v.types.assign(v.pieces.size(), TokenType::Normal);
  if (auto ty = f.find_array("tokenizer.ggml.token_type")) {
    if (ty->count != v.pieces.size())
      fail(ErrorKind::Format, "tokenizer.ggml.token_type has " + std::to_string(ty->count) + " entries, expected " +
                                  std::to_string(v.pieces.size()));
    const auto raw = f.get_array<int32_t>("tokenizer.ggml.token_type");
    for (size_t i = 0; i < raw.size(); ++i)
      v.types[i] = (raw[i] >= 0 && raw[i] <= 6) ? static_cast<TokenType>(raw[i]) : TokenType::Normal;
  }
  if (f.has("tokenizer.ggml.merges")) {
    const auto& m = f.get_string_array("tokenizer.ggml.merges");
    v.merges.assign(m.begin(), m.end());
  }
  if (auto cm = f.find_array("tokenizer.ggml.precompiled_charsmap")) {
    if (cm->elem_type == gguf::ValueType::U8) v.precompiled_charsmap = f.get_array<uint8_t>("tokenizer.ggml.precompiled_charsmap");
    else for (int8_t b : f.get_array<int8_t>("tokenizer.ggml.precompiled_charsmap")) v.precompiled_charsmap.push_back(static_cast<uint8_t>(b));
  }
}

// Per-token attributes of added tokens; ids must name added tokens (control, user-defined, unknown).
void read_added_flags(const gguf::File& f, Vocab& v) {
  v.added_flags.assign(v.pieces.size(), 0);
  for (const AddedFlagKey& k : kAddedFlagKeys) {
    if (!f.has(k.key)) continue;
    v.has_added_flags = true;
    for (uint32_t id : f.get_array<uint32_t>(k.key)) {
      if (id >= v.pieces.size() || !v.is_added(static_cast<int32_t>(id)))
        fail(ErrorKind::Format, std::string(k.key) + " names token " + std::to_string(id) +
                                    (id >= v.pieces.size() ? ", outside the vocabulary of " + std::to_string(v.pieces.size()) + " tokens"
                                                           : ", which is not an added token (control, user-defined or unknown)"));
      v.added_flags[id] |= k.flag;
    }
  }
}

}  // namespace

Vocab Vocab::from_gguf(const gguf::File& f) {
  Vocab v;
  if (!f.has("tokenizer.ggml.model")) fail(ErrorKind::Format, f.path() + ": no tokenizer.ggml.model key (the file has no vocabulary)");
  v.model = f.get<std::string>("tokenizer.ggml.model");
  v.pre = f.get_or<std::string>("tokenizer.ggml.pre", "");
  set_family_defaults(v);
  read_arrays(f, v);
  read_added_flags(f, v);
  v.ids.reserve(v.pieces.size());
  for (size_t i = 0; i < v.pieces.size(); ++i) v.ids.emplace(v.pieces[i], static_cast<int32_t>(i));

  // Family defaults may point past a small vocabulary: drop those silently, the file's own ids
  // are checked (and warned about) below.
  for (int32_t* id : {&v.bos, &v.eos, &v.unk, &v.sep, &v.pad, &v.cls, &v.mask})
    if (*id >= static_cast<int32_t>(v.pieces.size())) *id = -1;
  read_special_id(f, v, "bos_token_id", v.bos);
  read_special_id(f, v, "eos_token_id", v.eos);
  read_special_id(f, v, "eot_token_id", v.eot);
  read_special_id(f, v, "unknown_token_id", v.unk);
  read_special_id(f, v, "seperator_token_id", v.sep);  // sic: llama.cpp's key is misspelled
  read_special_id(f, v, "padding_token_id", v.pad);
  read_special_id(f, v, "cls_token_id", v.cls);
  read_special_id(f, v, "mask_token_id", v.mask);
  if (v.model == "bert" && !f.has("tokenizer.ggml.cls_token_id")) v.cls = v.bos;

  v.add_bos = f.get_or<bool>("tokenizer.ggml.add_bos_token", v.add_bos);
  v.add_eos = f.get_or<bool>("tokenizer.ggml.add_eos_token", v.add_eos);
  v.add_sep = f.get_or<bool>("tokenizer.ggml.add_sep_token", v.add_sep);
  // A WordPiece text closes with [SEP]. gguf-py's SpecialVocab records that closing token as
  // add_eos_token (add_sep_token false) when the HF tokenizer calls [SEP] its eos token, and
  // llama.cpp appends [SEP] to a WordPiece text whatever add_sep_token says: either key asks for it.
  if (v.model == "bert" && v.add_eos && v.eos >= 0 && v.eos == v.sep) v.add_sep = true;
  v.add_space_prefix = f.get_or<bool>("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
  v.remove_extra_whitespaces = f.get_or<bool>("tokenizer.ggml.remove_extra_whitespaces", v.remove_extra_whitespaces);
  // llama.cpp: strip_accents follows lowercase unless the file says otherwise.
  v.lowercase = f.get_or<bool>("tokenizer.ggml.normalizer.lowercase", v.lowercase);
  v.strip_accents = f.get_or<bool>("tokenizer.ggml.normalizer.strip_accents", v.lowercase);
  if (auto arch = f.find<std::string>("general.architecture"))
    v.pooling_type = f.get_or<int64_t>(*arch + ".pooling_type", -1);
  return v;
}

}  // namespace embed::tok
