// vLLM V1's memory accounting (vllm/v1/worker/gpu_worker.py determine_available_memory,
// vllm/utils/mem_utils.py memory_profiling, vllm/v1/core/kv_cache_utils.py get_num_blocks),
// the helpers the three engine models share (engine_common.h), and engine_max_kv_tokens.
//
//   requested = total memory (cudaMemGetInfo) x gpu_memory_utilization
//   available = requested - weights - torch peak increase of the profile run
//               - non-torch increase (cuBLAS/kernel modules, NCCL and all-reduce buffers)
//   blocks    = available // (page_size x layers on this GPU); tokens = blocks x block_size
// CUDA graphs are captured after the KV cache is sized and are not deducted (vLLM <= 0.19
// default, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0). docs/engines.md has the details.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "planner/checked.h"
#include "planner/engine_common.h"
#include "planner/engine_detail.h"

namespace kvplan::detail {

namespace {

constexpr int64_t kVocabPadding = 64;            // DEFAULT_VOCAB_PADDING_SIZE
constexpr int64_t kFusedMoeChunk = 32768;        // VLLM_FUSED_MOE_CHUNK_SIZE
constexpr int64_t kRouterLogitBytes = 4;         // router logits are fp32
constexpr int64_t kQuantGroup = 128;             // AWQ/GPTQ group size
// Non-torch memory that the profile run adds at TP 1 (cuBLAS workspaces, lazily loaded
// kernel modules): 0.25 GiB in every vLLM 0.19 H100 log we have (Llama, Qwen, Qwen-MoE).
constexpr int64_t kVllmNonTorchBytes = 256 * kEngMiB;
// Sampler bytes per logit beyond the logits themselves: an fp32 copy, fp32 softmax
// probabilities, fp32 exponential noise for the random sampler, and a one-byte mask of
// the top-k/top-p filter the dummy sampler run exercises (top_k = V-1, top_p = 0.9).
constexpr int64_t kVllmSamplerExtraBytes = 4 + 4 + 4 + 1;

int64_t act_bytes(const ModelConfig& m, const ServingOptions& o) {
  return dtype_bits(o.activation_dtype(m)) / 8;
}

int64_t padded_vocab(const ModelConfig& m) { return ceil_div(m.vocab_size, kVocabPadding) * kVocabPadding; }

int64_t kv_heads_rank(const ModelConfig& m, int64_t tp) {
  return m.num_kv_heads >= tp ? m.num_kv_heads / tp : 1;
}

int64_t expert_width(const ModelConfig& m) {
  return m.moe_intermediate_size > 0 ? m.moe_intermediate_size : m.intermediate_size;
}

int64_t mlp_mats(const ModelConfig& m) { return m.gated_mlp ? 3 : 2; }

// Bytes of `params` weights of linear layers under the weight quantization.
int64_t linear_bytes(int64_t params, const ServingOptions& o, int64_t act) {
  switch (o.quantization) {
    case WeightQuant::none: return checked_mul(params, act, "weights");
    case WeightQuant::fp8:
    case WeightQuant::int8: return params;  // per-tensor/per-channel scales: < 0.1 %
    case WeightQuant::awq:
    case WeightQuant::gptq:
      // packed int4 + per group of 128: an fp16 scale and a 4-bit zero point.
      return ceil_div(params, 2) + ceil_div(ceil_div(params, kQuantGroup) * 5, 2);
  }
  return checked_mul(params, act, "weights");
}

int64_t layer_weight_bytes(const ModelConfig& m, const ServingOptions& o, int64_t layer) {
  const int64_t tp = o.tp, h = m.hidden_size, act = act_bytes(m, o);
  int64_t linear = 0, plain = 0;  // quantizable matrices; 16-bit vectors and router
  if (m.is_mla()) {
    const int64_t nh = ceil_div(m.num_heads, tp);
    const int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
    if (m.q_lora_rank > 0) {
      linear += h * m.q_lora_rank + m.q_lora_rank * nh * qk;  // q_a (replicated), q_b
      plain += m.q_lora_rank;                                  // q_a_layernorm
    } else {
      linear += h * nh * qk;
    }
    linear += h * (m.kv_lora_rank + m.qk_rope_head_dim);          // kv_a (replicated)
    plain += m.kv_lora_rank;                                     // kv_a_layernorm
    linear += m.kv_lora_rank * nh * (m.qk_nope_head_dim + m.v_head_dim);  // kv_b
    linear += nh * m.v_head_dim * h;                             // o_proj
  } else {
    const int64_t q = m.q_dim() / tp, kv = kv_heads_rank(m, tp) * m.head_dim;
    linear += h * (q + 2 * kv) + q * h;
    if (m.qkv_bias || m.linear_bias) plain += q + 2 * kv;
    if (m.linear_bias) plain += h;
  }
  if (m.is_moe_layer(layer)) {
    const int64_t w = ceil_div(expert_width(m), tp);
    linear += (m.num_experts + m.num_shared_experts) * mlp_mats(m) * h * w;
    plain += m.num_experts * h;  // router gate: replicated, not quantized
  } else {
    const int64_t w = ceil_div(m.intermediate_size, tp);
    linear += mlp_mats(m) * h * w;
    if (m.linear_bias) plain += w + h;
  }
  const int64_t norms = m.model_type == "gemma2" ? 4 : (m.model_type == "phi" ? 1 : 2);
  plain += norms * (m.linear_bias ? 2 * h : h);
  return linear_bytes(linear, o, act) + checked_mul(plain, act, "weights");
}

}  // namespace

int64_t ActivationPeak::peak() const { return std::max(forward, kept + sampler); }

std::string with_thousands(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  const size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    out += digits[i];
    const size_t left = n - 1 - i;
    if (left > 0 && left % 3 == 0) out += ',';
  }
  return v < 0 ? "-" + out : out;
}

std::vector<StageSpan> pp_stages(const ModelConfig& m, int64_t pp) {
  const int64_t stages = std::max<int64_t>(1, pp);
  std::vector<int64_t> sizes(static_cast<size_t>(stages), m.num_layers / stages);
  const int64_t rem = m.num_layers % stages;
  for (int64_t i = 2; i < rem + 2; ++i) sizes[static_cast<size_t>(stages - i)] += 1;
  std::vector<StageSpan> out;
  int64_t first = 0;
  for (int64_t s = 0; s < stages; ++s) {
    StageSpan span;
    span.first = first;
    span.last = first + sizes[static_cast<size_t>(s)];
    span.first_stage = s == 0;
    span.last_stage = s == stages - 1;
    first = span.last;
    out.push_back(span);
  }
  return out;
}

int64_t engine_weight_bytes(const ModelConfig& m, const ServingOptions& o, const StageSpan& s) {
  const int64_t act = act_bytes(m, o), h = m.hidden_size;
  int64_t bytes = 0;
  if (s.layers() > 0) {
    // Layers of one kind weigh the same: count dense and MoE layers once each.
    const int64_t dense_end = m.is_moe() ? std::clamp(m.first_dense_layers, s.first, s.last) : s.last;
    const int64_t dense = dense_end - s.first, moe = s.last - dense_end;
    if (dense > 0) bytes += checked_mul(dense, layer_weight_bytes(m, o, s.first), "weights");
    if (moe > 0) bytes += checked_mul(moe, layer_weight_bytes(m, o, s.last - 1), "weights");
  }
  const int64_t vocab = checked_mul(ceil_div(padded_vocab(m), o.tp) * h, act, "weights");
  if (s.first_stage) bytes += vocab;
  if (s.last_stage) {
    if (!m.tie_word_embeddings || !s.first_stage) bytes += vocab;
    bytes += h * act;  // final norm
  }
  // Rotary cos/sin cache: max_position_embeddings x rotary dim, in the model dtype.
  const int64_t rot = m.is_mla() ? m.qk_rope_head_dim : m.head_dim;
  bytes += checked_mul(std::max<int64_t>(m.max_position_embeddings, 0) * rot, act, "weights");
  return bytes;
}

int64_t vllm_page_bytes_per_layer(const ModelConfig& m, const ServingOptions& o) {
  const int64_t elems = m.is_mla() ? m.kv_lora_rank + m.qk_rope_head_dim
                                   : 2 * kv_heads_rank(m, o.tp) * m.head_dim;
  const int64_t bits = checked_mul(checked_mul(elems, o.block_size, "KV page"),
                                   dtype_bits(o.kv_dtype(m)), "KV page");
  return ceil_div(bits, 8);
}

int64_t kv_cell_bytes(const ModelConfig& m, const ServingOptions& o, const StageSpan& s) {
  const int64_t elems = m.is_mla() ? m.kv_lora_rank + m.qk_rope_head_dim
                                   : 2 * kv_heads_rank(m, o.tp) * m.head_dim;
  const int64_t bits = checked_mul(checked_mul(elems, s.layers(), "KV cell"),
                                   dtype_bits(o.kv_dtype(m)), "KV cell");
  return ceil_div(bits, 8);
}

int64_t vllm_tokens_for_budget(const ModelConfig& m, const ServingOptions& o, const StageSpan& s,
                               int64_t kv_bytes) {
  const int64_t page = vllm_page_bytes_per_layer(m, o);
  if (page <= 0 || s.layers() <= 0 || kv_bytes <= 0) return 0;
  int64_t sliding = 0;
  if (!m.layer_window.empty())
    for (int64_t l = s.first; l < s.last; ++l)
      if (m.layer_window[static_cast<size_t>(l)] > 0) ++sliding;
  const int64_t full = s.layers() - sliding;
  if (sliding == 0 || full == 0) {
    // _get_kv_cache_config_uniform_type: num_blocks = available // page_size // num_layers
    const int64_t blocks = kv_bytes / page / s.layers();
    return checked_mul(blocks, o.block_size, "KV tokens");
  }
  // _get_kv_cache_config_uniform_page_size: layers split into groups of `group` layers
  // (the smaller type count); each of `group` pools holds num_blocks pages and the
  // logged size is num_blocks // number_of_groups x block_size.
  const int64_t group = std::min(sliding, full);
  const int64_t groups = ceil_div(sliding, group) + ceil_div(full, group);
  const int64_t blocks = kv_bytes / checked_mul(page, group, "KV page");
  return checked_mul(blocks / groups, o.block_size, "KV tokens");
}

int64_t engine_max_model_len(const ModelConfig& m, const ServingOptions& o) {
  if (o.max_model_len && *o.max_model_len > 0) return *o.max_model_len;
  const int64_t derived = derived_max_model_len(m);
  return derived > 0 ? derived : 8192;
}

int64_t vllm_default_batched_tokens(const GpuSpec& g, const ServingOptions& o, int64_t max_model_len) {
  std::string name = g.name;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool big = g.memory_bytes >= 70 * kEngGiB && name.find("a100") == std::string::npos;
  const int64_t base = big ? 8192 : 2048;
  return std::min(base, checked_mul(std::max<int64_t>(1, o.max_num_seqs), max_model_len, "tokens"));
}

ActivationPeak profile_run_peak(const ModelConfig& m, const ServingOptions& o, const StageSpan& s,
                                int64_t tokens, int64_t reqs, int64_t sampler_bytes_per_logit) {
  ActivationPeak p;
  const int64_t tp = o.tp, h = m.hidden_size, a = act_bytes(m, o), n = std::max<int64_t>(tokens, 1);
  const int64_t hidden = checked_mul(n * h, a, "activation");
  // Attention block: Q/K/V (or MLA's projections) and the attention output.
  int64_t attn_width = 0;
  if (m.is_mla()) {
    const int64_t nh = ceil_div(m.num_heads, tp);
    attn_width = nh * (m.qk_nope_head_dim + m.qk_rope_head_dim) + m.kv_lora_rank + m.qk_rope_head_dim +
                 nh * (m.qk_nope_head_dim + m.v_head_dim) + nh * m.v_head_dim;
  } else {
    const int64_t q = m.q_dim() / tp;
    attn_width = 2 * q + 2 * kv_heads_rank(m, tp) * m.head_dim;
  }
  int64_t transient = checked_mul(n * attn_width, a, "activation");
  // MLP block: gate/up output and the activated tensor (dense), or the shared experts,
  // the routed output and fp32 router logits (MoE).
  const int64_t dense_end = m.is_moe() ? std::clamp(m.first_dense_layers, s.first, s.last) : s.last;
  const bool has_dense = dense_end > s.first, has_moe = s.last > dense_end;
  if (has_dense)
    transient = std::max(transient, checked_mul(n * mlp_mats(m) * ceil_div(m.intermediate_size, tp), a, "activation"));
  if (has_moe) {
    const int64_t w = ceil_div(expert_width(m), tp);
    const int64_t shared = n * mlp_mats(m) * w * m.num_shared_experts * a;
    transient = std::max(transient, shared + hidden + n * m.num_experts * kRouterLogitBytes);
    // Fused-MoE workspaces (TritonExperts.workspace_shapes): M x top_k x (max(2I, h) + I).
    const int64_t chunk = std::min(n, kFusedMoeChunk);
    p.moe_workspace = checked_mul(chunk * m.experts_per_token * (std::max(2 * w, h) + w), a, "activation");
  }
  // Residual stream, its normed copy and the block's output stay live around each block.
  p.forward = 3 * hidden + transient + p.moe_workspace;
  p.kept = hidden + p.moe_workspace;
  if (s.last_stage) {
    const int64_t rows = std::max<int64_t>(1, std::min(reqs, n));
    p.sampler = checked_mul(rows * padded_vocab(m), sampler_bytes_per_logit, "activation");
  }
  return p;
}

std::string vllm_startup_lines(const ModelConfig& m, const ServingOptions& o, int64_t kv_tokens) {
  const int64_t len = engine_max_model_len(m, o);
  const int64_t bs = std::max<int64_t>(1, o.block_size);
  // get_max_concurrency_for_kv_cache_config: pool blocks / blocks one request needs.
  const int64_t pool_blocks = kv_tokens / bs;
  const double concurrency = static_cast<double>(pool_blocks) / static_cast<double>(ceil_div(len, bs));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2fx", concurrency);
  return "GPU KV cache size: " + with_thousands(kv_tokens) + " tokens\n" +
         "Maximum concurrency for " + with_thousands(len) + " tokens per request: " + buf;
}

namespace {

MemoryBudget vllm_stage_budget(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o,
                               const StageSpan& s) {
  MemoryBudget b;
  b.gpu_bytes = g.memory_bytes;
  b.usable_bytes = static_cast<int64_t>(std::floor(static_cast<double>(g.memory_bytes) * o.gpu_memory_utilization));
  b.weights_bytes = engine_weight_bytes(m, o, s);
  const int64_t len = engine_max_model_len(m, o);
  const int64_t tokens = o.max_num_batched_tokens.value_or(vllm_default_batched_tokens(g, o, len));
  const int64_t reqs = std::min(o.max_num_seqs, tokens);
  const ActivationPeak p = profile_run_peak(m, o, s, tokens, reqs, act_bytes(m, o) + kVllmSamplerExtraBytes);
  b.activation_bytes = p.peak();
  b.reserve_bytes = kVllmNonTorchBytes + tp_comm_bytes(o);
  b.kv_budget_bytes = std::max<int64_t>(0, b.usable_bytes - b.weights_bytes - b.activation_bytes - b.reserve_bytes);
  b.note = "vLLM V1 profile run (0.17+): CUDA graphs not deducted";
  return b;
}

}  // namespace

VllmStagePlan vllm_limiting_stage(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o) {
  VllmStagePlan best;
  bool first = true;
  for (const StageSpan& s : pp_stages(m, o.pp)) {
    const MemoryBudget b = vllm_stage_budget(m, g, o, s);
    const int64_t tokens = vllm_tokens_for_budget(m, o, s, b.kv_budget_bytes);
    // kv_cache_utils.unify_kv_cache_configs: every rank takes the smallest block count.
    if (first || tokens < best.tokens) best = VllmStagePlan{s, b, tokens};
    first = false;
  }
  return best;
}

MemoryBudget vllm_budget(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o) {
  return vllm_limiting_stage(m, g, o).budget;
}

int64_t engine_max_kv_tokens(const ModelConfig& m, const ServingOptions& o, const MemoryBudget& b) {
  if (b.kv_budget_bytes <= 0) return 0;
  switch (o.engine) {
    case Engine::vllm: {
      StageSpan s = pp_stages(m, 1).front();
      if (o.pp > 1) {
        // The budget belongs to the limiting stage; find it again (the GPU's name only
        // changes vLLM's default batch size on A100s, which this ignores).
        GpuSpec g;
        g.memory_bytes = b.gpu_bytes;
        s = vllm_limiting_stage(m, g, o).stage;
      }
      return vllm_tokens_for_budget(m, o, s, b.kv_budget_bytes);
    }
    case Engine::sglang: {
      // model_runner.profile_max_num_token: rest_memory // cell_size, then rounded down
      // to whole pages (SGLang's page_size; kvplan's --block-size).
      int64_t cell = 0;
      for (const StageSpan& s : pp_stages(m, o.pp)) cell = std::max(cell, kv_cell_bytes(m, o, s));
      if (cell <= 0) return 0;
      const int64_t page = std::max<int64_t>(1, o.block_size);
      return b.kv_budget_bytes / cell / page * page;
    }
    case Engine::ideal:
    case Engine::trtllm: break;
  }
  const int64_t block = kv_block_bytes_per_gpu(m, o);
  if (block <= 0) return 0;
  return checked_mul(b.kv_budget_bytes / block, o.block_size, "KV tokens");
}

}  // namespace kvplan::detail
