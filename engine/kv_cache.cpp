// KvCache: per-layer buffers of keys and values. A layer that sees every earlier key keeps all
// rows (total_tokens of them); a sliding-window layer keeps a buffer of 2 (window + kAlign) +
// max_piece rows and, when the next piece would not fit, moves the rows its window still reaches
// to the front. The move never overlaps (the rows kept are fewer than window + kAlign and start
// past that many), so it is one device copy.
#include "engine/kv_cache.h"

#include <algorithm>

namespace embed {

KvCache::KvCache(Backend& b, int64_t total_tokens, int64_t max_piece) : b_(b), total_(total_tokens), max_piece_(max_piece) {
  EMBED_CHECK(total_tokens > 0 && max_piece > 0, "KvCache: empty sequence or piece");
}

void KvCache::begin_piece(int64_t n) {
  EMBED_CHECK(n > 0 && n <= max_piece_ && past_ + n <= total_, "KvCache::begin_piece: piece outside the sequence");
  piece_ = n;
  next_ = 0;
}

KvCache::LayerRows KvCache::next_layer(int64_t kv_cols, int window_left) {
  EMBED_CHECK(piece_ > 0, "KvCache::next_layer outside a piece");
  if (next_ == layers_.size()) {  // first piece: the layer's buffers
    Layer l;
    l.cols = kv_cols;
    l.window_left = window_left;
    l.capacity = window_left < 0 ? total_ : std::min(total_, 2 * (window_left + kAlign) + max_piece_);
    const size_t bytes = static_cast<size_t>(l.capacity * kv_cols) * sizeof(float);
    l.k = DeviceBuffer(&b_, bytes);
    l.v = DeviceBuffer(&b_, bytes);
    l.cu = DeviceBuffer(&b_, sizeof l.cu_host);
    layers_.push_back(std::move(l));
  }
  Layer& l = layers_[next_++];
  EMBED_CHECK(l.cols == kv_cols && l.window_left == window_left, "KvCache: layer shapes changed between pieces");
  // Earlier positions the piece's first query can see, from a multiple of kAlign.
  const int64_t keep = window_left < 0 ? 0 : std::max<int64_t>(l.first, std::max<int64_t>(0, past_ - window_left) / kAlign * kAlign);
  if (past_ + piece_ - l.first > l.capacity) {
    const size_t row = static_cast<size_t>(kv_cols) * sizeof(float), rows = static_cast<size_t>(past_ - keep);
    const size_t from = static_cast<size_t>(keep - l.first) * row;
    b_.copy(l.k.data(), static_cast<char*>(l.k.data()) + from, rows * row);
    b_.copy(l.v.data(), static_cast<char*>(l.v.data()) + from, rows * row);
    l.first = keep;
  }
  EMBED_CHECK(past_ + piece_ - l.first <= l.capacity, "KvCache: piece does not fit the layer's buffer");
  const Tensor k{l.k.data(), DType::F32, b_.device(), l.capacity, kv_cols};
  const Tensor v{l.v.data(), DType::F32, b_.device(), l.capacity, kv_cols};
  LayerRows r;
  r.k = k.slice_rows(keep - l.first, past_ + piece_ - keep);
  r.v = v.slice_rows(keep - l.first, past_ + piece_ - keep);
  r.k_new = k.slice_rows(past_ - l.first, piece_);
  r.v_new = v.slice_rows(past_ - l.first, piece_);
  l.cu_host[1] = static_cast<int32_t>(past_ + piece_ - keep);
  b_.upload(l.cu.data(), l.cu_host, sizeof l.cu_host);
  r.kv_rows.cu_seqlens = static_cast<const int32_t*>(l.cu.data());
  r.kv_rows.cu_seqlens_host = l.cu_host;
  r.kv_rows.max_seqlen = l.cu_host[1];
  return r;
}

void KvCache::end_piece() {
  EMBED_CHECK(next_ == layers_.size() && next_ > 0, "KvCache::end_piece: not every layer took its rows");
  past_ += piece_;
  piece_ = 0;
}

size_t KvCache::bytes() const {
  size_t n = 0;
  for (const Layer& l : layers_) n += l.k.bytes() + l.v.bytes();
  return n;
}

}  // namespace embed
