#include "cli/sim_options.h"

#include <utility>

#include "planner/units.h"

namespace kvplan::cli {

sim::SimOptions parse_sim_options(const po::variables_map& vm, const Workload& w, const std::string& schedulers) {
  sim::SimOptions so;
  const auto scheduler = sim::parse_scheduler(vm["scheduler"].as<std::string>());
  if (!scheduler)
    throw InputError("command line", "--scheduler", schedulers, "'" + vm["scheduler"].as<std::string>() + "'");
  so.scheduler = *scheduler;
  so.seed = static_cast<uint64_t>(parse_int_option(vm["seed"].as<std::string>(), "--seed", 0));
  if (vm.count("requests")) {
    so.requests = parse_int_option(vm["requests"].as<std::string>(), "--requests");
    if (*so.requests > 1'000'000'000)
      throw InputError("command line", "--requests", "at most 1,000,000,000 requests", std::to_string(*so.requests));
  }
  if (vm["swap"].as<bool>()) so.preemption = sim::Preemption::swap;
  so.host_link_bytes_per_s =
      kBytesPerGB * parse_num_option(vm["host-link-gb-per-s"].as<std::string>(), "--host-link-gb-per-s", 1e-3, 1e6);
  if (w.arrivals_at_one_instant() && (vm.count("rate") || vm["find-max-rate"].as<bool>()))
    throw InputError(w.trace_file, "arrival_s",
                     "arrivals spread over time (--rate and --find-max-rate scale the trace's arrival rate)",
                     "every arrival at one instant");
  // Past its last row a trace replays one mean gap later; a burst has no gap to replay at.
  if (w.arrivals_at_one_instant() && std::cmp_greater(so.requests.value_or(w.requests), w.trace->size()))
    throw InputError(w.trace_file, "requests",
                     "at most the trace's " + std::to_string(w.trace->size()) +
                         " rows (its arrivals share one instant, so it cannot be replayed at a rate)",
                     std::to_string(so.requests.value_or(w.requests)));
  if (vm.count("rate"))
    so.rate_scale = parse_num_option(vm["rate"].as<std::string>(), "--rate", 1e-9, 1e12) / w.base_rate_per_s();
  return so;
}

std::optional<int64_t> parse_max_rate_requests(const po::variables_map& vm, const Workload& w) {
  const int64_t requests = parse_int_option(vm["max-rate-requests"].as<std::string>(), "--max-rate-requests");
  const int64_t least = sim::min_requests_for_percentile(0.99);
  if (requests < least)
    throw InputError("command line", "--max-rate-requests",
                     "at least " + std::to_string(least) + " requests, so that 10 lie above the p99 the SLO is judged on",
                     std::to_string(requests));
  if (!w.slo.given())
    throw InputError(w.file, "slo",
                     "a TTFT and TPOT target (slo: {ttft_p99_s, tpot_p99_s}): --find-max-rate measures the highest "
                     "rate against it",
                     "nothing");
  if (vm["max-rate-requests"].defaulted()) return std::nullopt;
  return requests;
}

}  // namespace kvplan::cli
