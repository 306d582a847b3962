// SGLang's memory accounting (python/sglang/srt/model_executor/model_runner.py
// profile_max_num_token, server_args.py _handle_gpu_memory_settings):
//
//   before   = free memory after the CUDA context and the TP communicators exist
//   rest     = (free memory after loading weights) - before x (1 - mem_fraction_static)
//            = before x mem_fraction_static - weights
//   max_total_num_tokens = rest // cell_size   (cell = K+V bytes of one token, all layers)
//
// Activations and CUDA graphs are not measured: they must fit in the
// (1 - mem_fraction_static) share SGLang leaves out of its static pool.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "planner/checked.h"
#include "planner/engine_common.h"
#include "planner/engine_detail.h"
#include "planner/speculative.h"

namespace kvplan::detail {

namespace {

// kvplan's own --gpu-memory-utilization default; left there, SGLang's default applies.
constexpr double kKvplanDefaultUtilization = 0.90;

// SGLang 0.4.x (server_args.py ServerArgs.__post_init__): a fixed mem_fraction_static by
// TP size, 0.88 at TP 1, 0.87 from TP 2, 0.85 from 4, 0.81 from 8, 0.79 from 16. The
// 0.4.3.post4 log above prints mem_fraction_static=0.85 at TP 4 with no flag given.
double sglang_04_default_mem_fraction(const ServingOptions& o) {
  const int64_t tp = o.tp;
  if (tp >= 16) return 0.79;
  if (tp >= 8) return 0.81;
  if (tp >= 4) return 0.85;
  if (tp >= 2) return 0.87;
  return 0.88;
}

// server_args._handle_gpu_memory_settings (SGLang 0.5.x): reserved MiB for activations
// (1.5 x chunked_prefill_size), CUDA graphs (2 x cuda_graph_max_bs), 512 MiB of metadata
// and 1/8 GiB per GPU of the TP x PP group, at least 10 GiB on GPUs above 60 GiB.
struct SglangGpuDefaults {
  int64_t chunked_prefill_size = 8192;
  double cuda_graph_max_bs = 0;
};

// server_args._handle_gpu_memory_settings (0.5.x): chunked_prefill_size and
// cuda_graph_max_bs by GPU memory (MiB as nvidia-smi reports it) and TP size.
// 0.4.x (ServerArgs.__post_init__): chunked_prefill_size 2048 below 25,000 MB of GPU
// memory, else 8192.
SglangGpuDefaults sglang_gpu_defaults(const GpuSpec& g, const ServingOptions& o) {
  const double gpu_mib = static_cast<double>(g.memory_bytes) / static_cast<double>(kEngMiB);
  const double gib = 1024.0;
  SglangGpuDefaults d{8192, o.tp < 4 ? 256.0 : 512.0};
  if (o.engine_version == "0.4") {
    d.chunked_prefill_size = gpu_mib < 25000 ? 2048 : 8192;
  } else if (gpu_mib < 20 * gib) {
    d = {2048, 8};
  } else if (gpu_mib < 35 * gib) {
    d = {2048, o.tp < 4 ? 24.0 : 80.0};
  } else if (gpu_mib < 60 * gib) {
    d = {4096, o.tp < 4 ? 32.0 : 160.0};
  } else if (gpu_mib >= 160 * gib) {
    d = {16384, 512};
  }
  return d;
}

double sglang_default_mem_fraction(const GpuSpec& g, const ServingOptions& o) {
  if (o.engine_version == "0.4") return sglang_04_default_mem_fraction(o);
  const SglangGpuDefaults d = sglang_gpu_defaults(g, o);
  const double gib = 1024.0, gpu_mib = static_cast<double>(g.memory_bytes) / static_cast<double>(kEngMiB);
  const auto chunk = static_cast<double>(d.chunked_prefill_size);
  const double graph_bs = d.cuda_graph_max_bs;
  double reserved = 512 + std::max(chunk, 2048.0) * 1.5 + graph_bs * 2 +
                    static_cast<double>(o.tp * o.dp * o.pp) / 8 * gib + sglang_spec_reserved_mib(o);
  if (gpu_mib > 60 * gib) reserved = std::max(reserved, 10 * gib);
  return std::round((gpu_mib - reserved) / gpu_mib * 1000) / 1000;
}

}  // namespace

int64_t sglang_default_chunked_prefill_size(const GpuSpec& g, const ServingOptions& o) {
  return sglang_gpu_defaults(g, o).chunked_prefill_size;
}

std::vector<std::string> sglang_versions() {
  // 0.4 and 0.5 size the pool with the same profile_max_num_token; they differ in the
  // default mem_fraction_static (sglang_default_mem_fraction).
  return {"0.4", "0.5"};
}

MemoryBudget sglang_budget(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o) {
  const double fraction = o.gpu_memory_utilization == kKvplanDefaultUtilization
                              ? sglang_default_mem_fraction(g, o)
                              : o.gpu_memory_utilization;
  MemoryBudget b;
  b.gpu_bytes = g.memory_bytes;
  b.usable_bytes = static_cast<int64_t>(std::floor(static_cast<double>(g.memory_bytes) * fraction));
  for (const StageSpan& s : pp_stages(m, o.pp)) b.weights_bytes = std::max(b.weights_bytes, engine_weight_bytes(m, o, s));
  // The fraction applies to the memory free once the context and communicators exist.
  const int64_t before = g.memory_bytes - kCudaContextBytes - tp_comm_bytes(g, o);
  const int64_t static_pool = static_cast<int64_t>(std::floor(static_cast<double>(before) * fraction));
  b.reserve_bytes = b.usable_bytes - static_pool;
  b.activation_bytes = 0;  // lives in the (1 - mem_fraction_static) headroom
  b.kv_budget_bytes = std::max<int64_t>(0, static_pool - b.weights_bytes);
  char buf[96];
  std::snprintf(buf, sizeof buf, "SGLang mem_fraction_static=%.3f; activations use the rest", fraction);
  b.note = buf;
  return b;
}

std::string sglang_startup_lines(const ModelConfig& m, const ServingOptions& o, int64_t kv_tokens) {
  // memory_pool.py MHATokenToKVPool: "KV Cache is allocated. #tokens: N, K size: X GB,
  // V size: X GB" with GB = 2^30 bytes (vllm-project/vllm#21348's log: 367,404 tokens x
  // 94 layers x 1 head x 128 x 2 B = 8.23 "GB"); MLATokenToKVPool prints one "KV size".
  // Every TP rank prints its own line, prefixed with its rank.
  std::string out;
  char buf[160];
  for (const StageSpan& s : pp_stages(m, o.pp)) {
    const double gib = static_cast<double>(checked_mul(kv_tokens, kv_cell_bytes(m, o, s), "KV bytes")) /
                       static_cast<double>(kEngGiB);
    // With DP attention SGLang's TP group is the whole tp x dp world; each rank's prefix
    // names its DP rank and its rank in that world ("[DP1 TP1] KV Cache is allocated",
    // sgl-project/sglang#6017).
    for (int64_t r = 0; r < o.tp * o.dp; ++r) {
      if (m.is_mla())
        std::snprintf(buf, sizeof buf, "KV Cache is allocated. #tokens: %lld, KV size: %.2f GB",
                      static_cast<long long>(kv_tokens), gib);
      else
        std::snprintf(buf, sizeof buf, "KV Cache is allocated. #tokens: %lld, K size: %.2f GB, V size: %.2f GB",
                      static_cast<long long>(kv_tokens), gib / 2, gib / 2);
      if (o.dp > 1)
        out += "[DP" + std::to_string(r / o.tp) + " TP" + std::to_string(r) + "] ";
      else if (o.tp * o.pp > 1)
        out += "[TP" + std::to_string(r) + "] ";
      out += std::string(buf) + "\n";
    }
  }
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace kvplan::detail
