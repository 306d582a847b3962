// Sizing search benchmark: the full GPU catalog x TP 1,2,4,8 x 4 KV options x 3 weight
// options for one model under one workload, on every core. Prints the wall time and how
// the candidates split (pruned, evaluated, meeting the SLO). Run by hand; the figure goes
// to bench/RESULTS.md with the command:
//   build/size_bench [model=llama-3-8b] [workload=chat] [threads=0 (all)] [requests=2000]
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "io/config_io.h"
#include "io/workload_io.h"
#include "size/size.h"

int main(int argc, char** argv) {
  using namespace kvplan;
  const std::string model = argc > 1 ? argv[1] : "llama-3-8b";
  const std::string workload = argc > 2 ? argv[2] : "chat";
  const int threads = argc > 3 ? std::stoi(argv[3]) : 0;
  const int64_t requests = argc > 4 ? std::stoll(argv[4]) : 2000;
  try {
    size::SearchSpace space;
    space.models.push_back(io::load_model(model));
    for (const auto& g : io::catalog("gpus")) space.gpus.push_back(io::load_gpu(g));
    space.tp = size::default_tp_options();
    space.pp = {1};
    space.kv = size::default_kv_options();
    space.weights = size::default_weight_options();
    const sim::Workload w = io::load_workload(workload);
    size::SizeOptions opt;
    opt.threads = threads;
    opt.requests_per_probe = requests;
    const auto t0 = std::chrono::steady_clock::now();
    const size::SizeResult r = size::run_search(space, w, opt);
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t meeting = 0, runs = 0;
    for (const auto& o : r.options) {
      meeting += o.meets_slo ? 1 : 0;
      runs += o.eval.runs;
    }
    const unsigned hw = std::thread::hardware_concurrency();
    std::printf("size_bench: %s, workload %s, %zu GPUs, %lld candidates: %lld evaluated, %lld meet the SLO; "
                "%lld max-rate simulations of <= %lld requests; threads %d (hardware %u); wall %.1f s\n",
                model.c_str(), workload.c_str(), space.gpus.size(), static_cast<long long>(r.candidates),
                static_cast<long long>(r.evaluated), static_cast<long long>(meeting), static_cast<long long>(runs),
                static_cast<long long>(requests), threads > 0 ? threads : static_cast<int>(hw), hw, wall_s);
    if (!r.options.empty() && r.options.front().meets_slo) {
      const auto& b = r.options.front();
      std::printf("best: %lld replica(s) of %s TP %lld, %s weights, KV %s/%s: $%.2f/h\n",
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
