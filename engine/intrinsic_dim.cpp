// TwoNN intrinsic dimension and the layer band of lowest dimension (engine/intrinsic_dim.h).
#include "engine/intrinsic_dim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/error.h"

namespace embed {

TwoNNResult twonn_dimension(const float* points, int64_t n, int64_t dims, double discard) {
  EMBED_CHECK(n >= 0 && dims >= 1 && discard >= 0 && discard < 1, "twonn_dimension: bad arguments");
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) {
    const float* p = points + i * dims;
    double r1 = std::numeric_limits<double>::infinity(), r2 = r1;  // squared distances
    for (int64_t j = 0; j < n; j++) {
      if (j == i) continue;
      const float* q = points + j * dims;
      double s = 0;
      for (int64_t k = 0; k < dims; k++) {
        const double d = static_cast<double>(p[k]) - static_cast<double>(q[k]);
        s += d * d;
      }
      if (s < r1) r2 = r1, r1 = s;
      else if (s < r2) r2 = s;
    }
    if (r1 > 0 && std::isfinite(r2)) ratios.push_back(std::sqrt(r2 / r1));
  }
  TwoNNResult out;
  out.points = static_cast<int64_t>(ratios.size());
  if (out.points < 3) fail(ErrorKind::InvalidArgument, "intrinsic dimension needs at least 3 distinct points, got " + std::to_string(out.points));
  std::sort(ratios.begin(), ratios.end());
  const double total = static_cast<double>(ratios.size());
  // The largest ratio has F = 1 (log 0): it is always among the discarded ones.
  const size_t keep = std::max<size_t>(1, std::min(ratios.size() - 1, static_cast<size_t>(std::floor(total * (1 - discard)))));
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < keep; i++) {
    const double x = std::log(ratios[i]);
    const double y = -std::log(1 - static_cast<double>(i + 1) / total);
    sxy += x * y;
    sxx += x * x;
  }
  out.fitted = static_cast<int64_t>(keep);
  if (!(sxx > 0)) fail(ErrorKind::InvalidArgument, "intrinsic dimension: every point's two nearest neighbours are equally far (no spread to fit)");
  out.dimension = sxy / sxx;
  return out;
}

std::pair<int, int> lowest_dimension_band(const std::vector<double>& per_layer, int width, int min_first, int max_last) {
  const int n = static_cast<int>(per_layer.size());
  min_first = std::max(min_first, 0);
  max_last = std::min(max_last, n - 1);
  if (width < 1 || max_last - min_first + 1 < width)
    fail(ErrorKind::InvalidArgument, "no band of " + std::to_string(width) + " layers fits in layers " + std::to_string(min_first) + "-" +
                                         std::to_string(max_last));
  std::pair<int, int> best{-1, -1};
  double best_mean = std::numeric_limits<double>::infinity();
  for (int first = min_first; first + width - 1 <= max_last; first++) {
    double sum = 0;
    for (int l = first; l < first + width; l++) sum += per_layer[static_cast<size_t>(l)];
    if (sum / width < best_mean) best_mean = sum / width, best = {first, first + width - 1};
  }
  return best;
}

}  // namespace embed
