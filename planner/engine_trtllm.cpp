// TensorRT-LLM's memory accounting, simplified (tensorrt_llm/_torch/pyexecutor/_util.py
// KvCacheCreator / estimate_max_kv_cache_tokens; KvCacheConfig.free_gpu_memory_fraction,
// default 0.9):
//
//   free = total - CUDA context and communicators - weights - peak activation of a
//          warm-up step over max_num_tokens (8,192) tokens
//   KV pool = free x free_gpu_memory_fraction   (kvplan's --gpu-memory-utilization)
//
// The activation peak reuses the forward-pass model of engine_vllm.cpp with a lighter
// sampler (logits plus one fp32 copy). What the backend holds beyond the CUDA context,
// the weights and that peak is one fitted figure (kTrtRuntimeBytes, docs/engines.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "planner/checked.h"
#include "planner/engine_common.h"
#include "planner/engine_detail.h"

namespace kvplan::detail {

namespace {
constexpr int64_t kTrtDefaultMaxNumTokens = 8192;  // BuildConfig / LLM API max_num_tokens
// Fitted, not sourced: the memory the PyTorch backend's profiling run finds in use beyond
// kvplan's CUDA context, weights and activation peak (its kernel libraries, attention and
// GEMM workspaces, sampler state, the generation CUDA graphs it captures before
// estimating). The H100 Qwen3-0.6B start-up of 1.2.1 (tests/data/engine_logs/trtllm.yaml)
// leaves 1.01 GiB less free memory than the rest of the accounting; held out: 1.2.1 on an
// RTX 4070 SUPER at fractions 0.9 and 0.25 (1.06 GiB) and a July 2025 1.0 candidate on an
// H100 with 4,096 sequences and 23,552 tokens (1.43 GiB).
constexpr int64_t kTrtRuntimeBytes = int64_t{1} << 30;
}  // namespace

int64_t trtllm_default_max_num_tokens() { return kTrtDefaultMaxNumTokens; }

std::vector<std::string> trtllm_versions() {
  // "0": every 0.x release, served from a TensorRT engine (refused, see trtllm_budget);
  // "1.0": the PyTorch backend, the default from 1.0 on; "1.1" and "1.2": the same
  // KvCacheCreator estimate (1.1.0rc3 and 1.2.1 print the same "Peak memory during memory
  // usage profiling ... tmp kv_mem" line; start-ups in tests/data/engine_logs/trtllm.yaml).
  return {"0", "1.0", "1.1", "1.2"};
}

MemoryBudget trtllm_budget(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o) {
  if (o.engine_version == "0") {
    // Before 1.0 the executor runs a TensorRT engine built ahead of time (trtllm-build):
    // the pool is kv_cache_free_gpu_mem_fraction of the memory free once the engine and its
    // execution context are loaded ("Loaded engine size: N MiB", "[MemUsageChange] Allocated
    // X MiB for execution context memory"), buffers sized at build time by max_batch_size,
    // max_input_len, max_num_tokens and the plugins chosen. None of them is a serving setting
    // kvplan has, so the pool cannot be derived (NVIDIA/TensorRT-LLM#224, #1400).
    throw InputError("--engine", "trtllm@0.x",
                     "TensorRT-LLM 1.0 or later (PyTorch backend): the 0.x TensorRT engine backend's pool depends "
                     "on the engine's build-time activation buffers (execution context memory), which kvplan "
                     "cannot express",
                     "trtllm@0.x");
  }
  MemoryBudget b;
  b.gpu_bytes = g.memory_bytes;
  b.usable_bytes = g.memory_bytes;
  const int64_t act = dtype_bits(o.activation_dtype(m)) / 8;
  const int64_t tokens = o.max_num_batched_tokens.value_or(kTrtDefaultMaxNumTokens);
  const int64_t reqs = std::min(o.max_num_seqs, tokens);
  for (const StageSpan& s : pp_stages(m, o.pp)) {
    b.weights_bytes = std::max(b.weights_bytes, engine_weight_bytes(m, o, s));
    b.activation_bytes = std::max(b.activation_bytes, profile_run_peak(m, o, s, tokens, reqs, act + 4).peak());
  }
  const int64_t runtime = kCudaContextBytes + kTrtRuntimeBytes + tp_comm_bytes(o);
  const int64_t free_bytes = std::max<int64_t>(0, g.memory_bytes - runtime - b.weights_bytes - b.activation_bytes);
  b.kv_budget_bytes = static_cast<int64_t>(std::floor(static_cast<double>(free_bytes) * o.gpu_memory_utilization));
  // What is not the pool: the runtime plus the (1 - fraction) of free memory left over.
  b.reserve_bytes = runtime + (free_bytes - b.kv_budget_bytes);
  b.note = "TensorRT-LLM: free_gpu_memory_fraction of memory free after weights and activations";
  return b;
}

std::string trtllm_startup_lines(const ModelConfig& m, const ServingOptions& o, int64_t kv_tokens) {
  // kvCacheManager.cpp: "[MemUsageChange] Allocated X GiB for max tokens in paged KV cache
  // (N)." once per rank, N the tokens of the whole blocks allocated.
  const double gib = static_cast<double>(checked_mul(kv_tokens, kv_bytes_per_token_per_gpu(m, o), "KV bytes")) /
                     static_cast<double>(kEngGiB);
  char buf[160];
  std::snprintf(buf, sizeof buf, "[TensorRT-LLM][INFO] [MemUsageChange] Allocated %.2f GiB for max tokens in paged KV cache (%lld).",
                gib, static_cast<long long>(kv_tokens));
  std::string out;
  for (int64_t r = 0; r < o.tp * o.pp; ++r) out += (out.empty() ? "" : "\n") + std::string(buf);
  return out;
}

}  // namespace kvplan::detail
