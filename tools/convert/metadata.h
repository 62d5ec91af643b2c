// Metadata keys of the converted GGUF that are not hyperparameters (those are hparams.h's):
// `general.*`, pooling, classifier labels, the LM-head classifier's prompt template, the
// sentence-transformers prompts and Dense layers. Tokenizer keys are tokenizer/hf_import.h's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "tools/convert/encode.h"
#include "tools/convert/hf_folder.h"

namespace embed::convert {

struct MetadataInputs {
  const HfModel* model = nullptr;
  OutType type = OutType::F16;
  std::string name;                          // general.name
  std::vector<std::string> classifier_labels;  // cls.output rows, in order (empty: no classifier)
};

// The pooling type the GGUF declares, if any (classifier heads: RANK).
std::optional<Pooling> effective_pooling(const HfModel& m, bool has_classifier);

void write_model_metadata(const MetadataInputs& in, gguf::Writer& w);

// id2label -> labels ordered by id; `n_labels` rows of the classifier must match.
std::vector<std::string> classifier_labels(const HfModel& m, int64_t n_labels);

}  // namespace embed::convert
