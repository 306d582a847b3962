// The memory budget: how one GPU's memory is split between weights, activations, the
// runtime and the KV pool, and the capacity that pool gives.
//
// --engine ideal (the default) is the engine-neutral model:
//   usable     = memory as CUDA reports it x gpu_memory_utilization (default 0.90, vLLM's)
//   activation = peak of one forward step over max_num_batched_tokens tokens (default
//                8,192) and of the sampler over max_num_seqs rows of fp32 logits
//   reserve    = the runtime's own memory (engine_common.h kIdealContextReserveBytes,
//                kIdealNcclReserveBytes), or what a calibration file measured
//   KV pool    = usable - weights - activation - reserve, in whole blocks.
// vLLM, SGLang and TensorRT-LLM follow their own code (engine_*.cpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "planner/checked.h"
#include "planner/engine_common.h"
#include "planner/engine_detail.h"
#include "planner/lora.h"
#include "planner/speculative.h"
#include "planner/units.h"

namespace kvplan {

namespace {

constexpr int64_t kDefaultBatchedTokens = 8192;
constexpr int64_t kLogitBytes = 4;  // samplers work on fp32 logits

}  // namespace

namespace detail {

//! Live activation bytes per token of one layer's forward pass on one GPU: the residual
//! stream and its normed copy, Q/K/V, the attention output, and the MLP's gate, up and
//! activated tensors (MoE: each token's top-k expert rows).
int64_t activation_bytes_per_token(const ModelConfig& m, const ServingOptions& o) {
  const int64_t act = dtype_bits(o.activation_dtype(m)) / 8;
  const int64_t tp = o.tp;
  const int64_t kv = m.is_mla() ? m.kv_lora_rank + m.qk_rope_head_dim : 2 * m.num_kv_heads * m.head_dim;
  int64_t width = m.intermediate_size;
  if (m.is_moe()) {
    const int64_t expert = m.moe_intermediate_size > 0 ? m.moe_intermediate_size : m.intermediate_size;
    width = std::max(width, expert * (m.experts_per_token + m.num_shared_experts));
  }
  const int64_t mlp = (m.gated_mlp ? 3 : 2) * width / tp;
  return act * (2 * m.hidden_size + (m.q_dim() + kv) / tp + m.q_dim() / tp + mlp);
}

MemoryBudget ideal_budget(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o) {
  MemoryBudget b;
  b.gpu_bytes = g.memory_bytes;
  b.usable_bytes = static_cast<int64_t>(std::floor(static_cast<double>(g.memory_bytes) * o.gpu_memory_utilization));
  b.weights_bytes = weight_bytes_per_gpu(m, o);
  const int64_t tokens = o.max_num_batched_tokens.value_or(kDefaultBatchedTokens);
  const int64_t layer_peak = checked_mul(tokens, activation_bytes_per_token(m, o), "activation");
  const int64_t logits = checked_mul(o.max_num_seqs, ceil_div(m.vocab_size, o.tp) * kLogitBytes, "activation");
  b.activation_bytes = std::max(layer_peak, logits);
  b.reserve_bytes = o.calibration.runtime_reserve_bytes.value_or(
      kIdealContextReserveBytes + (o.tp * o.pp * o.dp > 1 ? kIdealNcclReserveBytes : 0));
  return b;
}

}  // namespace detail

MemoryBudget memory_budget(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o) {
  // SGLang and TensorRT-LLM size their pools from free memory they measure at start;
  // kvplan models that for memory of the GPU's own only.
  if (g.unified_free_at_start_bytes && (o.engine == Engine::sglang || o.engine == Engine::trtllm))
    throw InputError("GPU '" + g.name + "'", "unified_memory",
                     "an engine whose start-up on memory shared with the CPU kvplan models (vllm or ideal)",
                     std::string(to_string(o.engine)));
  MemoryBudget b;
  switch (o.engine) {
    case Engine::ideal: b = detail::ideal_budget(m, g, o); break;
    case Engine::vllm: b = detail::vllm_budget(m, g, o); break;
    case Engine::sglang: b = detail::sglang_budget(m, g, o); break;
    case Engine::trtllm: b = detail::trtllm_budget(m, g, o); break;
  }
  // Vision / audio towers load beside the language model on every engine; their bytes
  // are reported on their own line and leave the KV pool.
  b.tower_bytes = tower_bytes_per_gpu(m, o);
  detail::apply_spec_memory(m, o, b);  // a speculative draft's weights (planner/speculative.h)
  // LoRA slots: vLLM's GPUModelRunner.load_model wraps the model (load_lora_model) before
  // the memory profile, so the slots' buffers count as model memory and leave the KV
  // budget (planner/lora.h).
  b.lora_bytes = lora_bytes_per_gpu(m, o);
  if (o.engine != Engine::ideal && b.kv_budget_bytes > 0)
    b.kv_budget_bytes = std::max<int64_t>(0, b.kv_budget_bytes - b.tower_bytes - b.lora_bytes);
  if (o.engine == Engine::ideal || b.kv_budget_bytes == 0) {
    // Saturating: what is used may exceed 2^63 for absurd models; then nothing is left.
    int64_t used = 0;
    const bool too_much = __builtin_add_overflow(b.weights_bytes, b.activation_bytes, &used) ||
                          __builtin_add_overflow(used, b.reserve_bytes, &used) ||
                    __builtin_add_overflow(used, b.tower_bytes, &used) ||
                    __builtin_add_overflow(used, b.lora_bytes, &used);
    b.kv_budget_bytes = too_much ? 0 : std::max<int64_t>(0, b.usable_bytes - used);
  }
  if (g.unified_free_at_start_bytes && b.usable_bytes > *g.unified_free_at_start_bytes) {
    // Memory shared with the CPU (GB10): the OS, its page cache and other processes hold
    // part of the pool, so free memory at start is below the total. vLLM refuses to start
    // when it is below total x gpu_memory_utilization ("Free memory on device (X/Y GiB)
    // on startup is less than desired GPU memory utilization (U, Z GiB)", the worker's
    // init memory snapshot); the engine-neutral model can no more use what is not free.
    const int64_t free = *g.unified_free_at_start_bytes;
    const auto gib = [](int64_t bytes) {  // as vLLM's message prints them
      char buf[48];
      std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / static_cast<double>(detail::kEngGiB));
      return std::string(buf);
    };
    char most[16];
    std::snprintf(most, sizeof most, "%.3f",
                  std::floor(static_cast<double>(free) / static_cast<double>(g.memory_bytes) * 1000) / 1000);
    b.kv_budget_bytes = 0;
    b.note = "free memory at start (" + gib(free) + " of " + gib(g.memory_bytes) +
             ", a pool the CPU shares) is below the " + gib(b.usable_bytes) +
             " gpu_memory_utilization asks for: the engine does not start; lower --gpu-memory-utilization to at most " +
             most;
  } else if (b.weights_bytes > b.usable_bytes) {
    b.kv_budget_bytes = 0;
    b.note = "weights (" + gb(b.weights_bytes, 1) + " per GPU) exceed usable memory (" +
             gb(b.usable_bytes, 1) + "): raise --tp/--pp or quantize the weights";
  } else if (b.kv_budget_bytes == 0 && b.note.empty()) {
    b.note = "no memory left for the KV cache after weights, activations and reserve";
  }
  return b;
}

ServingOptions with_engine_defaults(const GpuSpec& g, ServingOptions o) {
  if (o.engine == Engine::vllm && !o.max_num_seqs_given) {
    // vLLM's EngineArgs default (both entry points): 1024 sequences on the GPUs the
    // release gives larger batches (detail::BatchTier), 256 elsewhere and in V0 (a V1
    // release falling back to V0 takes V0's defaults: vllm_accounting_release).
    o.max_num_seqs = detail::vllm_large_batch_defaults(detail::vllm_accounting_release(o, g), g) ? 1024 : 256;
  }
  return o;
}

EngineBatchDefaults engine_batch_defaults(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o) {
  EngineBatchDefaults d;
  switch (o.engine) {
    case Engine::vllm: return detail::vllm_batch_defaults(m, g, o);
    case Engine::sglang:
      // Chunked prefill is on by default (chunked_prefill_size is set unless -1).
      d.chunked_prefill = true;
      d.chunked_tokens = detail::sglang_default_chunked_prefill_size(g, o);
      break;
    case Engine::trtllm: d.chunked_tokens = detail::trtllm_default_max_num_tokens(); break;
    case Engine::ideal: break;
  }
  return d;
}

StreamDelivery stream_delivery(const ServingOptions& o) {
  StreamDelivery d;
  if (!o.stream_interval) return d;
  const int64_t n = *o.stream_interval;
  if (n < 1) throw InputError("command line", "--stream-interval", "an integer >= 1 (tokens per streamed chunk)", std::to_string(n));
  if (n == 1) return d;
  const std::string got = std::to_string(n);
  const auto refuse = [&](const std::string& why) { throw InputError("command line", "--stream-interval", why, got); };
  if (o.spec)
    refuse("1 with speculative decoding: a step then adds several tokens, and the engines' rules (a count of "
           "tokens modulo N) are not modelled over such jumps");
  switch (o.engine) {
    case Engine::ideal:
      refuse("1 with --engine ideal (it has no API server whose streaming is modelled: use --engine vllm@0.12 or "
             "later, sglang@0.5 or trtllm@1.0 or later)");
      break;
    case Engine::vllm:
      // vllm/v1/engine/output_processor.py RequestState.make_request_output: sends when
      // the request finished, for its first token, or once stream_interval tokens wait
      // since the last send (total - sent_tokens_offset >= stream_interval): one token a
      // step makes that tokens 1, N + 1, 2N + 1, ...
      if (!detail::vllm_takes_stream_interval(o))
        refuse("1 before vLLM 0.12 (--stream-interval came with vllm-project/vllm PR #27869, November 2025)");
      break;
    case Engine::sglang:
      // python/sglang/srt/managers/scheduler_output_processor_mixin.py
      // stream_output_generation: a streamed request is sent when it finished or when
      // len(output_ids) % stream_interval == 1 (stream_interval > 1): tokens 1, N + 1, ...
      // Older code tested len(output_ids) % stream_interval == 0, so the first chunk waited
      // for the N-th token; kvplan's "0.4" stands for those releases.
      if (o.engine_version == "0.4")
        refuse("1 with SGLang 0.4 (its first chunk waits for the N-th token, len(output_ids) % stream_interval == 0, "
               "which kvplan does not model): use sglang@0.5");
      break;
    case Engine::trtllm:
      // tensorrt_llm/_torch/pyexecutor/py_executor.py _handle_responses: a response when
      // py_decoding_iter == 1 (the context phase's token, at once since NVIDIA/TensorRT-LLM
      // PR #5836), when the request finished, or when py_decoding_iter % stream_interval
      // == 0: tokens 1, N, 2N, ... The PyTorch backend's option (PR #5284, 1.0).
      if (o.engine_version == "0") refuse("1 with TensorRT-LLM 0.x (stream_interval is the PyTorch backend's, 1.0 on)");
      d.offset = 0;
      break;
  }
  d.interval = n;
  return d;
}

std::vector<std::string> engine_versions(Engine e) {
  switch (e) {
    case Engine::vllm: return detail::vllm_versions();
    case Engine::sglang: return detail::sglang_versions();
    case Engine::trtllm: return detail::trtllm_versions();
    case Engine::ideal: break;
  }
  return {};
}

std::string match_engine_version(Engine e, const std::string& version) {
  // "0.10.2" belongs to "0.10": releases are modelled per major.minor.
  for (const std::string& v : engine_versions(e))
    if (version == v || version.rfind(v + ".", 0) == 0) return v;
  return {};
}

std::string engine_startup_lines(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o,
                                 const MemoryBudget& b, const Capacity& c) {
  if (!o.kv_cache) return {};
  const int64_t rank_tokens = c.max_kv_tokens / o.dp;  // each DP rank prints its own pool
  switch (o.engine) {
    case Engine::vllm: return detail::vllm_rank_lines(m, g, o, b) + detail::vllm_startup_lines(m, g, o, rank_tokens);
    case Engine::sglang: return detail::sglang_startup_lines(m, o, rank_tokens);
    case Engine::trtllm: return detail::trtllm_startup_lines(m, o, rank_tokens);
    case Engine::ideal: break;
  }
  return {};
}

Capacity capacity(const ModelConfig& m, const ServingOptions& o, const MemoryBudget& b,
                  int64_t context_tokens) {
  Capacity c;
  if (b.weights_bytes > b.usable_bytes) {
    c.limited_by = "weights do not fit";
    return c;
  }
  if (!o.kv_cache) {
    // Naive recompute keeps no cache; each request re-runs its whole context, whose
    // activations must fit instead.
    const int64_t per_request = detail::checked_mul(
        context_tokens, detail::activation_bytes_per_token(m, o), "activation");
    c.max_concurrent_requests = per_request > 0 ? b.kv_budget_bytes / per_request : 0;
    c.limited_by = "activation memory (no KV cache)";
    return c;
  }
  const int64_t block = kv_block_bytes_per_gpu(m, o);
  // A speculative draft's KV layers share the pool (planner/speculative.h).
  MemoryBudget target = b;
  target.kv_budget_bytes = detail::target_kv_budget(m, o, b.kv_budget_bytes);
  c.max_kv_tokens = detail::engine_max_kv_tokens(m, o, target);
  // Engines count their pool their own way (vLLM: pages per layer group; SGLang: token
  // cells); requests then hold whole blocks of that pool.
  c.num_blocks = o.engine == Engine::ideal ? (block > 0 ? target.kv_budget_bytes / block : 0)
                                           : c.max_kv_tokens / kv_block_tokens(o);
  const int64_t per_request = kv_blocks_per_request(m, o, context_tokens);
  c.max_concurrent_requests = per_request > 0 ? c.num_blocks / per_request : 0;
  c.limited_by = c.max_concurrent_requests == 0 ? "KV memory: not one request fits" : "KV memory";
  // Data-parallel attention: every DP rank holds its own requests in its own pool (vLLM
  // runs one engine core per DP rank), so the replica holds dp pools; a request lives in
  // one of them, never split.
  c.max_kv_tokens = detail::checked_mul(c.max_kv_tokens, o.dp, "KV tokens");
  c.max_concurrent_requests = detail::checked_mul(c.max_concurrent_requests, o.dp, "requests");
  return c;
}

SharedPrefixCapacity shared_prefix_capacity(const ModelConfig& m, const ServingOptions& o, const Capacity& c,
                                            int64_t context_tokens, int64_t prefix_tokens) {
  constexpr const char* kKey = "--shared-prefix-tokens";
  if (prefix_tokens < 1 || prefix_tokens >= context_tokens)
    throw InputError("command line", kKey,
                     "a prefix of at least 1 token and shorter than --context (" + std::to_string(context_tokens) + ")",
                     std::to_string(prefix_tokens));
  if (!o.enable_prefix_caching.value_or(true) || !o.kv_cache)
    throw InputError("command line", kKey, "prefix caching on (a shared prefix is held once only when it is cached)",
                     "--enable-prefix-caching off");
  if (std::any_of(m.layer_window.begin(), m.layer_window.end(), [](int64_t w) { return w > 0; }) || m.has_state_layers())
    throw InputError("command line", kKey,
                     "a model whose layers all keep full attention (" + m.name +
                         " has sliding-window or state layers, whose caches do not hold a prefix whole: not modelled)",
                     std::to_string(prefix_tokens));
  SharedPrefixCapacity s;
  s.prefix_tokens = prefix_tokens;
  s.shared_blocks = prefix_tokens / kv_block_tokens(o);
  s.blocks_per_request = kv_blocks_per_request(m, o, context_tokens) - s.shared_blocks;
  const int64_t free_blocks = c.num_blocks - s.shared_blocks;
  s.max_concurrent_requests = free_blocks > 0 && s.blocks_per_request > 0 ? free_blocks / s.blocks_per_request : 0;
  return s;
}

}  // namespace kvplan
