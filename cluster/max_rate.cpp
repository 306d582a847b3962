// The max-rate search (cluster/max_rate.h).
#include "cluster/max_rate.h"

#include <algorithm>
#include <string>

#include "planner/types.h"

namespace kvplan::cluster {

namespace {

RunWorkload engine_run(const sim::Simulator& s) {
  return [&s](const Workload& w, const sim::SimOptions& o) { return s.run(w, o); };
}

RunWorkload fleet_run(const sim::Simulator& s, const FleetOptions& f) {
  return [&s, f](const Workload& w, const sim::SimOptions& o) { return simulate_fleet(s, w, o, f).fleet; };
}

MaxRateOptions for_fleet(MaxRateOptions mo, int64_t replicas) {
  mo.requests = probe_requests(mo, replicas);
  return mo;
}

}  // namespace

int64_t probe_requests(const MaxRateOptions& mo, int64_t replicas) {
  return mo.requests.value_or(kProbeRequests * std::max<int64_t>(replicas, 1));
}

MaxRate find_max_rate(const RunWorkload& run, const Workload& w, const sim::SimOptions& opt,
                      const MaxRateOptions& mo) {
  if (!w.slo.given())
    throw InputError(w.file.empty() ? "workload" : w.file, "slo",
                     "a TTFT or TPOT target (slo: {ttft_p99_s, tpot_p99_s}): the highest rate is measured against it",
                     "nothing");
  const int64_t asked = probe_requests(mo);
  const int64_t per_run = asked > 0 ? asked : opt.requests.value_or(w.requests);
  if (per_run < sim::min_requests_for_percentile(0.99))
    throw InputError("max rate search", "requests per run",
                     "at least " + std::to_string(sim::min_requests_for_percentile(0.99)) +
                         " requests, so that 10 lie above the p99 the SLO is judged on",
                     std::to_string(per_run));
  sim::SimOptions o = opt;
  o.on_step = nullptr;
  o.on_request = nullptr;
  o.check_invariants = false;
  if (asked > 0) o.requests = asked;
  const double base_rate = w.base_rate_per_s();
  MaxRate out;
  std::optional<double> lo, hi;
  sim::SimResult lo_res, last;
  auto trial = [&](double scale) {
    o.rate_scale = scale;
    last = run(w, o);
    ++out.runs;
    const bool ok = last.meets_slo && (w.slo.ttft_p99_s <= 0 ||
                                       last.queue_growth_s <= mo.max_queue_growth * w.slo.ttft_p99_s);
    if (ok) {
      lo = scale;
      lo_res = last;
    } else {
      hi = scale;
    }
    if (mo.on_run)
      mo.on_run(o.seed, out.runs, lo ? std::optional<double>(*lo * base_rate) : std::nullopt,
                hi ? std::optional<double>(*hi * base_rate) : std::nullopt);
    return ok;
  };
  double scale = opt.rate_scale > 0 ? opt.rate_scale : 1.0;
  if (trial(scale)) {
    while (out.runs < mo.max_runs && trial(scale *= 2)) {}
  } else {
    // 2^-30 of the workload's rate: requests arrive alone.
    for (int i = 0; i < 30 && out.runs < mo.max_runs; ++i)
      if (trial(scale /= 2)) break;
  }
  if (!lo) {
    out.at_max = last;
    return out;
  }
  while (hi && out.runs < mo.max_runs && (*hi - *lo) > mo.rel_tolerance * *lo) {
    const double mid = 0.5 * (*lo + *hi);
    trial(mid);
  }
  out.found = true;
  out.rate_scale = *lo;
  out.max_rate_per_s = *lo * base_rate;
  out.at_max = lo_res;
  return out;
}

MaxRate find_max_rate(const sim::Simulator& s, const Workload& w, const sim::SimOptions& opt,
                      const MaxRateOptions& mo) {
  return find_max_rate(engine_run(s), w, opt, mo);
}

MaxRate find_max_rate(const sim::Simulator& s, const FleetOptions& f, const Workload& w, const sim::SimOptions& opt,
                      const MaxRateOptions& mo) {
  return find_max_rate(fleet_run(s, f), w, opt, for_fleet(mo, f.replicas));
}

MaxRate find_max_rate(const DisaggSimulator& s, const Workload& w, const sim::SimOptions& opt,
                      const MaxRateOptions& mo) {
  return find_max_rate([&s](const Workload& wl, const sim::SimOptions& o) { return s.run(wl, o).overall; }, w, opt,
                       mo);
}

MaxRateRange max_rate_range(const RunWorkload& run, const Workload& w, const sim::SimOptions& opt,
                            const MaxRateOptions& mo, const MaxRate& first, int seeds) {
  MaxRateRange r;
  r.seeds = std::max(1, seeds);
  r.min_per_s = r.max_per_s = first.found ? first.max_rate_per_s : 0;
  for (int k = 1; k < r.seeds; ++k) {
    sim::SimOptions o = opt;
    o.seed = opt.seed + static_cast<uint64_t>(k);
    const MaxRate m = find_max_rate(run, w, o, mo);
    const double rate = m.found ? m.max_rate_per_s : 0;
    r.min_per_s = std::min(r.min_per_s, rate);
    r.max_per_s = std::max(r.max_per_s, rate);
  }
  return r;
}

MaxRateRange max_rate_range(const sim::Simulator& s, const Workload& w, const sim::SimOptions& opt,
                            const MaxRateOptions& mo, const MaxRate& first, int seeds) {
  return max_rate_range(engine_run(s), w, opt, mo, first, seeds);
}

MaxRateRange max_rate_range(const sim::Simulator& s, const FleetOptions& f, const Workload& w,
                            const sim::SimOptions& opt, const MaxRateOptions& mo, const MaxRate& first, int seeds) {
  return max_rate_range(fleet_run(s, f), w, opt, for_fleet(mo, f.replicas), first, seeds);
}

}  // namespace kvplan::cluster
