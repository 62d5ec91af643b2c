// `qwen3`: Qwen3 decoders, as used by Qwen3-Embedding (last-token pooling at the appended
// <|endoftext|>) and Qwen3-Reranker (rank head: last token, cls.output = the lm_head rows of
// "yes"/"no", softmax, score = P(yes)). Differs from qwen2 by a per-head RMSNorm on q and k
// before RoPE (HF modeling_qwen3.py Qwen3Attention: q_norm/k_norm) and no q/k/v biases.
#include "engine/arch/llama_family.h"

namespace embed::arch {
namespace {

class Qwen3 final : public Architecture {
 public:
  Qwen3(const gguf::File& f, WeightLoader& w) {
    dims_ = read_decoder_dims(f, "qwen3", RopeMode::Neox, info_);
    info_.default_pooling = read_pooling(HParams(f, "qwen3"), Pooling::Last);
    info_.rank_head = RankHead{PoolKind::Last, Activation::Tanh, /*softmax=*/true};
    weights_ = load_decoder_weights(w, dims_, /*qkv_biases=*/false, /*qk_norm=*/true);
    load_rank_head(w, info_);
  }
  void forward(ForwardPass& fp, Tensor x) const override { decoder_forward(fp, weights_, dims_, x); }

 private:
  DecoderDims dims_;
  DecoderWeights weights_;
};

}  // namespace

std::unique_ptr<Architecture> create_qwen3(const gguf::File& f, WeightLoader& w) { return std::make_unique<Qwen3>(f, w); }

}  // namespace embed::arch
