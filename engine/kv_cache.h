// The keys and values of the earlier pieces of one sequence, per layer: with them a causal model
// runs a long sequence in consecutive pieces and gets the result of one pass (Runner::
// run_in_pieces), in memory bounded by the piece and this cache rather than by the whole pass.
// Not for bidirectional models, whose earlier tokens see later ones.
#pragma once

#include <deque>

#include "engine/backend.h"

namespace embed {

class KvCache {
 public:
  // Cached rows of a sliding-window layer start at a multiple of kAlign positions, so the
  // attention kernels' key tiles (32 or 64 keys, counted from a sequence's first key) fall on the
  // same positions as in one pass, and the pieces give bit-identical results.
  static constexpr int64_t kAlign = 64;

  // A sequence of total_tokens tokens, run in pieces of at most max_piece tokens.
  KvCache(Backend& b, int64_t total_tokens, int64_t max_piece);

  // What one layer's attention reads and writes during a piece.
  struct LayerRows {
    Tensor k, v;          // [kept + n, kv_cols]: the earlier positions its queries may see, then the piece's
    Tensor k_new, v_new;  // the piece's last n rows of k, v: the layer writes its keys and values there
    AttentionKvRows kv_rows;  // one sequence whose keys are the rows of k and v
  };

  // A piece of n tokens at positions [past(), past() + n); then every layer takes its rows, in
  // order, and end_piece() checks that each did.
  void begin_piece(int64_t n);
  // The next layer's rows; window_left as AttentionArgs (-1: the layer sees every earlier key).
  LayerRows next_layer(int64_t kv_cols, int window_left);
  void end_piece();
  int64_t past() const { return past_; }
  size_t bytes() const;  // device memory held

 private:
  struct Layer {
    DeviceBuffer k, v, cu;     // rows, and the device copy of kv_rows' offsets
    int64_t cols = 0, capacity = 0;
    int64_t first = 0;         // position of row 0
    int window_left = -1;
    int32_t cu_host[2] = {0, 0};
  };
  Backend& b_;
  int64_t total_, max_piece_, past_ = 0, piece_ = 0;
  size_t next_ = 0;  // the next layer of the piece
  std::deque<Layer> layers_;  // deque: the host offsets handed out stay where they are
};

}  // namespace embed
