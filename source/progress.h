// Download progress on stderr: a bar redrawn in place on a terminal ("model.safetensors  45%
// 12.3/27.2 MB  5.1 MB/s"), one line per file otherwise; nothing when HF_HUB_DISABLE_PROGRESS_BARS
// is set (huggingface_hub's switch) or the caller turned it off.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace embed::source {

class DownloadProgress {
 public:
  explicit DownloadProgress(bool enabled);
  void start(const std::string& label, int64_t total, int64_t have);
  void update(int64_t have);  // redrawn at most ten times a second
  void finish(int64_t have);

 private:
  void draw(int64_t have, bool last);
  bool enabled_ = false, terminal_ = false;
  std::string label_;
  int64_t total_ = 0, first_ = 0;
  std::chrono::steady_clock::time_point started_, drawn_;
};

// "27.2 MB": sizes as the Hub shows them (powers of 1000).
std::string human_size(int64_t bytes);

}  // namespace embed::source
