// Example of the C++ API (docs/api.md), compiled and run by CI:
//   embed-api-example MODEL.gguf
// 1. load a model once; 2. embed texts with a Context; 3. the low-level prefill-and-pool path:
// token sequences with sequence ids, one forward pass, pooled vectors and hidden states by id;
// 4. several threads, each with its own Context, sharing the one Model.
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "engine/api.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
    return 2;
  }
  auto loaded = embed::Model::load(argv[1]);
  if (!loaded) {
    std::fprintf(stderr, "error: %s\n", loaded.error().message.c_str());
    return 1;
  }
  std::shared_ptr<const embed::Model> model = loaded.value();
  const embed::ModelDescription& d = model->describe();
  std::printf("%s: %s, %lld layers, %lld-dim vectors, pooling %s\n", d.path.c_str(), d.arch.c_str(),
              static_cast<long long>(d.n_layers), static_cast<long long>(d.embedding_dim), embed::pooling_name(d.default_pooling));

  // High level: texts in, one L2-normalized row per text out.
  embed::Context ctx(model);
  const std::vector<std::string> texts = {"A man is playing a guitar.", "Someone plays the guitar.", "The stock market fell."};
  auto emb = ctx.embed(texts);
  if (!emb) {
    std::fprintf(stderr, "error: %s\n", emb.error().message.c_str());
    return 1;
  }
  const embed::Embeddings& e = emb.value();
  for (int64_t i = 0; i < e.rows; i++) {
    double dot = 0;
    for (int64_t k = 0; k < e.cols; k++) dot += e.row(0)[k] * e.row(i)[k];
    std::printf("cos(text 0, text %lld) = %.4f   %s\n", static_cast<long long>(i), dot, texts[i].c_str());
  }

  // What to compute is one Request: here Matryoshka (the first 8 values, re-normalized) and the
  // end of a long text kept when it must be cut.
  embed::Request small;
  small.dimensions = 8;
  small.truncate = true;
  small.truncation_direction = embed::TruncationDirection::Left;
  auto e8 = ctx.embed(texts, small);
  if (!e8 || e8.value().cols != 8) {
    std::fprintf(stderr, "error: %s\n", e8 ? "wrong width" : e8.error().message.c_str());
    return 1;
  }
  std::printf("dimensions 8: row 0 starts %.6f\n", e8.value().row(0)[0]);

  // Low level: sequences keyed by id; one forward pass; results read back by id.
  embed::TokenBatch batch;
  batch.add(/*seq_id=*/7, model->tokenizer().encode(texts[0]).ids);
  batch.add(/*seq_id=*/3, model->tokenizer().encode(texts[2]).ids);
  embed::Request bo;  // the same request type as embed(): pooling, normalize, dimensions, ...
  bo.hidden_states = true;
  auto out = ctx.run(batch, bo);
  if (!out) {
    std::fprintf(stderr, "error: %s\n", out.error().message.c_str());
    return 1;
  }
  std::printf("sequence 7: %lld tokens, pooled[0] = %.6f, hidden[0][0] = %.6f\n", static_cast<long long>(out.value().n_tokens(7)),
              out.value().pooled(7)[0], out.value().hidden(7)[0]);

  // Threads: one Context each, one shared Model. Every thread gets the same vector for text 0.
  std::vector<float> first(4, 0.0f);
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; t++)
    pool.emplace_back([&, t] {
      embed::Context c(model, 1);
      auto r = c.embed({texts[0]});
      first[t] = r ? r.value().row(0)[0] : NAN;
    });
  for (std::thread& th : pool) th.join();
  for (int t = 1; t < 4; t++)
    if (first[t] != first[0]) {
      std::fprintf(stderr, "threads disagree\n");
      return 1;
    }
  std::printf("4 threads, 4 contexts, one model: identical vectors\n");
  return 0;
}
