// kvplan cluster: the highest arrival rate a deployment serves within its SLO, for one
// engine (sim::Simulator), a fleet of replicas (cluster/fleet.h) or a disaggregated layout
// (cluster/disagg.h): bracketing by doubling or halving from the workload's rate, then
// bisection, the same seed at every rate.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "cluster/disagg.h"
#include "cluster/fleet.h"
#include "planner/workload.h"
#include "sim/sim.h"

namespace kvplan::cluster {

//! Requests per trial run of the search for one engine, and per replica for a fleet: each
//! replica of a fleet probe starts empty like a lone engine's, and with a fixed count split
//! N ways short per-replica runs never reach their queueing steady state and overstate the
//! rate (1,000 requests over 2 replicas: 63.9/s against 27.2/s for one; 20,000: 46.1/s, 2x).
inline constexpr int64_t kProbeRequests = 4000;
//! Seeds `simulate --find-max-rate` searches by default, for the range of its answer.
inline constexpr int kProbeSeeds = 3;

struct MaxRateOptions {
  //! Requests per trial run. Unset: kProbeRequests per engine (a fleet's: x its replicas);
  //! 0: the workload's (or SimOptions') count. At least
  //! sim::min_requests_for_percentile(0.99); find_max_rate throws InputError below it.
  std::optional<int64_t> requests;
  double rel_tolerance = 0.02;  //!< stop when (hi - lo) / lo <= this
  //! A run counts as meeting the SLO only if also its queue_growth_s is at most this
  //! fraction of the TTFT target: a short run of an overloaded engine can fit its p99
  //! before the queue has grown enough to show.
  double max_queue_growth = 0.1;
  int max_runs = 40;            //!< hard cap on simulations
  //! Called after each trial run: the seed searched, the runs so far, and the highest rate
  //! that met the SLO and the lowest that missed it so far (requests/s; empty: none yet).
  //! A terminal's progress line (cli/cmd_simulate.cpp); the search does not depend on it.
  std::function<void(uint64_t seed, int runs, std::optional<double> meets_per_s, std::optional<double> misses_per_s)>
      on_run = nullptr;
};

//! The requests per trial run `mo` asks of a fleet of `replicas` (1: one engine); 0 for
//! the workload's count.
int64_t probe_requests(const MaxRateOptions& mo, int64_t replicas = 1);

struct MaxRate {
  bool found = false;         //!< some rate met the SLO (false: not even the lowest tried)
  double max_rate_per_s = 0;  //!< highest arrival rate found to meet the SLO
  double rate_scale = 0;      //!< the same, as a multiple of the workload's rate
  int runs = 0;               //!< simulations run
  sim::SimResult at_max;      //!< the run at max_rate_per_s (or the lowest tried)
};

//! Any way of running a workload: one engine, a fleet, a disaggregated layout.
using RunWorkload = std::function<sim::SimResult(const Workload&, const sim::SimOptions&)>;

//! The highest arrival rate (a multiple of the workload's, with its arrival shape and
//! lengths) at which `run`'s p99 TTFT and p99 TPOT meet w.slo and the queue does not keep
//! growing (MaxRateOptions::max_queue_growth). Observers in `opt` are ignored.
MaxRate find_max_rate(const RunWorkload& run, const Workload& w, const sim::SimOptions& opt,
                      const MaxRateOptions& mo = {});
//! One engine's.
MaxRate find_max_rate(const sim::Simulator& s, const Workload& w, const sim::SimOptions& opt,
                      const MaxRateOptions& mo = {});
//! A fleet's total arrival rate, the same router (probe_requests(mo, f.replicas) per run).
MaxRate find_max_rate(const sim::Simulator& s, const FleetOptions& f, const Workload& w, const sim::SimOptions& opt,
                      const MaxRateOptions& mo = {});
//! A disaggregated layout's, TTFT and TPOT as the user sees them, rejected requests
//! failing, without a growing prefill queue; `at_max` is DisaggResult::overall.
MaxRate find_max_rate(const DisaggSimulator& s, const Workload& w, const sim::SimOptions& opt,
                      const MaxRateOptions& mo = {});

//! The max rate's range over seeds opt.seed .. opt.seed + seeds - 1 (different requests,
//! same workload): `first` is find_max_rate's answer for opt.seed, the others are found
//! again. Two results within the range are not different.
struct MaxRateRange {
  int seeds = 0;
  double min_per_s = 0, max_per_s = 0;
};
MaxRateRange max_rate_range(const RunWorkload& run, const Workload& w, const sim::SimOptions& opt,
                            const MaxRateOptions& mo, const MaxRate& first, int seeds);
MaxRateRange max_rate_range(const sim::Simulator& s, const Workload& w, const sim::SimOptions& opt,
                            const MaxRateOptions& mo, const MaxRate& first, int seeds);
MaxRateRange max_rate_range(const sim::Simulator& s, const FleetOptions& f, const Workload& w,
                            const sim::SimOptions& opt, const MaxRateOptions& mo, const MaxRate& first, int seeds);

}  // namespace kvplan::cluster
