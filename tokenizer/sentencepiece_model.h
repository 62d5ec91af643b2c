// Reader of SentencePiece's tokenizer.model (a protobuf ModelProto): pieces with their scores
// and types, the model type and the normalizer flags the tokenizer needs. A minimal protobuf
// decoder that trusts nothing in the bytes; unknown fields are skipped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace embed::tok {

struct SentencePieceModel {
  // sentencepiece_model.proto SentencePiece.Type, which equals llama.cpp's token types.
  enum PieceType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };
  struct Piece {
    std::string text;
    float score = 0.0f;
    int32_t type = Normal;
  };
  std::vector<Piece> pieces;
  int32_t model_type = 1;              // TrainerSpec.ModelType: 1 UNIGRAM, 2 BPE, 3 WORD, 4 CHAR
  bool add_dummy_prefix = true;        // NormalizerSpec (protobuf defaults)
  bool remove_extra_whitespaces = true;
};

// Parses the bytes of a tokenizer.model; throws embed::Error (Format) naming `label` and the
// malformed part.
SentencePieceModel parse_sentencepiece_model(const std::string& bytes, const std::string& label);

}  // namespace embed::tok
