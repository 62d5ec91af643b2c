// A text's vector must not depend on what it is batched with: each sequence alone vs packed in
// a mixed-length batch gives bit-identical pooled vectors and hidden states (every kernel
// computes a row from that row's sequence only, in a fixed order).
#include <catch2/catch.hpp>

#include <cstring>

#include "engine/runner.h"
#include "tests/models/synthetic.h"

using namespace embed;
using namespace embed::test;

TEST_CASE("pooled vectors and hidden states are bit-identical alone and batched", "[models][invariance]") {
  for (const char* arch : {"bert", "qwen3"}) {
    SyntheticSpec s;
    s.arch = arch;
    s.d_model = 64;
    s.n_heads = 4;
    s.n_kv_heads = 2;
    s.d_ff = 96;
    TempFile f(".gguf");
    write_synthetic(s, f.path);
    BackendOptions bo;
    bo.threads = 2;
    auto m = LoadedModel::load(f.path, bo);
    Runner r(m, 2);
    std::vector<SequenceInput> seqs;
    for (int len : {1, 7, 30, 2, 64, 13}) {
      SequenceInput q;
      for (int i = 0; i < len; i++) q.ids.push_back((i * 37 + len) % 100);
      seqs.push_back(q);
    }
    for (Pooling p : {Pooling::Mean, Pooling::Cls, Pooling::Last}) {
      PassOptions o;
      o.pooling = p;
      o.keep_hidden = true;
      const RunOutput all = r.run(seqs, o);
      for (size_t i = 0; i < seqs.size(); i++) {
        const RunOutput one = r.run({seqs[i]}, o);
        INFO(arch << " pooling " << pooling_name(p) << " sequence " << i);
        REQUIRE(one.cols == all.cols);
        CHECK(std::memcmp(one.pooled.data(), all.pooled.data() + i * all.cols, all.cols * 4) == 0);
        const size_t off = static_cast<size_t>(all.cu_seqlens[i]) * s.d_model;
        CHECK(std::memcmp(one.hidden.data(), all.hidden.data() + off, one.hidden.size() * 4) == 0);
      }
    }
  }
}
