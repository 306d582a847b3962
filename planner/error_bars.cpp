#include "planner/error_bars.h"

#include <algorithm>
#include <cmath>

#include "planner/quantile.h"

namespace kvplan {

namespace {

// measured / predicted for one run's signed error (e = (p - m) / m => m = p / (1 + e)).
double factor(double e) { return 1 / (1 + e); }

Band band(const std::vector<MeasuredError>& runs, double MeasuredError::*metric, double coverage) {
  std::vector<double> f;
  f.reserve(runs.size());
  for (const MeasuredError& r : runs) f.push_back(factor(r.*metric));
  const double tail = (1 - coverage) / 2;
  Band b;
  b.lo = nearest_rank(f, tail);
  b.hi = nearest_rank(f, 1 - tail);
  return b;
}

}  // namespace

std::optional<ErrorBars> error_bars(const Calibration& c, const std::string& gpu, double coverage) {
  if (c.held_out_errors.empty()) return std::nullopt;
  if (!(coverage > 0 && coverage < 1))
    throw InputError("error bars", "coverage", "a share in (0, 1)", std::to_string(coverage));
  ErrorBars b;
  b.gpu = gpu;
  b.coverage = coverage;
  for (const MeasuredError& r : c.held_out_errors)
    if (r.gpu == gpu) b.samples.push_back(r);
  b.on_gpu = static_cast<int64_t>(b.samples.size()) >= kMinRunsForGpuBand;
  if (!b.on_gpu) b.samples = c.held_out_errors;
  b.runs = static_cast<int64_t>(b.samples.size());
  b.ttft = band(b.samples, &MeasuredError::ttft, coverage);
  b.tpot = band(b.samples, &MeasuredError::tpot, coverage);
  b.e2e = band(b.samples, &MeasuredError::e2e, coverage);
  return b;
}

double slo_probability(const ErrorBars& b, double ttft_p99_s, double tpot_p99_s, const Slo& slo) {
  if (b.samples.empty()) return 0;
  int64_t met = 0;
  for (const MeasuredError& r : b.samples) {
    const bool ttft_ok = slo.ttft_p99_s <= 0 || ttft_p99_s * factor(r.ttft) <= slo.ttft_p99_s;
    const bool tpot_ok = slo.tpot_p99_s <= 0 || tpot_p99_s * factor(r.tpot) <= slo.tpot_p99_s;
    met += ttft_ok && tpot_ok ? 1 : 0;
  }
  return static_cast<double>(met) / static_cast<double>(b.samples.size());
}

SloHeadroom slo_headroom(const ErrorBars& b, double q) {
  if (!(q > 0 && q < 1)) throw InputError("error bars", "probability", "a share in (0, 1)", std::to_string(q));
  SloHeadroom h;
  h.q = q;
  if (b.samples.empty()) return h;
  // A prediction p meets a target T on run r when p / (1 + e_r) <= T, i.e. p <= T (1 + e_r).
  // With 1 + e sorted ascending (x_1 .. x_n), p <= T x_k holds on the n - k + 1 runs from k
  // up: the largest k with (n - k + 1) / n >= q is floor(n (1 - q)) + 1 (the 1e-9 keeps
  // n (1 - q) = 2 from rounding to 1.999...).
  const auto n = static_cast<int64_t>(b.samples.size());
  const auto k = std::min<int64_t>(n, static_cast<int64_t>(std::floor(static_cast<double>(n) * (1 - q) + 1e-9)) + 1);
  auto under = [&](double MeasuredError::*metric) {
    std::vector<double> g;
    g.reserve(b.samples.size());
    for (const MeasuredError& r : b.samples) g.push_back(1 + r.*metric);
    std::sort(g.begin(), g.end());
    return g[static_cast<size_t>(k - 1)];
  };
  h.ttft = under(&MeasuredError::ttft);
  h.tpot = under(&MeasuredError::tpot);
  h.worst_run = k == 1;
  return h;
}

}  // namespace kvplan
