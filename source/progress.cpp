// DownloadProgress: the in-place bar of a terminal, or one line per file in a log.
#include "source/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "source/hub_cache.h"

namespace embed::source {

std::string human_size(int64_t bytes) {
  char buf[32];
  if (bytes >= 1000000000) std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  else if (bytes >= 1000000) std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  else if (bytes >= 1000) std::snprintf(buf, sizeof buf, "%.1f kB", bytes / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}

DownloadProgress::DownloadProgress(bool enabled)
    : enabled_(enabled && !env_truthy("HF_HUB_DISABLE_PROGRESS_BARS")), terminal_(isatty(STDERR_FILENO) == 1) {}

void DownloadProgress::start(const std::string& label, int64_t total, int64_t have) {
  label_ = label;
  total_ = total;
  first_ = have;
  started_ = drawn_ = std::chrono::steady_clock::now();
  if (!enabled_) return;
  if (terminal_) draw(have, false);
  else
    std::fprintf(stderr, "embed: downloading %s (%s%s)\n", label.c_str(), human_size(total).c_str(),
                 have > 0 ? (", resuming at " + human_size(have)).c_str() : "");
}

void DownloadProgress::update(int64_t have) {
  if (!enabled_ || !terminal_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - drawn_ < std::chrono::milliseconds(100)) return;
  drawn_ = now;
  draw(have, false);
}

void DownloadProgress::finish(int64_t have) {
  if (enabled_ && terminal_) draw(have, true);
}

void DownloadProgress::draw(int64_t have, bool last) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const double rate = seconds > 0 ? (have - first_) / seconds : 0;
  const int percent = total_ > 0 ? static_cast<int>(100.0 * have / total_) : 100;
  constexpr int kWidth = 24;
  const int filled = std::clamp(percent * kWidth / 100, 0, kWidth);
  std::string bar(filled, '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "\r\033[K%s [%s] %3d%% %s/%s %s/s", label_.c_str(), bar.c_str(), percent, human_size(have).c_str(),
               human_size(total_).c_str(), human_size(static_cast<int64_t>(rate)).c_str());
  if (last) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace embed::source
