// `qwen2`: Qwen2 decoders (e.g. gte-Qwen2 style embedders): pre-RMSNorm, q/k/v projections with
// biases, NEOX RoPE, grouped-query causal attention, SwiGLU (HF modeling_qwen2.py).
#include "engine/arch/llama_family.h"

namespace embed::arch {
namespace {

class Qwen2 final : public Architecture {
 public:
  Qwen2(const gguf::File& f, WeightLoader& w) {
    dims_ = read_decoder_dims(f, "qwen2", RopeMode::Neox, info_);
    info_.default_pooling = read_pooling(HParams(f, "qwen2"), Pooling::Last);
    info_.rank_head = RankHead{PoolKind::Last, Activation::Tanh, /*softmax=*/false};
    weights_ = load_decoder_weights(w, dims_, /*qkv_biases=*/true, /*qk_norm=*/false);
    load_rank_head(w, info_);
  }
  void forward(ForwardPass& fp, Tensor x) const override { decoder_forward(fp, weights_, dims_, x); }

 private:
  DecoderDims dims_;
  DecoderWeights weights_;
};

}  // namespace

std::unique_ptr<Architecture> create_qwen2(const gguf::File& f, WeightLoader& w) { return std::make_unique<Qwen2>(f, w); }

}  // namespace embed::arch
