// config.json -> the architecture's hyperparameters and `{arch}.*` keys, through the
// description's HParamSpec rows (engine/arch/spec.h). The "@..." sources resolved here are HF's
// conventions, not any architecture's: RoPE settings in rope_parameters / rope_scaling or at the
// top level, layer_types as a sliding-window pattern, constants.
#pragma once

#include "engine/arch/spec.h"
#include "gguf/writer.h"
#include "tools/convert/hf_folder.h"

namespace embed::convert {

// Reads every key the description names from config.json (falling back to its hf_defaults),
// range-checks them, derives the rest as the engine does and applies the description's
// hf_checks. Errors name the config.json key.
arch::ArchParams read_hf_params(const HfModel& m);

// Writes the `{arch}.*` keys the description's Write rules ask for.
void write_hparams(const HfModel& m, gguf::Writer& w);

}  // namespace embed::convert
