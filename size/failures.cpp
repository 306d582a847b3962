#include "size/failures.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "planner/types.h"
#include "planner/units.h"
#include "size/tco.h"

namespace kvplan::size {

void validate(const FailureOptions& f) {
  if (!(f.availability > 0 && f.availability < 1))
    throw InputError("command line", "--availability", "a share of time in (0, 1), e.g. 0.999",
                     shortest(f.availability));
  if (!(f.repair_hours > 0) || !std::isfinite(f.repair_hours))
    throw InputError("command line", "--repair-hours",
                     "the hours a failed replica is out of service (> 0; no default: it is your site's)", "nothing");
  if (!(f.gpu_failures_per_year >= 0) || !std::isfinite(f.gpu_failures_per_year))
    throw InputError("command line", "--gpu-failures-per-year", "a rate >= 0", shortest(f.gpu_failures_per_year));
}

double replica_unavailability(int64_t gpus, double failures_per_gpu_year, double repair_hours) {
  const double x = static_cast<double>(gpus) * failures_per_gpu_year * repair_hours / kHoursPerYear;
  return x / (1 + x);
}

std::pair<int64_t, double> spares_for(int64_t n, double u, double target) {
  if (n < 1 || u < 0 || u >= 0.5 || target <= 0 || target >= 1)
    throw std::invalid_argument("spares_for: n >= 1, 0 <= u < 0.5 and 0 < target < 1");
  // P(X <= k) for X ~ Binomial(n + k, u), the terms built by their ratio from (1 - u)^(n + k).
  for (int64_t k = 0;; ++k) {
    const int64_t total = n + k;
    double term = std::pow(1 - u, static_cast<double>(total));
    double p = term;
    for (int64_t j = 1; j <= k; ++j) {
      term *= static_cast<double>(total - j + 1) / static_cast<double>(j) * u / (1 - u);
      p += term;
    }
    // u < 1/2: the mean (n + k) u falls below k as k grows, so the loop ends.
    if (p >= target) return {k, std::min(1.0, p)};
  }
}

}  // namespace kvplan::size
