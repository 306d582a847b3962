// kvplan planner: the one nearest-rank quantile every percentile in kvplan uses
// (simulated latencies, workload lengths, measured errors).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace kvplan {

//! The nearest-rank q-quantile of `v` (not empty): the ceil(q n)-th smallest value, the
//! smallest value with at least q of the values at or below it. Reorders `v`.
template <typename T>
T nearest_rank(std::vector<T>& v, double q) {
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  auto it = v.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  std::nth_element(v.begin(), it, v.end());
  return *it;
}

}  // namespace kvplan
