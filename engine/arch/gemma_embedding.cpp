// `gemma-embedding`: EmbeddingGemma. The Gemma 3 block with bidirectional attention and a
// symmetric sliding window (key visible iff |i - j| <= n_swa / 2 on local layers), mean pooling,
// then the sentence-transformers Dense layers (dense_2: d_model -> dense_2_feat_out, dense_3:
// back to d_model) when the file has them. (llama.cpp src/models/gemma-embedding.cpp.)
#include "engine/arch/gemma_family.h"

namespace embed::arch {

const ArchSpec& gemma_embedding_spec();  // the description, at the end of this file
namespace {

class GemmaEmbedding final : public Architecture {
 public:
  GemmaEmbedding(const gguf::File& f, WeightLoader& w) {
    p_ = read_params(f, gemma_embedding_spec());
    t_ = load_tensors(w, gemma_embedding_spec(), p_);
    dims_ = gemma_dims(f, "gemma-embedding", p_);
    fill_model_info(info_, gemma_embedding_spec(), p_, t_, w, Pooling::Mean);
    info_.causal = false;
  }

  void forward(ForwardPass& fp, Tensor x) const override {
    const int half = static_cast<int>(p_.n_swa) / 2;
    gemma_forward(fp, t_, p_, dims_, /*causal=*/false, half, half, x);
  }

 private:
  ArchParams p_;
  ModelTensors t_;
  GemmaDims dims_;
};

}  // namespace

const ArchSpec& gemma_embedding_spec() {
  static const ArchSpec spec = [] {
    ArchSpec s = gemma_spec("gemma-embedding", {"Gemma3TextModel"});
    s.hf_checks.push_back({"use_bidirectional_attention", "true", /*absent_ok=*/false});
    s.llama_cpp_dense = true;
    s.create = [](const gguf::File& f, WeightLoader& w) -> std::unique_ptr<Architecture> {
      return std::make_unique<GemmaEmbedding>(f, w);
    };
    return s;
  }();
  return spec;
}

}  // namespace embed::arch
