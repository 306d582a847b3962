// Plan evaluations per second: make_plan over a sweep of the catalog's models and GPUs,
// TP 1-8, four KV dtypes/schemes and four context lengths, on one thread. Config files
// given after the seconds are then each read and planned whole (io::load_model, validate,
// make_plan on an H100 at TP 8, 8k context), the time a `kvplan plan` spends on its model,
// 20 times each; it prints, of each file's median run, the median and slowest file (wall
// and CPU time), the count over 10 ms (issue 23's bound) and the slowest eight.
// Usage: build/bench/plan_bench [seconds [config.json ...]]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "io/config_io.h"
#include "planner/planner.h"

using namespace kvplan;

namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

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
    // Per file, the median of its runs, in wall time and in this thread's CPU time (on a
    // shared machine the wall time also counts the other processes' turns on the cores).
    struct FileTime {
      double wall_s, cpu_s;
      const char* file;
    };
    std::vector<FileTime> per_file;
    int refused = 0;
    for (int a = 2; a < argc; ++a) {
      std::vector<double> wall_s, cpu_s;
      for (int r = 0; r < kRuns; ++r) {
        const auto t0 = clock::now();
        const double c0 = thread_cpu_s();
        try {
          const ModelConfig m = io::load_model(argv[a]);
          ServingOptions o;
          o.tp = 8;
          validate(m, o, "bench");
          sink += make_plan(m, h100, o, 8192, 1).decode_time.time_s;
        } catch (const InputError&) {
          refused += r == 0 ? 1 : 0;  // refused by name: its time is the time to say so
        }
        cpu_s.push_back(thread_cpu_s() - c0);
        wall_s.push_back(std::chrono::duration<double>(clock::now() - t0).count());
      }
      per_file.push_back({median(wall_s), median(cpu_s), argv[a]});
    }
    std::sort(per_file.begin(), per_file.end(), [](const auto& x, const auto& y) { return x.wall_s > y.wall_s; });
    std::vector<double> all_wall_s, all_cpu_s;
    for (const auto& f : per_file) all_wall_s.push_back(f.wall_s), all_cpu_s.push_back(f.cpu_s);
    const auto over_10ms = std::count_if(per_file.begin(), per_file.end(), [](const auto& f) { return f.wall_s > 10e-3; });
    std::printf("%zu configs read and planned (%d refused by name), median of %d runs each: median file %.2f ms wall "
                "(%.2f ms CPU), slowest %.2f ms wall (%.2f ms CPU), %ld over 10 ms wall, checksum %.3g; slowest:\n",
                per_file.size(), refused, kRuns, median(all_wall_s) * 1e3, median(all_cpu_s) * 1e3,
                per_file.front().wall_s * 1e3, *std::max_element(all_cpu_s.begin(), all_cpu_s.end()) * 1e3,
                static_cast<long>(over_10ms), sink);
    for (size_t i = 0; i < std::min<size_t>(8, per_file.size()); ++i)
      std::printf("  %8.2f ms wall %8.2f ms CPU  %s\n", per_file[i].wall_s * 1e3, per_file[i].cpu_s * 1e3, per_file[i].file);
  }
  return 0;
}
