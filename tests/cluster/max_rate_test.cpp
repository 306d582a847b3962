// Tests of cluster/max_rate.h: the max-rate search against closed forms (a D/D/1 server)
// and its own definition (a tenth more misses the SLO), its refusals and its range over
// seeds.
#include <doctest/doctest.h>

#include <cstdint>

#include "cluster/fleet.h"
#include "cluster/max_rate.h"
#include "planner/planner.h"
#include "sim/sim.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::cluster;
using kvplan::sim::Scheduler;
using kvplan::sim::SimOptions;
using kvplan::sim::SimResult;
using kvplan::sim::Simulator;
using namespace kvplan::sim::test;  // the shared workloads, options and closed forms

TEST_CASE("the max rate of a one-at-a-time server is the inverse of its service time") {
  // Static batching with max_num_seqs 1 and evenly spaced arrivals is a D/D/1 queue:
  // below 1 / E (E = prefill + 49 decode steps) nobody waits and TTFT is the prefill
  // time; above it the queue grows with every request. With the TTFT target just above
  // the prefill time, the highest rate meeting it is 1 / E.
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  ServingOptions o = serving();
  o.max_num_seqs = 1;
  const StepTimeModel stm(m, g, o);
  const double prefill_s = stm.prefill(500).time_s;
  const double service_s = prefill_s + decode_sum(stm, 1, 500, 49);
  Workload w = poisson(1, 1.0, 500, 50);
  w.arrival.process = ArrivalProcess::fixed;
  w.slo = Slo{prefill_s * 1.5, 1.0};
  const Simulator sim(m, g, o);
  SimOptions so;
  so.scheduler = Scheduler::static_batch;
  MaxRateOptions mo;
  mo.requests = 1000;
  mo.rel_tolerance = 0.005;
  const MaxRate mr = find_max_rate(sim, w, so, mo);
  CHECK(mr.found);
  CHECK(mr.max_rate_per_s == doctest::Approx(1.0 / service_s).epsilon(0.01));
  CHECK(mr.max_rate_per_s <= 1.0 / service_s * 1.0001);
  CHECK(mr.at_max.meets_slo);
  CHECK(mr.runs <= mo.max_runs);
}

TEST_CASE("the max rate under Poisson arrivals meets the SLO and a tenth more does not") {
  const Simulator sim(llama3_8b(), h100(), serving());
  Workload w = poisson(1, 10.0, 600, 200);
  w.slo = Slo{0.5, 0.05};
  MaxRateOptions mo;
  mo.requests = 1500;
  const MaxRate mr = find_max_rate(sim, w, SimOptions{}, mo);
  REQUIRE(mr.found);
  SimOptions at;
  at.requests = 1500;
  at.rate_scale = mr.rate_scale;
  CHECK(sim.run(w, at).meets_slo);
  at.rate_scale = mr.rate_scale * 1.1;
  CHECK_FALSE(sim.run(w, at).meets_slo);
}

TEST_CASE("an SLO no rate can meet is reported as not found") {
  const Simulator sim(llama3_8b(), h100(), serving());
  Workload w = poisson(1, 10.0, 600, 200);
  w.slo = Slo{1e-6, 1.0};
  const MaxRate mr = find_max_rate(sim, w, SimOptions{}, MaxRateOptions{1000, 0.02, 40});
  CHECK_FALSE(mr.found);
  CHECK(mr.max_rate_per_s == 0.0);
}

TEST_CASE("a workload without an SLO simulates, with no verdict: the max-rate search needs one") {
  const Simulator sim(llama3_8b(), h100(), serving());
  Workload w = poisson(1000, 10.0, 600, 20);
  w.slo = Slo{};
  const SimResult r = sim.run(w, with(Scheduler::continuous));
  CHECK(r.completed == 1000);
  CHECK_FALSE(r.slo.given());
  CHECK_FALSE(r.meets_slo);
  CHECK_THROWS_AS(find_max_rate(sim, w, SimOptions{}, MaxRateOptions{1000, 0.02, 40}), InputError);
}

TEST_CASE("the max rate comes with its range over seeds, which contains the first seed's answer") {
  const Simulator sim(llama3_8b(), h100(), serving());
  Workload w = poisson(1, 10.0, 600, 200);
  w.slo = Slo{0.5, 0.05};
  const MaxRateOptions mo{1000, 0.02, 40};
  const MaxRate first = find_max_rate(sim, w, SimOptions{}, mo);
  REQUIRE(first.found);
  const MaxRateRange range = max_rate_range(sim, w, SimOptions{}, mo, first, 3);
  CHECK(range.seeds == 3);
  CHECK(range.min_per_s <= first.max_rate_per_s);
  CHECK(range.max_per_s >= first.max_rate_per_s);
  // Seed 1 on its own: one end of the range or inside it.
  SimOptions seed1;
  seed1.seed = 1;
  const double second = find_max_rate(sim, w, seed1, mo).max_rate_per_s;
  CHECK(second >= range.min_per_s);
  CHECK(second <= range.max_per_s);
}

TEST_CASE("a max-rate search needs 1,000 requests per run for its p99") {
  // sim::min_requests_for_percentile(0.99) == 1000 (tests/sim/metrics_test.cpp).
  const Simulator sim(llama3_8b(), h100(), serving());
  Workload w = poisson(1, 10.0, 600, 200);
  w.slo = Slo{0.5, 0.05};
  CHECK_THROWS_AS(find_max_rate(sim, w, SimOptions{}, MaxRateOptions{999, 0.02, 40}), InputError);
}

TEST_CASE("the probe's requests per run: 4,000 per engine by default, a fleet's per replica, or as asked") {
  // The default: kProbeRequests per engine; a fleet of N replicas gets N times that so
  // each replica's share stays a lone engine's; a count given explicitly is used as is.
  CHECK(kProbeRequests == 4000);
  CHECK(probe_requests(MaxRateOptions{}) == 4000);
  CHECK(probe_requests(MaxRateOptions{}, 3) == 12000);
  CHECK(probe_requests(MaxRateOptions{1500, 0.02, 0.1, 40}, 3) == 1500);
  // A fleet search with the default runs 2 x 4,000 requests per trial: its at_max run
  // completed all of them.
  const Simulator sim(llama3_8b(), h100(), serving());
  Workload w = poisson(1, 10.0, 600, 200);
  w.slo = Slo{0.5, 0.05};
  const MaxRate mr = find_max_rate(sim, FleetOptions{2, Router::round_robin, {}, {}}, w, SimOptions{});
  REQUIRE(mr.found);
  CHECK(mr.at_max.arrived == 8000);
}
