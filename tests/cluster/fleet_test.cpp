// A fleet of replicas behind a router (cluster/fleet.h): closed forms and hand-worked routes.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "cluster/fleet.h"
#include "cluster/max_rate.h"
#include "sim/sim.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::sim;
using namespace kvplan::cluster;
using kvplan::sim::test::h100;
using kvplan::sim::test::llama3_8b;

namespace {

//! Fixed-interval arrivals of fixed-length requests.
Workload fixed_interval(int64_t n, double rate_per_s, int64_t prompt, int64_t output) {
  Workload w = sim::test::poisson(n, rate_per_s, prompt, output);
  w.name = "fixed";
  w.arrival.process = ArrivalProcess::fixed;
  return w;
}

//! A trace of (arrival_s, prompt, output) rows.
Workload trace(const std::vector<TraceRow>& rows) {
  Workload w = sim::test::burst(static_cast<int64_t>(rows.size()), 1, 1);
  w.name = "trace";
  w.trace = std::make_shared<const std::vector<TraceRow>>(rows);
  return w;
}

//! The replica each request was routed to, by request index.
std::vector<int64_t> routes(const Simulator& sim, const Workload& w, const SimOptions& o, FleetOptions f) {
  std::vector<int64_t> to(static_cast<size_t>(w.requests), -1);
  f.on_request = [&to](int64_t replica, const RequestEvent& e) {
    if (e.kind == RequestEventKind::arrived) to[static_cast<size_t>(e.request)] = replica;
  };
  (void)simulate_fleet(sim, w, o, f);
  return to;
}

void check_same(const SimResult& a, const SimResult& b) {
  CHECK(a.arrived == b.arrived);
  CHECK(a.completed == b.completed);
  CHECK(a.preemptions == b.preemptions);
  CHECK(a.steps == b.steps);
  CHECK(a.peak_blocks == b.peak_blocks);
  CHECK(a.batch_max == b.batch_max);
  CHECK(a.output_tokens == b.output_tokens);
  CHECK(a.ttft_s.p50 == doctest::Approx(b.ttft_s.p50).epsilon(1e-9));
  CHECK(a.ttft_s.p99 == doctest::Approx(b.ttft_s.p99).epsilon(1e-9));
  CHECK(a.ttft_s.mean == doctest::Approx(b.ttft_s.mean).epsilon(1e-9));
  CHECK(a.tpot_s.p50 == doctest::Approx(b.tpot_s.p50).epsilon(1e-9));
  CHECK(a.tpot_s.p99 == doctest::Approx(b.tpot_s.p99).epsilon(1e-9));
  CHECK(a.e2e_s.p99 == doctest::Approx(b.e2e_s.p99).epsilon(1e-9));
  CHECK(a.queue_s.mean == doctest::Approx(b.queue_s.mean).epsilon(1e-9));
  CHECK(a.duration_s == doctest::Approx(b.duration_s).epsilon(1e-9));
  CHECK(a.busy_s == doctest::Approx(b.busy_s).epsilon(1e-9));
  CHECK(a.batch_mean == doctest::Approx(b.batch_mean).epsilon(1e-9));
}

}  // namespace

TEST_CASE("round-robin over N identical replicas with fixed-interval arrivals is N runs at rate / N") {
  // Arrivals 1/R apart, request i to replica i mod N: replica k sees arrivals at
  // k/R + j N/R, a lone engine's arrivals at rate R/N shifted by k/R. Fixed lengths make
  // every replica's requests the same, so each replica's metrics equal that run's, and
  // the fleet completes N times its requests with the same latency distribution.
  // R = 40/s over 4 replicas: 10/s each, 2 kB prompts and 200 outputs: a batched load.
  const Simulator sim(llama3_8b(), h100(), ServingOptions{});
  const int64_t n = 4, per = 400;
  const SimResult one = sim.run(fixed_interval(per, 40.0 / n, 2000, 200), kvplan::sim::test::with(Scheduler::chunked));
  REQUIRE(one.batch_max > 1);  // requests overlap: the replicas batch
  FleetOptions f;
  f.replicas = n;
  f.router = Router::round_robin;
  const FleetResult r = simulate_fleet(sim, fixed_interval(n * per, 40.0, 2000, 200), kvplan::sim::test::with(Scheduler::chunked), f);
  REQUIRE(r.replicas.size() == static_cast<size_t>(n));
  for (const SimResult& rep : r.replicas) check_same(rep, one);
  CHECK(r.fleet.completed == n * one.completed);
  CHECK(r.fleet.steps == n * one.steps);
  CHECK(r.fleet.ttft_s.p99 == doctest::Approx(one.ttft_s.p99).epsilon(1e-9));
  CHECK(r.fleet.tpot_s.p50 == doctest::Approx(one.tpot_s.p50).epsilon(1e-9));
  CHECK(r.fleet.busy_s == doctest::Approx(n * one.busy_s).epsilon(1e-9));
  // The fleet's span: replica 0's first arrival to replica N-1's last finish, (N-1)/R later.
  CHECK(r.fleet.duration_s == doctest::Approx(one.duration_s + (n - 1) / 40.0).epsilon(1e-9));
}

TEST_CASE("one replica is the lone engine, whatever the router") {
  // Same stream, same event order: a burst (every request at one instant), Poisson
  // arrivals under preemption pressure and a shared-prefix workload, byte for byte.
  const Simulator sim(llama3_8b(), h100(), ServingOptions{});
  Workload shared = fixed_interval(300, 30.0, 100, 50);
  shared.shared_prefix = SharedPrefix{3, 4, 64, false};
  SimOptions small = kvplan::sim::test::with(Scheduler::chunked);
  small.num_blocks = 300;
  for (const Workload& w : {sim::test::burst(64, 700, 40), sim::test::poisson(500, 25.0, 900, 150), shared})
    for (const SimOptions& o : {kvplan::sim::test::with(Scheduler::chunked), small})
      for (Router router : {Router::round_robin, Router::least_outstanding, Router::least_kv, Router::prefix_aware}) {
        const SimResult lone = sim.run(w, o);
        const FleetResult f = simulate_fleet(sim, w, o, FleetOptions{1, router, nullptr, nullptr});
        CHECK(f.fleet.completed == lone.completed);
        CHECK(f.fleet.preemptions == lone.preemptions);
        CHECK(f.fleet.steps == lone.steps);
        CHECK(f.fleet.events == lone.events);
        CHECK(f.fleet.cached_prompt_tokens == lone.cached_prompt_tokens);
        CHECK(f.fleet.ttft_s.p99 == lone.ttft_s.p99);
        CHECK(f.fleet.tpot_s.mean == lone.tpot_s.mean);
        CHECK(f.fleet.e2e_s.p50 == lone.e2e_s.p50);
        CHECK(f.fleet.queue_growth_s == lone.queue_growth_s);
        CHECK(f.fleet.duration_s == lone.duration_s);
      }
}

TEST_CASE("least-outstanding sends short requests away from the replica busy with a long one") {
  // Two replicas. t = 0: a 1,000-token answer (999 decode steps of at least the weights'
  // read, 16.06 GB / (3.35 TB/s x 0.8) = 6 ms: about 6 s); t = 1 s and 2 s: 5-token
  // answers (a prefill and 4 decode steps, well under 1 s). At t = 0 both replicas have 0
  // outstanding: replica 0 (lowest index). At t = 1 s replica 0 has 1, replica 1 has 0:
  // replica 1. At t = 2 s the first short one has finished, so again (1, 0): replica 1.
  // Round-robin sends the third request to replica 0 (2 mod 2).
  const Simulator sim(llama3_8b(), h100(), ServingOptions{});
  const Workload w = trace({{0.0, 100, 1000}, {1.0, 100, 5}, {2.0, 100, 5}});
  FleetOptions f;
  f.replicas = 2;
  f.router = Router::least_outstanding;
  CHECK(routes(sim, w, kvplan::sim::test::with(Scheduler::chunked), f) == std::vector<int64_t>{0, 1, 1});
  f.router = Router::least_kv;  // replica 0 holds the long request's blocks, replica 1 none
  CHECK(routes(sim, w, kvplan::sim::test::with(Scheduler::chunked), f) == std::vector<int64_t>{0, 1, 1});
  f.router = Router::round_robin;
  CHECK(routes(sim, w, kvplan::sim::test::with(Scheduler::chunked), f) == std::vector<int64_t>{0, 1, 0});
  // The short requests on replica 1 wait for nobody: each TTFT is its own prefill.
  f.router = Router::least_outstanding;
  const FleetResult r = simulate_fleet(sim, w, kvplan::sim::test::with(Scheduler::chunked), f);
  CHECK(r.replicas[0].arrived == 1);
  CHECK(r.replicas[1].arrived == 2);
  CHECK(r.replicas[1].ttft_s.p99 == doctest::Approx(sim.step_model().step(100, 100 * 101 / 2.0, 0, 0).time_s).epsilon(1e-9));
}

TEST_CASE("prefix-aware routing sends a repeated prompt to the replica that served it") {
  // Two replicas, three users (no shared system prompt) of 200-token prompts and
  // 2,000-token answers (about 12 s each, so all six stay running), one request a second:
  // users 0, 1, 2, 0, 1, 2. Prefix-aware: t0 user 0 -> no hit anywhere, (0, 0) outstanding
  // -> replica 0; t1 user 1 -> no hit, (1, 0) -> 1; t2 user 2 -> no hit, (1, 1) -> 0;
  // t3 user 0 -> replica 0 holds its 12 full blocks (floor(199 / 16); vLLM recomputes the
  // last token) -> 0 although (2, 1) outstanding; t4 user 1 -> 1; t5 user 2 -> 0.
  // Hits: 3 x 192 tokens, 2 of them on replica 0. Least-outstanding instead sends each
  // repeat to the other replica ((2, 1) -> 1, (2, 2) -> 0, (3, 2) -> 1): no hit at all.
  const Simulator sim(llama3_8b(), h100(), ServingOptions{});
  Workload w = fixed_interval(6, 1.0, 200, 2000);
  w.shared_prefix = SharedPrefix{3, 1, 0, false};
  FleetOptions f;
  f.replicas = 2;
  f.router = Router::prefix_aware;
  CHECK(routes(sim, w, kvplan::sim::test::with(Scheduler::chunked), f) == std::vector<int64_t>{0, 1, 0, 0, 1, 0});
  const FleetResult r = simulate_fleet(sim, w, kvplan::sim::test::with(Scheduler::chunked), f);
  CHECK(r.fleet.cached_prompt_tokens == 3 * 192);
  CHECK(r.replicas[0].cached_prompt_tokens == 2 * 192);
  CHECK(r.replicas[1].cached_prompt_tokens == 192);
  f.router = Router::least_outstanding;
  CHECK(routes(sim, w, kvplan::sim::test::with(Scheduler::chunked), f) == std::vector<int64_t>{0, 1, 0, 1, 0, 1});
  CHECK(simulate_fleet(sim, w, kvplan::sim::test::with(Scheduler::chunked), f).fleet.cached_prompt_tokens == 0);
}

TEST_CASE("requests arriving together are all routed before any replica composes its step") {
  // Four requests at t = 0 over 2 replicas, least-kv: a 2,000-token prompt (125 blocks),
  // then three of 100 tokens (7 blocks). All are routed before either replica admits
  // anything, so every KV use is 0 and the tie goes by outstanding requests: 0 -> r0,
  // 1 -> r1 (1, 0), 2 -> r0 (1, 1), 3 -> r1 (2, 1). Had replica 0 composed at the first
  // arrival, it would hold 125 blocks and the three short ones would all go to replica 1.
  const Simulator sim(llama3_8b(), h100(), ServingOptions{});
  const Workload w = trace({{0.0, 2000, 20}, {0.0, 100, 20}, {0.0, 100, 20}, {0.0, 100, 20}});
  FleetOptions f;
  f.replicas = 2;
  f.router = Router::least_kv;
  CHECK(routes(sim, w, kvplan::sim::test::with(Scheduler::chunked), f) == std::vector<int64_t>{0, 1, 0, 1});
}

TEST_CASE("router names and bad fleets") {
  for (Router r : {Router::round_robin, Router::least_outstanding, Router::least_kv, Router::prefix_aware})
    CHECK(parse_router(to_string(r)) == r);
  CHECK_FALSE(parse_router("random"));
  const Simulator sim(llama3_8b(), h100(), ServingOptions{});
  CHECK_THROWS_AS(simulate_fleet(sim, sim::test::burst(2, 10, 2), kvplan::sim::test::with(Scheduler::chunked), FleetOptions{0, Router::round_robin, {}, {}}),
                  InputError);
}

TEST_CASE("a benchmark client in front of a fleet: one replica is the lone engine, two halve the wait") {
  // One replica behind the client is the lone engine behind it (the same requests, the
  // same send times). Two replicas, round-robin, two slots, equal requests all due at
  // once: request i goes to replica i mod 2, and each replica runs one request at a time
  // on an idle engine: TTFT = prefill(1000), E2E = prefill + 100 decode steps of batch 1,
  // and 10 requests take 5 E2E: twice the lone engine's throughput at concurrency 1.
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  const ServingOptions o = sim::test::serving();
  const StepTimeModel stm(m, g, o);
  const double prefill_s = stm.prefill(1000).time_s;
  const double e2e_s = prefill_s + sim::test::decode_sum(stm, 1, 1000, 100);
  const Simulator sim(m, g, o);
  SimOptions so = sim::test::with(Scheduler::chunked);
  so.all_at_once = true;
  so.max_concurrency = 3;
  const Workload w = sim::test::poisson(12, 1.0, 1000, 101);
  const SimResult lone = sim.run(w, so);
  const SimResult one = simulate_fleet(sim, w, so, FleetOptions{1, Router::round_robin, {}, {}}).fleet;
  CHECK(one.steps == lone.steps);
  CHECK(one.duration_s == lone.duration_s);
  CHECK(one.ttft_s.p99 == lone.ttft_s.p99);
  CHECK(one.itl_s.mean == lone.itl_s.mean);
  so.max_concurrency = 2;
  const SimResult two = simulate_fleet(sim, sim::test::poisson(10, 1.0, 1000, 101), so, FleetOptions{2, Router::round_robin, {}, {}}).fleet;
  CHECK(two.completed == 10);
  CHECK(two.ttft_s.p99 == doctest::Approx(prefill_s).epsilon(1e-12));
  CHECK(two.e2e_s.mean == doctest::Approx(e2e_s).epsilon(1e-12));
  CHECK(two.duration_s == doctest::Approx(5 * e2e_s).epsilon(1e-12));
  CHECK(two.requests_per_s == doctest::Approx(2 / e2e_s).epsilon(1e-12));
  CHECK(two.batch_max == 1);
}

TEST_CASE("the remote KV store is shared by the replicas: a prefix one replica wrote is a hit on another") {
  // Two requests with the same 200-token prompt (12 full blocks), 1,000 s apart, round-
  // robin over two replicas: the second lands on replica 1, whose GPU cache and host tier
  // never saw the prompt. With a store, replica 0 wrote the 12 blocks through to it, and
  // replica 1 loads them: 192 prompt tokens, one fetch of 20 us + 12 x 2 MiB / 23.75 GB/s.
  // Llama-3-8B in bf16: a 16-token block is 2 x 32 x 8 x 128 x 2 B x 16 = 2 MiB per GPU.
  constexpr int64_t kBlockBytes = 2 * 32 * 8 * 128 * 2 * 16;
  const Workload w = kvplan::sim::test::alternating(1, 2);
  ServingOptions o;
  o.kv_offloading_bytes = 64 * kBlockBytes;
  SimOptions so = kvplan::sim::test::with(Scheduler::chunked);
  so.remote_latency_s = 20e-6;
  const FleetOptions f{2, Router::round_robin, nullptr, nullptr};
  CHECK(simulate_fleet(Simulator(llama3_8b(), h100(), o), w, so, f).fleet.cached_prompt_tokens == 0);
  o.kv_remote_bytes = 100 * kBlockBytes;
  const FleetResult r = simulate_fleet(Simulator(llama3_8b(), h100(), o), w, so, f);
  CHECK(r.fleet.cached_prompt_tokens == 192);
  CHECK(r.fleet.remote_tier.hit_tokens == 192);
  CHECK(r.replicas[1].remote_tier.hit_tokens == 192);
  CHECK(r.fleet.remote_tier.capacity_blocks == 100);  // one store, not one per replica
  CHECK(r.fleet.remote_tier.stored_blocks == 12);     // replica 0's; replica 1 found them there
  CHECK(r.fleet.remote_tier.load_s ==
        doctest::Approx(20e-6 + 12.0 * static_cast<double>(kBlockBytes) / 23.75e9).epsilon(1e-12));
}
