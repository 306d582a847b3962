// Sizing search benchmark: the GPU catalog x TP 1,2,4,8 x 4 KV options x 3 weight
// options for one model, or every catalog model (`all`), under one workload. Prints the
// wall time and how the candidates split (pruned by the planner, skipped by the rate
// ceiling, simulated, meeting the SLO). Run by hand; the figure goes to bench/RESULTS.md
// with the command:
//   build/bench/size_bench [model=llama-3-8b|all] [workload=chat] [threads=0 (all)]
//                          [requests=2000] [mode=bounded|exhaustive|ceilings]
// `ceilings` simulates nothing: it prints, per candidate the search would simulate,
// "model gpu tp quantization kv_dtype kv_quant ceiling_per_s" (tab-separated), to check
// the ceilings against an exhaustive run's max rates (bench/RESULTS.md).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>

#include "io/config_io.h"
#include "io/workload_io.h"
#include "planner/support.h"
#include "size/size.h"

namespace {

using namespace kvplan;

void print_ceilings(const size::SearchSpace& space, const Workload& w, int64_t requests) {
  const size::ProbeRequests probe = size::probe_requests(w, 0, requests);
  for (const auto& c : size::enumerate(space)) {
    const ModelConfig& m = space.models[static_cast<size_t>(c.model)];
    const GpuSpec& g = space.gpus[static_cast<size_t>(c.gpu)];
    if (what_if_reason(m, c.options)) continue;
    try {
      validate(m, c.options, "size_bench");
      const size::RateCeiling rc = size::rate_ceiling(m, g, c.options, c.scheduler, probe);
      std::printf("%s\t%s\t%lld\t%s\t%s\t%s\t%.6g\t%d\n", m.name.c_str(), g.name.c_str(),
                  static_cast<long long>(c.options.tp), std::string(to_string(c.options.quantization)).c_str(),
                  std::string(to_string(c.options.kv_dtype(m))).c_str(), std::string(to_string(c.options.kv_quant)).c_str(),
                  std::isfinite(rc.max_rate_per_s) ? rc.max_rate_per_s : -1.0, rc.infeasible ? 1 : 0);
    } catch (const std::exception&) {  // the planner refuses it: the search prunes it too
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string model = argc > 1 ? argv[1] : "llama-3-8b";
  const std::string workload = argc > 2 ? argv[2] : "chat";
  const int threads = argc > 3 ? std::stoi(argv[3]) : 0;
  const int64_t requests = argc > 4 ? std::stoll(argv[4]) : 2000;
  const std::string mode = argc > 5 ? argv[5] : "bounded";
  try {
    size::SearchSpace space;
    for (const auto& m : model == "all" ? io::catalog("models") : std::vector<std::string>{model})
      space.models.push_back(io::load_model(m));
    for (const auto& g : io::catalog("gpus")) space.gpus.push_back(io::load_gpu(g));
    space.tp = size::default_tp_options();
    space.pp = {1};
    space.kv = size::default_kv_options();
    space.weights = size::default_weight_options();
    const Workload w = io::load_workload(workload);
    if (mode == "ceilings") {
      print_ceilings(space, w, requests);
      return 0;
    }
    size::SizeOptions opt;
    opt.threads = threads;
    opt.requests_per_probe = requests;
    opt.exhaustive = mode == "exhaustive";
    const auto t0 = std::chrono::steady_clock::now();
    const size::SizeResult r = size::run_search(space, w, opt);
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t meeting = 0, runs = 0;
    for (const auto& o : r.options) {
      meeting += o.meets_slo ? 1 : 0;
      runs += o.eval.runs;
    }
    const unsigned hw = std::thread::hardware_concurrency();
    std::printf("size_bench: %s, workload %s, %zu models x %zu GPUs, %s: %lld candidates (%lld what-ifs left out): "
                "%lld simulated, %lld skipped by the rate ceiling, %lld fail on rejections alone, %lld reused, "
                "%lld meet the SLO; %lld max-rate simulations of <= %lld requests; threads %d (hardware %u); "
                "wall %.1f s\n",
                model.c_str(), workload.c_str(), space.models.size(), space.gpus.size(), mode.c_str(),
                static_cast<long long>(r.candidates), static_cast<long long>(r.what_if_skipped),
                static_cast<long long>(r.evaluated), static_cast<long long>(r.pruned_by_bound),
                static_cast<long long>(r.pruned_infeasible), static_cast<long long>(r.reused),
                static_cast<long long>(meeting), static_cast<long long>(runs), static_cast<long long>(requests),
                threads > 0 ? threads : static_cast<int>(hw), hw, wall_s);
    for (const auto& rec : r.recommendations) {
      const auto& b = r.options[rec.option];
      std::printf("best for %s: %lld replica(s) of %s TP %lld, %s weights, KV %s/%s: $%.2f/h\n", b.model.c_str(),
                  static_cast<long long>(b.replicas), b.gpu.c_str(), static_cast<long long>(b.candidate.options.tp),
                  std::string(to_string(b.candidate.options.quantization)).c_str(),
                  std::string(to_string(b.plan.kv_dtype)).c_str(), std::string(to_string(b.candidate.options.kv_quant)).c_str(),
                  b.cost_per_hour_usd.value_or(0));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "size_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
