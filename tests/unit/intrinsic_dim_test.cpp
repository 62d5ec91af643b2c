// TwoNN intrinsic dimension (engine/intrinsic_dim.h): a case worked by hand, point clouds of known
// dimension inside a larger space, duplicates and degenerate input; the band choice of
// `embed kv-layers`.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "base/error.h"
#include "engine/intrinsic_dim.h"

using namespace embed;

TEST_CASE("TwoNN on five points of a line, by hand", "[unit][kv]") {
  // Positions 0, 1, 3, 7, 15. Nearest and second-nearest distances and mu = r2 / r1:
  //   0: 1 (to 1), 3 (to 3) -> 3;   1: 1, 2 -> 2;   3: 2, 3 -> 1.5;   7: 4, 6 -> 1.5;   15: 8, 12 -> 1.5.
  // Sorted: 1.5, 1.5, 1.5, 2, 3; N = 5; keep floor(0.9 N) = 4 of them, F_i = i / 5, and
  // d = sum(log mu_i * -log(1 - F_i)) / sum(log mu_i ^ 2).
  const float pts[] = {0, 1, 3, 7, 15};
  const double x[] = {std::log(1.5), std::log(1.5), std::log(1.5), std::log(2.0)};
  const double y[] = {std::log(5.0 / 4), std::log(5.0 / 3), std::log(5.0 / 2), std::log(5.0)};
  double sxy = 0, sxx = 0;
  for (int i = 0; i < 4; i++) sxy += x[i] * y[i], sxx += x[i] * x[i];
  const TwoNNResult r = twonn_dimension(pts, 5, 1);
  CHECK(r.points == 5);
  CHECK(r.fitted == 4);
  CHECK(r.dimension == Approx(sxy / sxx).epsilon(1e-12));
  // The same points in 3-D (on a line through the origin, direction (2, -1, 2) / 3): distances and
  // so the estimate are unchanged.
  std::vector<float> in3d;
  for (float p : pts) in3d.insert(in3d.end(), {p * 2 / 3, -p / 3, p * 2 / 3});
  CHECK(twonn_dimension(in3d.data(), 5, 3).dimension == Approx(sxy / sxx).epsilon(1e-6));
}

TEST_CASE("TwoNN recovers the dimension of Gaussian clouds embedded in 40 dimensions", "[unit][kv]") {
  // n points of a standard normal in d dimensions, mapped into 40 by a fixed random linear map
  // (injective, so the intrinsic dimension stays d). The estimator's standard error is about
  // d / sqrt(n) (Facco et al. 2017); allow four of them.
  std::mt19937 rng(20261201);
  std::normal_distribution<float> normal;
  const int n = 1500, ambient = 40;
  for (int d : {1, 2, 4, 6}) {
    std::vector<float> map(static_cast<size_t>(d * ambient));
    for (float& v : map) v = normal(rng);
    std::vector<float> cloud(static_cast<size_t>(n * ambient), 0.0f);
    for (int i = 0; i < n; i++)
      for (int k = 0; k < d; k++) {
        const float z = normal(rng);
        for (int a = 0; a < ambient; a++) cloud[static_cast<size_t>(i * ambient + a)] += z * map[static_cast<size_t>(k * ambient + a)];
      }
    const TwoNNResult r = twonn_dimension(cloud.data(), n, ambient);
    INFO("d = " << d << ": estimate " << r.dimension);
    CHECK(std::fabs(r.dimension - d) <= 4.0 * d / std::sqrt(static_cast<double>(n)));
    CHECK(r.points == n);
  }
}

TEST_CASE("TwoNN leaves duplicates out and refuses too few points", "[unit][kv]") {
  // Point 0 twice: both copies have a nearest neighbour at distance 0 and no ratio. The other
  // four keep theirs (point 1 now has two neighbours at distance 1: mu = 1).
  const float pts[] = {0, 0, 1, 3, 7, 15};
  const TwoNNResult r = twonn_dimension(pts, 6, 1);
  CHECK(r.points == 4);
  const float few[] = {0, 0, 1};
  CHECK_THROWS_WITH(twonn_dimension(few, 3, 1), Catch::Contains("at least 3 distinct points"));
  const float same[] = {1, 1, 1, 1};
  CHECK_THROWS_WITH(twonn_dimension(same, 4, 1), Catch::Contains("at least 3 distinct points"));
}

TEST_CASE("The band of lowest mean dimension inside the allowed layers", "[unit][kv]") {
  const std::vector<double> dims = {5, 4, 3, 2, 1, 9, 9, 0.5};
  // Bands of 2 inside 1-6: (1,2) 3.5, (2,3) 2.5, (3,4) 1.5, (4,5) 5, (5,6) 9; layer 7's 0.5 is outside.
  CHECK(lowest_dimension_band(dims, 2, 1, 6) == std::make_pair(3, 4));
  CHECK(lowest_dimension_band(dims, 1, 0, 7) == std::make_pair(7, 7));
  CHECK(lowest_dimension_band(dims, 3, 5, 7) == std::make_pair(5, 7));
  CHECK(lowest_dimension_band({1, 1, 1, 1}, 2, 0, 3) == std::make_pair(0, 1));  // ties: the earlier band
  CHECK_THROWS_WITH(lowest_dimension_band(dims, 4, 5, 7), Catch::Contains("no band of 4 layers fits in layers 5-7"));
}
