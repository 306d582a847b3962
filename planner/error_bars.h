// kvplan planner: error bars on the time model's latencies, drawn from what the
// calibration profile measured of its own error on runs its fit did not see.
//
// Each held-out run gives one signed relative error per metric, e = (predicted -
// measured) / measured, of the run's mean TTFT, mean ITL (TPOT) and mean end-to-end
// latency (scripts/accuracy.py; bench/ACCURACY.md). A prediction p then stands for a
// measured value p / (1 + e) for each run's e: the band is the central `coverage` of
// those values, the SLO probability the share of runs for which every judged latency stays
// within its target. The errors are of run means; applying them to p99 figures assumes a
// tail as wrong as its mean, which reports state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/types.h"
#include "planner/workload.h"

namespace kvplan {

//! Fewest held-out runs on a GPU for its band to be drawn from that GPU's runs alone;
//! below it every held-out run on any GPU is used and the band says so (a decile of five
//! runs is already the extreme one).
inline constexpr int64_t kMinRunsForGpuBand = 5;

//! measured / predicted at the band's edges: a prediction p is measured in [p lo, p hi].
struct Band {
  double lo = 1, hi = 1;
};

//! Which runs a band is drawn from, and the band of each metric.
struct ErrorBars {
  int64_t runs = 0;       //!< held-out runs the bands come from
  bool on_gpu = false;    //!< all on the GPU in question (else: every GPU's, wider)
  std::string gpu;        //!< the GPU in question
  double coverage = 0.8;  //!< central share of the runs inside each band
  Band ttft, tpot, e2e;
  //! The runs themselves, for slo_probability and slo_headroom.
  std::vector<MeasuredError> samples;
};

//! The bands for a prediction on catalog GPU `gpu` (`coverage` in (0, 1)); empty when the
//! profile carries no held-out errors.
std::optional<ErrorBars> error_bars(const Calibration& c, const std::string& gpu, double coverage = 0.8);

//! Share of the bands' runs for which a deployment predicted at `ttft_p99_s` and
//! `tpot_p99_s` meets `slo` (each target given is judged; both errors of one run apply
//! together).
double slo_probability(const ErrorBars& b, double ttft_p99_s, double tpot_p99_s, const Slo& slo);

//! What a prediction must stay under for the SLO to hold with probability `q`: the
//! predicted p99 TTFT and TPOT at most ttft x and tpot x their targets, each metric on
//! at least a share q of the runs. With n runs, a q above 1 - 1/n is the worst run's
//! factor (`worst_run` says so).
struct SloHeadroom {
  double q = 0.9;
  double ttft = 1, tpot = 1;
  bool worst_run = false;
};
SloHeadroom slo_headroom(const ErrorBars& b, double q);

}  // namespace kvplan
