// Intrinsic dimension of a point cloud by the TwoNN estimator (Facco, d'Errico, Rodriguez and
// Laio, Sci. Rep. 2017), and the choice of a KV-Embedding layer band from per-layer estimates
// (`embed kv-layers`). Knows nothing of models: rows in, numbers out.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace embed {

struct TwoNNResult {
  double dimension = 0;  // the estimate
  int64_t points = 0;    // points with two distinct nearest neighbours (duplicates are left out)
  int64_t fitted = 0;    // ratios in the fit (the largest `discard` fraction left out)
};

// TwoNN on `n` points of `dims` floats (row-major). For each point, mu = r2 / r1 (distances to its
// second and first nearest neighbours, Euclidean, in double); with the ratios sorted ascending,
// mu_(1) <= ... <= mu_(N), the empirical CDF F_i = i / N gives points (log mu_(i), -log(1 - F_i))
// on a line through the origin whose slope is the dimension; the largest `discard` fraction of the
// ratios (outliers from sparse regions) is left out and the slope fitted by least squares through
// the origin: d = sum(x y) / sum(x^2). A point whose nearest neighbour is at distance 0 (a
// duplicate) has no ratio and is left out. Needs at least 3 distinct points; O(n^2 dims).
TwoNNResult twonn_dimension(const float* points, int64_t n, int64_t dims, double discard = 0.1);

// The contiguous band of `width` layers with the lowest mean intrinsic dimension, among bands
// that lie inside [min_first, max_last] (inclusive); ties go to the earlier band. Returns
// (first, last), 0-based layer indexes.
std::pair<int, int> lowest_dimension_band(const std::vector<double>& per_layer, int width, int min_first, int max_last);

}  // namespace embed
