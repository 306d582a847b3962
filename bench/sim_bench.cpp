// Simulator speed: one million chat requests (configs/workloads/chat.yaml lengths) on
// Llama-3-8B / H100 SXM near saturation, vLLM continuous batching, on one thread.
// First measures the saturated throughput (20,000 requests arriving 1000x faster than the
// engine serves them), then runs N requests with Poisson arrivals at `load` x that rate.
// With `replicas` > 1, the N requests go to that many replicas behind `router`
// (cluster/fleet.h) at replicas x the rate, so each replica carries the same load as the lone
// engine of the run without it: the same requests, the same total work, one event loop.
// With `concurrency` > 0 the lone engine is driven instead by a benchmark client keeping that
// many requests in flight, all due at once (simulate --rate inf --max-concurrency N).
// Usage: build/bench/sim_bench [requests=1000000] [load=0.95] [scheduler=continuous]
//                              [replicas=1] [router=round-robin] [concurrency=0]
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cluster/fleet.h"
#include "io/config_io.h"
#include "io/workload_io.h"
#include "sim/sim.h"

using namespace kvplan;

int main(int argc, char** argv) {
  try {
    const int64_t requests = argc > 1 ? std::atoll(argv[1]) : 1000000;
    const double load = argc > 2 ? std::atof(argv[2]) : 0.95;
    const auto scheduler = sim::parse_scheduler(argc > 3 ? argv[3] : "continuous");
    const int64_t replicas = argc > 4 ? std::atoll(argv[4]) : 1;
    const auto router = cluster::parse_router(argc > 5 ? argv[5] : "round-robin");
    const int64_t concurrency = argc > 6 ? std::atoll(argv[6]) : 0;
    if (requests < 1 || !(load > 0) || !scheduler || replicas < 1 || !router || concurrency < 0 ||
        (concurrency > 0 && replicas > 1)) {
      std::fprintf(stderr, "usage: sim_bench [requests] [load] [%s] [replicas] [%s] [concurrency, lone engine]\n",
                   sim::kSchedulerNames.choices().c_str(), cluster::kRouterNames.choices().c_str());
      return 2;
    }
    const ModelConfig m = io::load_model("llama-3-8b");
    const GpuSpec g = io::load_gpu("h100-sxm");
    const ServingOptions o;
    Workload w = io::load_workload("chat");
    const sim::Simulator s(m, g, o);

    sim::SimOptions so;
    so.scheduler = *scheduler;
    so.requests = 20000;
    so.rate_scale = 1000;
    const sim::SimResult sat = s.run(w, so);
    const double rate = load * sat.requests_per_s * static_cast<double>(replicas);
    std::printf("saturated: %.2f requests/s, %.0f output tokens/s, batch mean %.1f (pool %lld blocks)\n",
                sat.requests_per_s, sat.output_tokens_per_s, sat.batch_mean,
                static_cast<long long>(sat.num_blocks));

    so.requests = requests;
    so.rate_scale = rate / w.base_rate_per_s();
    if (concurrency > 0) {
      so.max_concurrency = concurrency;
      so.all_at_once = true;
    }
    const sim::SimResult r = replicas == 1 ? s.run(w, so)
                                           : cluster::simulate_fleet(s, w, so, cluster::FleetOptions{replicas, *router, {}, {}}).fleet;
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    if (concurrency > 0)
      std::printf("run: %lld requests, all due at once, at most %lld in flight, scheduler %s\n",
                  static_cast<long long>(requests), static_cast<long long>(concurrency),
                  std::string(to_string(*scheduler)).c_str());
    else
      std::printf("run: %lld requests at %.2f /s (%.0f %% of saturation), scheduler %s, %lld replica(s), router %s\n",
                  static_cast<long long>(requests), rate, 100 * load, std::string(to_string(*scheduler)).c_str(),
                  static_cast<long long>(replicas), std::string(to_string(*router)).c_str());
    std::printf("  simulated %.0f s: %lld steps, %lld events, %.3g tokens (prompt + decode)\n",
                r.duration_s, static_cast<long long>(r.steps), static_cast<long long>(r.events),
                static_cast<double>(r.tokens_simulated));
    std::printf("  completed %lld, rejected %lld, preemptions %lld; %.2f requests/s, %.0f output tokens/s\n",
                static_cast<long long>(r.completed), static_cast<long long>(r.rejected),
                static_cast<long long>(r.preemptions), r.requests_per_s, r.output_tokens_per_s);
    std::printf("  TTFT p50/p99 %.3f/%.3f s, TPOT p50/p99 %.1f/%.1f ms, batch mean %.1f, KV peak %.0f %%\n",
                r.ttft_s.p50, r.ttft_s.p99, 1e3 * r.tpot_s.p50, 1e3 * r.tpot_s.p99, r.batch_mean,
                100 * r.peak_kv_utilization);
    std::printf("  wall %.2f s: %.3g simulated tokens per wall second, %.3g steps/s; peak RSS %.0f MiB\n",
                r.wall_s, r.tokens_per_wall_s, static_cast<double>(r.steps) / r.wall_s,
                static_cast<double>(ru.ru_maxrss) / 1024.0);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sim_bench: %s\n", e.what());
    return 1;
  }
}
