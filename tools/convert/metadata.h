// HF config -> GGUF metadata keys (`general.*` and `<arch>.*`) as llama.cpp's converter writes
// them for bert, qwen2, qwen3 and llama. Tokenizer keys are tokenizer/hf_import.h's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "tools/convert/encode.h"
#include "tools/convert/hf_folder.h"
#include "tools/convert/tensor_map.h"

namespace embed::convert {

struct MetadataInputs {
  const HfModel* model = nullptr;
  const ArchParams* params = nullptr;
  OutType type = OutType::F16;
  std::string name;                         // general.name
  std::vector<std::string> classifier_labels;  // bert cls.output rows, in order
};

const char* pooling_name(Pooling p);  // "mean", "cls", "last", "rank", "none"

// The pooling type the GGUF declares, if any (classifier heads and rerankers: RANK).
std::optional<Pooling> effective_pooling(const HfModel& m, bool has_classifier);

void write_model_metadata(const MetadataInputs& in, gguf::Writer& w);

// BERT id2label -> labels ordered by id; `n_labels` rows of the classifier must match.
std::vector<std::string> classifier_labels(const HfModel& m, int64_t n_labels);

}  // namespace embed::convert
