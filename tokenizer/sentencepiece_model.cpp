// Protobuf wire format (varint, 64-bit, length-delimited, 32-bit) walked by hand for the few
// ModelProto fields the importer reads: pieces = 1, trainer_spec = 2 (model_type = 3),
// normalizer_spec = 3 (add_dummy_prefix = 3, remove_extra_whitespaces = 4).
#include "tokenizer/sentencepiece_model.h"

#include <cstring>
#include <string_view>

#include "base/error.h"

namespace embed::tok {
namespace {

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& label) : s_(bytes), label_(label) {}
  bool done() const { return pos_ >= s_.size(); }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= s_.size()) bad("truncated varint");
      const uint8_t b = static_cast<uint8_t>(s_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    bad("varint longer than 10 bytes");
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    if (n > s_.size() - pos_) bad("length " + std::to_string(n) + " runs past the end");
    const std::string_view out = s_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  float fixed32() {
    if (s_.size() - pos_ < 4) bad("truncated 32-bit field");
    uint32_t u;
    std::memcpy(&u, s_.data() + pos_, 4);  // little-endian, as the host
    pos_ += 4;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  void skip(int wire) {
    switch (wire) {
      case 0: varint(); return;
      case 1: advance(8); return;
      case 2: bytes(); return;
      case 5: advance(4); return;
      default: bad("unsupported wire type " + std::to_string(wire));
    }
  }
  [[noreturn]] void bad(const std::string& what) const {
    fail(ErrorKind::Format, label_ + ": not a valid SentencePiece model (" + what + " at byte " + std::to_string(pos_) + ")");
  }

 private:
  void advance(size_t n) {
    if (s_.size() - pos_ < n) bad("truncated field");
    pos_ += n;
  }
  std::string_view s_;
  const std::string& label_;
  size_t pos_ = 0;
};

SentencePieceModel::Piece read_piece(std::string_view msg, const std::string& label) {
  Reader r(msg, label);
  SentencePieceModel::Piece p;
  while (!r.done()) {
    const uint64_t tag = r.varint();
    const int field = static_cast<int>(tag >> 3), wire = static_cast<int>(tag & 7);
    if (field == 1 && wire == 2) p.text = std::string(r.bytes());
    else if (field == 2 && wire == 5) p.score = r.fixed32();
    else if (field == 3 && wire == 0) p.type = static_cast<int32_t>(r.varint());
    else r.skip(wire);
  }
  if (p.type < 1 || p.type > 6) r.bad("piece '" + p.text + "' has type " + std::to_string(p.type));
  return p;
}

// Reads varint field `want` of a sub-message into `out` (the last occurrence wins).
void read_varint_fields(std::string_view msg, const std::string& label, int want_a, uint64_t* a, int want_b, uint64_t* b) {
  Reader r(msg, label);
  while (!r.done()) {
    const uint64_t tag = r.varint();
    const int field = static_cast<int>(tag >> 3), wire = static_cast<int>(tag & 7);
    if (wire == 0 && field == want_a) *a = r.varint();
    else if (wire == 0 && field == want_b) *b = r.varint();
    else r.skip(wire);
  }
}

}  // namespace

SentencePieceModel parse_sentencepiece_model(const std::string& bytes, const std::string& label) {
  SentencePieceModel m;
  Reader r(bytes, label);
  while (!r.done()) {
    const uint64_t tag = r.varint();
    const int field = static_cast<int>(tag >> 3), wire = static_cast<int>(tag & 7);
    if (field == 1 && wire == 2) {
      m.pieces.push_back(read_piece(r.bytes(), label));
    } else if (field == 2 && wire == 2) {
      uint64_t type = static_cast<uint64_t>(m.model_type), unused = 0;
      read_varint_fields(r.bytes(), label, 3, &type, 0, &unused);
      m.model_type = static_cast<int32_t>(type);
    } else if (field == 3 && wire == 2) {
      uint64_t prefix = m.add_dummy_prefix, extra = m.remove_extra_whitespaces;
      read_varint_fields(r.bytes(), label, 3, &prefix, 4, &extra);
      m.add_dummy_prefix = prefix != 0;
      m.remove_extra_whitespaces = extra != 0;
    } else {
      r.skip(wire);
    }
  }
  if (m.pieces.empty()) r.bad("no pieces");
  return m;
}

}  // namespace embed::tok
