// Plan evaluations per second: make_plan over a sweep of the catalog's models and GPUs,
// TP 1-8, four KV dtypes/schemes and four context lengths, on one thread. Config files
// given after the seconds are then each read and planned whole (io::load_model, validate,
// make_plan on an H100 at TP 8, 8k context), the time a `kvplan plan` spends on its model.
// Usage: build/bench/plan_bench [seconds [config.json ...]]
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
    double total_s = 0, worst_s = 0;
    const char* worst = "";
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
      const double per_s = std::chrono::duration<double>(clock::now() - t0).count() / kRuns;
      total_s += per_s;
      if (per_s > worst_s) worst_s = per_s, worst = argv[a];
    }
    std::printf("%d configs read and planned (%d refused by name): mean %.2f ms, worst %.2f ms (%s), checksum %.3g\n",
                argc - 2, refused, total_s / (argc - 2) * 1e3, worst_s * 1e3, worst, sink);
  }
  return 0;
}
