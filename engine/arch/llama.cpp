// `llama`: Llama decoders. NORM RoPE (adjacent pairs): llama.cpp's converter permutes the q/k
// weights so HF's rotate-half becomes the pairwise form. q/k/v biases optional.
#include "engine/arch/llama_family.h"

namespace embed::arch {
namespace {

class Llama final : public Architecture {
 public:
  Llama(const gguf::File& f, WeightLoader& w) {
    dims_ = read_decoder_dims(f, "llama", RopeMode::Norm, info_);
    if (w.has("rope_freqs.weight"))
      fail(ErrorKind::Unsupported, f.path() + ": llama rope_freqs (Llama 3.1 long-context RoPE scaling) is not supported");
    info_.default_pooling = read_pooling(HParams(f, "llama"), Pooling::Last);
    info_.rank_head = RankHead{PoolKind::Last, Activation::Tanh, /*softmax=*/false};
    weights_ = load_decoder_weights(w, dims_, /*qkv_biases=*/false, /*qk_norm=*/false);
    load_rank_head(w, info_);
  }
  void forward(ForwardPass& fp, Tensor x) const override { decoder_forward(fp, weights_, dims_, x); }

 private:
  DecoderDims dims_;
  DecoderWeights weights_;
};

}  // namespace

std::unique_ptr<Architecture> create_llama(const gguf::File& f, WeightLoader& w) { return std::make_unique<Llama>(f, w); }

}  // namespace embed::arch
