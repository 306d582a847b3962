// kvplan cluster: a fleet of identical engine replicas (one Simulator each: the same model,
// GPU and serving options) behind a request router, simulated exactly: one request
// stream for the fleet, each request routed at its arrival time from the replicas'
// state at that instant, every replica an EngineInstance (sim/sim.h) stepping as a lone
// engine would.
//
// Time order (one event loop over the fleet; docs/ARCHITECTURE.md "Replicas and routing"):
// events are ordered by time, and at equal times (1) step ends (tokens delivered,
// finished requests leave, blocks freed), then (2) arrivals, routed in arrival order,
// then (3) scheduling points (each replica lets in what was routed to it and composes
// its next step); replicas in index order within each. So a request arriving exactly
// when a step ends sees that step's finishes, and requests arriving together are all
// routed before any replica composes. A replica has at most one pending event, so one
// arrival costs O(replicas) to route and one step O(log replicas) to order.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "planner/names.h"
#include "planner/workload.h"
#include "sim/sim.h"

namespace kvplan::cluster {

//! How the router picks a replica for a request, from the replicas' state at its arrival.
//! `round_robin`: request i (arrival order, rejected ones included) to replica i mod N.
//! `least_outstanding`: fewest requests routed there and not yet finished (waiting,
//! running or preempted), ties to the lowest index.
//! `least_kv`: lowest KV use (blocks in use / pool), ties by least outstanding, then index;
//! blocks are taken at admission, so a request routed but not yet admitted adds none;
//! cached blocks no request holds count as free, as in vLLM V1's KV usage
//! (vllm/v1/core/block_pool.py get_usage: 1 - free blocks / pool, cached ones free).
//! `prefix_aware`: the replica whose prefix cache holds the longest run of the request's
//! leading prompt blocks (vLLM's block hashing, sim/prefix_cache.h), ties and no hit
//! anywhere by least outstanding, then index. Modelled on SGLang's cache-aware router
//! (sgl-project/sglang sgl-router/src/policies/cache_aware.rs, commit 026f853: highest
//! prefix match, else the least loaded worker) with the replicas' exact cache state in
//! place of its approximate per-worker radix tree (llm-d's precise prefix-cache scorer
//! reads the engines' KV-cache events for the same reason), and without its load-
//! imbalance override.
enum class Router { round_robin, least_outstanding, least_kv, prefix_aware };
inline constexpr NameTable<Router, 4> kRouterNames{{{
    {"round-robin", Router::round_robin}, {"least-outstanding", Router::least_outstanding},
    {"least-kv", Router::least_kv}, {"prefix-aware", Router::prefix_aware},
}}};
std::string_view to_string(Router r);
//! Parses round-robin|least-outstanding|least-kv|prefix-aware.
std::optional<Router> parse_router(std::string_view s);

struct FleetOptions {
  int64_t replicas = 1;
  Router router = Router::round_robin;
  //! Called after each step of each replica, with its index (SimOptions::on_step is not).
  std::function<void(int64_t, const sim::StepSample&)> on_step;
  //! Called at each request event, with the replica it was routed to.
  std::function<void(int64_t, const sim::RequestEvent&)> on_request;
};

struct FleetResult {
  //! The fleet as one service: counts and token throughput summed, latency percentiles
  //! over every request, duration from the first arrival to the last finish anywhere.
  //! Per-GPU figures (num_blocks, block_size) are one replica's; peak_blocks and
  //! peak_kv_utilization are the fullest replica's; busy_s, steps and events are summed
  //! over replicas, batch_mean and mean_kv_utilization weighted by each one's busy time.
  sim::SimResult fleet;
  //! Each replica's own metrics, in index order (wall_s 0: measured for the fleet).
  std::vector<sim::SimResult> replicas;
};

//! Runs the workload (SimOptions: seed, request count, rate scale, pool override and
//! scheduler as for one engine; its observers are ignored, FleetOptions has the fleet's)
//! over f.replicas copies of the engine. One replica with any router is exactly
//! Simulator::run. Throws InputError when f.replicas < 1 or the engine refuses the options.
FleetResult simulate_fleet(const sim::Simulator& s, const Workload& w, const sim::SimOptions& opt,
                           const FleetOptions& f);

}  // namespace kvplan::cluster
