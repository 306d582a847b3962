// kvplan size: replicas kept for failures. A replica is down while any of its GPUs (or the
// host around it) is being repaired; replicas fail independently. From a failure rate per
// GPU-year and a repair time, the spares k a fleet of N replicas needs so that at least N
// are up for a stated share of the time, and what one replica down does to the others.
// The method and the default rate's source: docs/buy.md "Failures".
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

namespace kvplan::size {

//! Unexpected job interruptions per GPU-year on Meta's Llama 3 405B pre-training cluster:
//! 419 in 54 days on 16,384 H100 GPUs ("The Llama 3 Herd of Models", arXiv 2407.21783,
//! section 3.3.4 and Table 5; 58.7 % GPU issues, the rest hosts, network, software). All
//! causes, so an upper bound for a GPU that serves: 419 / (16,384 x 54 / 365.25) = 0.173.
inline constexpr double kLlama3InterruptionsPerGpuYear = 419.0 / (16384.0 * 54.0 / 365.25);

//! `size --availability A --repair-hours H [--gpu-failures-per-year F]`.
struct FailureOptions {
  double availability = 0;  //!< share of time at least the replicas the rate needs are up
  double gpu_failures_per_year = kLlama3InterruptionsPerGpuYear;
  double repair_hours = 0;  //!< a failed replica's time out of service (detection to back in the pool)
};

//! InputError naming the option when a value is out of range (availability in (0, 1),
//! repair hours > 0, failures per GPU-year >= 0).
void validate(const FailureOptions& f);

//! The share of time one replica of `gpus` GPUs is down: failures at gpus x rate per year,
//! each out for repair_hours (an alternating renewal process: u = x / (1 + x), x = failures
//! per year x repair time in years).
double replica_unavailability(int64_t gpus, double failures_per_gpu_year, double repair_hours);

//! The smallest k >= 0 for which at most k of n + k replicas, each down a share u < 1/2 of
//! the time independently, are down with probability >= target; with that probability.
std::pair<int64_t, double> spares_for(int64_t n, double u, double target);

}  // namespace kvplan::size
