// Plan evaluations per second: make_plan over a sweep of the catalog's models and GPUs,
// TP 1-8, four KV dtypes/schemes and four context lengths, on one thread. Config files
// given after the seconds are then each read and planned whole (io::load_model, validate,
// make_plan on an H100 at TP 8, 8k context), the time a `kvplan plan` spends on its model;
// it prints the median, the count over 10 ms (issue 23's bound) and the slowest eight.
// Usage: build/bench/plan_bench [seconds [config.json ...]]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "io/config_io.h"
#include "planner/planner.h"

using namespace kvplan;

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  std::vector<ModelConfig> models;
  for (const auto& n : io::catalog("models")) models.push_back(io::load_model(n));
  std::vector<GpuSpec> gpus;
  for (const auto& n : io::catalog("gpus")) gpus.push_back(io::load_gpu(n));

  struct Case {
    const ModelConfig* m;
    const GpuSpec* g;
    ServingOptions o;
    int64_t ctx;
  };
  std::vector<Case> cases;
  const DType kv[] = {DType::bf16, DType::fp8, DType::int4, DType::int4};
  const KvQuant q[] = {KvQuant::raw, KvQuant::raw, KvQuant::raw, KvQuant::kivi};
  for (const auto& m : models)
    for (const auto& g : gpus)
      for (int64_t tp : {1, 2, 4, 8})
        for (int k = 0; k < 4; ++k)
          for (int64_t ctx : {1024, 4096, 32768, 131072}) {
            ServingOptions o;
            o.tp = tp;
            o.kv_cache_dtype = kv[k];
            o.kv_quant = q[k];
            try {
              validate(m, o, "bench");
            } catch (const InputError&) {
              continue;
            }
            cases.push_back({&m, &g, o, ctx});
          }

  using clock = std::chrono::steady_clock;
  double sink = 0;
  int64_t evaluations = 0;
  const auto start = clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (const auto& c : cases) {
      const Plan p = make_plan(*c.m, *c.g, c.o, c.ctx, 8);
      sink += static_cast<double>(p.capacity.max_concurrent_requests) + p.decode_time.time_s;
    }
    evaluations += static_cast<int64_t>(cases.size());
    elapsed = std::chrono::duration<double>(clock::now() - start).count();
  }
  std::printf("%zu distinct configurations, %lld plan evaluations in %.2f s on one thread\n", cases.size(),
              static_cast<long long>(evaluations), elapsed);
  std::printf("%.0f plan evaluations per second (checksum %.3g)\n", static_cast<double>(evaluations) / elapsed, sink);

  if (argc > 2) {
    const GpuSpec h100 = io::load_gpu("h100-sxm");
    constexpr int kRuns = 20;
    std::vector<std::pair<double, const char*>> per_file_s;
    int refused = 0;
    for (int a = 2; a < argc; ++a) {
      const auto t0 = clock::now();
      for (int r = 0; r < kRuns; ++r) {
        try {
          const ModelConfig m = io::load_model(argv[a]);
          ServingOptions o;
          o.tp = 8;
          validate(m, o, "bench");
          sink += make_plan(m, h100, o, 8192, 1).decode_time.time_s;
        } catch (const InputError&) {
          refused += r == 0 ? 1 : 0;  // refused by name: its time is the time to say so
        }
      }
      per_file_s.emplace_back(std::chrono::duration<double>(clock::now() - t0).count() / kRuns, argv[a]);
    }
    std::sort(per_file_s.begin(), per_file_s.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    const auto over_10ms = std::count_if(per_file_s.begin(), per_file_s.end(), [](const auto& f) { return f.first > 10e-3; });
    std::printf("%zu configs read and planned (%d refused by name): median %.2f ms, %ld over 10 ms, checksum %.3g; slowest:\n",
                per_file_s.size(), refused, per_file_s[per_file_s.size() / 2].first * 1e3, static_cast<long>(over_10ms), sink);
    for (size_t i = 0; i < std::min<size_t>(8, per_file_s.size()); ++i)
      std::printf("  %8.2f ms  %s\n", per_file_s[i].first * 1e3, per_file_s[i].second);
  }
  return 0;
}
