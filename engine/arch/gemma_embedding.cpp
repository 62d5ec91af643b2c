// `gemma-embedding`: EmbeddingGemma. The Gemma 3 block with bidirectional attention and a
// symmetric sliding window (key visible iff |i - j| <= n_swa / 2 on local layers), mean pooling,
// then the sentence-transformers Dense layers (dense_2: d_model -> dense_2_feat_out, dense_3:
// back to d_model) when the converter kept them. (llama.cpp src/models/gemma-embedding.cpp.)
#include "engine/arch/gemma_family.h"

namespace embed::arch {
namespace {

class GemmaEmbedding final : public Architecture {
 public:
  GemmaEmbedding(const gguf::File& f, WeightLoader& w) {
    dims_ = read_gemma_dims(f, "gemma-embedding", info_);
    info_.causal = false;
    info_.default_pooling = read_pooling(HParams(f, "gemma-embedding"), Pooling::Mean);
    weights_ = load_gemma_weights(w, dims_);
    if (const gguf::TensorInfo* t = f.find_tensor("dense_2.weight")) {
      const int64_t mid = std::clamp<int64_t>(t->ne[1], 1, 16 * kMaxModelDim);
      info_.post_pool.push_back(w.matrix("dense_2.weight", mid, info_.d_model));
      info_.post_pool.push_back(w.matrix("dense_3.weight", info_.d_model, mid));
    }
  }

  void forward(ForwardPass& fp, Tensor x) const override {
    const int half = dims_.n_swa / 2;
    gemma_forward(fp, weights_, dims_, /*causal=*/false, half, half, x);
  }

 private:
  GemmaDims dims_;
  GemmaWeights weights_;
};

}  // namespace

std::unique_ptr<Architecture> create_gemma_embedding(const gguf::File& f, WeightLoader& w) {
  return std::make_unique<GemmaEmbedding>(f, w);
}

}  // namespace embed::arch
