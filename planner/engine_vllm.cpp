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
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "planner/checked.h"
#include "planner/engine_common.h"
#include "planner/engine_detail.h"

namespace kvplan::detail {

namespace {

constexpr int64_t kVocabPadding = 64;            // DEFAULT_VOCAB_PADDING_SIZE
constexpr int64_t kFusedMoeChunk = 32768;        // VLLM_FUSED_MOE_CHUNK_SIZE
constexpr int64_t kRouterLogitBytes = 4;         // router logits are fp32
// Non-torch memory that the profile run adds at TP 1 (cuBLAS workspaces, lazily loaded
// kernel modules): 0.25 GiB in every vLLM 0.19 H100 log we have (Llama, Qwen, Qwen-MoE).
constexpr int64_t kVllmNonTorchBytes = 256 * kEngMiB;

// The releases kvplan models, oldest first (docs/engines.md "Versions" has the evidence
// for every cell). Minor releases between two measured ones take the code path both
// share: V0 up to 0.7, V1's heavier dummy sampler up to 0.16, the lighter one from 0.17.
//  - 0.4 (V0): Worker.determine_num_available_blocks takes peak = free memory at init
//    (after the CUDA context) minus free memory after profile_run, and profile_run samples
//    max_num_seqs dummy sequences with SamplingParams(top_p=0.99, top_k=vocab-1)
//    (vllm/worker/model_runner.py): the sampler's top-k/top-p sorts the whole vocabulary,
//    the same code V1 kept up to 0.16, hence kSamplerExtraHeavy. No FlashInfer sampler
//    existed yet. Non-torch: 0.7.0's 0.16 GiB, measured from the same post-context
//    baseline. Checked on vllm-project/vllm PR #4454's A6000 block counts (main of
//    2024-04-29). 0.5 is not modelled: no 0.5 log was found.
//  - v0 (0.6, 0.7): the same V0 profile_run as 0.4 (max_num_seqs dummy sequences sampled
//    with top_k = vocab-1, top_p = 0.99 through the torch top-k/top-p sort), hence
//    kSamplerExtraHeavy: 0.6.4 on an MI300X (Llama-3.1-70B fp8, 4,096 sequences) logs
//    86.79 - 67.70 = 19.09 GiB of profile peak = 4,096 x 128,256 x 38 B + 0.5 GiB of hidden
//    states, and 0.6.4 on an RTX A6000 (Qwen2.5-32B-AWQ) 0.65 GiB above the forward pass
//    (tests/data/engine_logs/vllm.yaml). The RTX 3090 logs of 0.6.4 (vllm-project/vllm#10517)
//    at 20,000 and 29,000 tokens are forward-bound either way; its 35,000-token start-up
//    (chunked prefill, 512 tokens) shows no sampler peak: an install with FlashInfer's
//    sampler, which kvplan is not told of (docs/engines.md).
//  - sampler_extra_bytes: 0.15/0.16 log 5.64 GiB of activation for Qwen3-14B at 1,024
//    sequences, 0.17 logs 2.23 GiB (llm-d-planner accuracy_report.md, "Part 2: vLLM
//    Version Sensitivity"): 38 B per logit in all up to 0.16, 15 B from 0.17. Up to 0.16
//    the dummy run's top-k/top-p (top_k = V-1, top_p = 0.9) sorts the whole vocabulary
//    (vllm/v1/sample/ops/topk_topp_sampler.py:167-206 in 0.8.4: fp32 sorted values, int64
//    indices, probabilities and cumsum, two masks, the scattered result).
//  - non_torch_bytes: 0.35 GiB in 0.6.4 (#10517, RTX 3090), 0.16 GiB in 0.7.0
//    (vllm-project/vllm PR #12126, H100), 0.13 GiB in 0.15-0.17 and 0.25 GiB from 0.18
//    (accuracy_report.md Part 2, H100). 0.8's Worker.determine_available_memory
//    (vllm/v1/worker/gpu_worker.py:154-185 in 0.8.4) subtracts every byte allocated
//    outside torch, the CUDA context included; later releases measure from a snapshot
//    taken after it. No 0.8 log was found: its row adds the context to the 0.13 GiB.
//  - concurrency_per_token: PR #13596 (0.8.0) printed num_tokens / max_model_len; 0.10's
//    hybrid allocator (get_max_concurrency_for_kv_cache_config) prints blocks over the
//    blocks one request needs.
//  - blocks_label: 0.6.4 "# GPU blocks" (#10517), 0.7 executor_base.py "# cuda blocks"
//    (vllm-project/vllm PR #12126 and the 0.7-0.8 V0 logs cited in docs/engines.md).
//  - batch_tier: 0.8.4's EngineArgs._set_default_args_v1 (vllm/engine/arg_utils.py:
//    1669-1682 in a snapshot of 0.8.4) gives GPUs whose name contains "h100" or "h200"
//    16384 (LLM) / 8192 (server) tokens and 1024 sequences, others 8192 / 2048 and 256;
//    PR #17885 (0.9) replaced the name test by >= 70 GiB and not an A100
//    (get_batch_defaults; 0.19 logs it at engine/arg_utils.py:2232 and :2242).
// 38 B per logit logged with bf16 logits: the 15 B below plus the sort's int64 indices
// (8), sorted fp32 values (4), the scattered fp32 result (4), masks and cumsum
// buffers; the total is the measured one, the split an account of where it goes.
constexpr int64_t kSamplerExtraHeavy = 38 - 2;
// 0.17+: beyond the logits, an fp32 copy, fp32 softmax probabilities, fp32 exponential
// noise for the random sampler, and a one-byte mask of the top-k/top-p filter the dummy
// sampler run exercises (top_k = V-1, top_p = 0.9).
constexpr int64_t kSamplerExtraLight = 4 + 4 + 4 + 1;
constexpr std::array<VllmRelease, 15> kVllmReleases{{
    {"0.4", true, kSamplerExtraHeavy, 164 * kEngMiB, false, "# GPU blocks", BatchTier::none, 512},
    {"0.6", true, kSamplerExtraHeavy, 352 * kEngMiB, false, "# GPU blocks", BatchTier::none, 512},
    {"0.7", true, kSamplerExtraHeavy, 164 * kEngMiB, false, "# cuda blocks", BatchTier::none, 2048},
    {"0.8", false, kSamplerExtraHeavy, kCudaContextBytes + 133 * kEngMiB, true, "", BatchTier::h100_h200_names, 0},
    {"0.9", false, kSamplerExtraHeavy, 133 * kEngMiB, true, "", BatchTier::big_memory, 0},
    {"0.10", false, kSamplerExtraHeavy, 133 * kEngMiB, false, "", BatchTier::big_memory, 0},
    {"0.11", false, kSamplerExtraHeavy, 133 * kEngMiB, false, "", BatchTier::big_memory, 0},
    {"0.12", false, kSamplerExtraHeavy, 133 * kEngMiB, false, "", BatchTier::big_memory, 0},
    {"0.13", false, kSamplerExtraHeavy, 133 * kEngMiB, false, "", BatchTier::big_memory, 0},
    {"0.14", false, kSamplerExtraHeavy, 133 * kEngMiB, false, "", BatchTier::big_memory, 0},
    {"0.15", false, kSamplerExtraHeavy, 133 * kEngMiB, false, "", BatchTier::big_memory, 0},
    {"0.16", false, kSamplerExtraHeavy, 133 * kEngMiB, false, "", BatchTier::big_memory, 0},
    {"0.17", false, kSamplerExtraLight, 133 * kEngMiB, false, "", BatchTier::big_memory, 0},
    {"0.18", false, kSamplerExtraLight, kVllmNonTorchBytes, false, "", BatchTier::big_memory, 0},
    {"0.19", false, kSamplerExtraLight, kVllmNonTorchBytes, false, "", BatchTier::big_memory, 0},
}};
// V0 SchedulerConfig (vllm/config.py:993-997 in 0.6.1.post2): max_num_batched_tokens =
// the release's v0_chunked_tokens with chunked prefill, else max(max_model_len, 2048);
// EngineArgs (arg_utils.py:894-916 there) switch chunked prefill on when max_model_len >
// 32768, except for sliding-window models (and spec decode, LoRA, multimodal). With chunked
// prefill 0.6.4 takes 512 tokens (its "Chunked prefill is enabled with
// max_num_batched_tokens=512"; the 35,000-token log of #10517 profiles 0.06 GiB), 0.6.6
// and 0.7 take 2048 (SchedulerConfig.__post_init__ of 0.6.6.post1: "This value is chosen
// to have a balance between ITL and TTFT", max_num_batched_tokens = 2048).
constexpr int64_t kV0MinBatchedTokens = 2048;
constexpr int64_t kV0LongContext = 32768;
// swap_space (4 GiB): the CPU blocks V0 logs beside the GPU blocks.
constexpr int64_t kV0SwapBytes = 4 * kEngGiB;

// The block sizes vLLM's `--block-size` takes: CacheConfig's `BlockSize = Literal[1, 8, 16,
// 32, 64, 128, 256]` (vllm-project/vllm@c1d86421174a87056edc90a41dc9942391509e84:
// vllm/config/cache.py), which EngineArgs turns into the argparse choices, so `vllm serve
// --block-size 24` stops with "invalid choice". The 0.9-era vllm/config.py has the same
// literal without 256; kvplan takes the newer list for every release rather than refuse a
// value a modelled release accepts.
constexpr std::array<int64_t, 7> kVllmBlockSizes{1, 8, 16, 32, 64, 128, 256};

// The first release scheduling asynchronously by default (vllm_batch_defaults).
constexpr std::string_view kVllmAsyncDefaultRelease = "0.14";
// The first release with --stream-interval: vllm-project/vllm PR #27869 ("Support stream
// interval for reducing host overhead", merged November 2025, after 0.11.0 and before
// 0.12.0 of December 2025; 0.11.1 may carry it, but "0.11" stands for both).
constexpr std::string_view kVllmStreamIntervalRelease = "0.12";

// Whether release `r` comes before release `version` in kVllmReleases (oldest first).
bool release_before(const VllmRelease& r, std::string_view version) {
  for (const VllmRelease& x : kVllmReleases) {
    if (x.version == version) return false;
    if (&x == &r) return true;
  }
  return false;
}

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

// Bytes of `params` weights of one part of a layer: the weight quantization in force (the
// checkpoint's own, or --quantization's: planner/quant.cpp), or 16-bit where the
// checkpoint's ignore list keeps that part; one scale row per h weights.
int64_t linear_bytes(const ModelConfig& m, const QuantSpec& q, WeightPart part, int64_t layer, int64_t params,
                     int64_t act) {
  return quantized_bytes(q.for_part(part, layer), params, ceil_div(params, m.hidden_size), act);
}

int64_t layer_weight_bytes(const ModelConfig& m, const ServingOptions& o, int64_t layer) {
  const int64_t tp = o.tp, h = m.hidden_size, act = act_bytes(m, o);
  const QuantSpec q = weight_quant_of(m, o);
  int64_t attn = 0, plain = 0;  // attention matrices; 16-bit vectors and router
  const bool mixer = m.mixer(layer) != Mixer::none, ffn = m.ffn(layer) != Ffn::none;
  // A no-op attention block (Nemotron-NAS) has no module and no weights.
  if (mixer && m.is_mla()) {
    const int64_t nh = ceil_div(m.num_heads, tp);
    const int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
    if (m.q_lora_rank > 0) {
      attn += h * m.q_lora_rank + m.q_lora_rank * nh * qk;  // q_a (replicated), q_b
      plain += m.q_lora_rank;                                // q_a_layernorm
    } else {
      attn += h * nh * qk;
    }
    attn += h * (m.kv_lora_rank + m.qk_rope_head_dim);          // kv_a (replicated)
    plain += m.kv_lora_rank;                                   // kv_a_layernorm
    attn += m.kv_lora_rank * nh * (m.qk_nope_head_dim + m.v_head_dim);  // kv_b
    attn += nh * m.v_head_dim * h;                             // o_proj
  } else if (mixer) {
    const int64_t qd = m.q_dim() / tp, kv = kv_heads_rank(m, tp) * m.head_dim;
    attn += h * (qd + 2 * kv) + qd * h;
    if (m.qkv_bias || m.linear_bias) plain += qd + 2 * kv;
    if (m.linear_bias) plain += h;
  }
  int64_t bytes = linear_bytes(m, q, WeightPart::attention, layer, attn, act);
  if (m.is_moe_layer(layer)) {
    // Routed experts: num_experts / ep per GPU, each split over tp x dp / ep GPUs
    // (FusedMoEParallelConfig.make: without EP the experts shard over tp x dp; with it each
    // GPU owns num_experts / (tp x dp) whole ones). Shared experts are a TP-split MLP of
    // the attention TP group, replicated over DP ranks (DeepseekV2MoE.shared_experts).
    const int64_t w = ceil_div(expert_width(m), tp);
    const int64_t routed_w = ceil_div(expert_width(m), tp * o.dp / o.ep);
    bytes += linear_bytes(m, q, WeightPart::experts, layer,
                          (m.num_experts + o.redundant_experts) / o.ep * mlp_mats(m) * h * routed_w, act);
    bytes += linear_bytes(m, q, WeightPart::shared_experts, layer, m.num_shared_experts * mlp_mats(m) * h * w, act);
    plain += m.num_experts * h;  // router gate: replicated, not quantized
  } else if (ffn) {
    const int64_t w = ceil_div(m.intermediate(layer), tp);
    bytes += linear_bytes(m, q, WeightPart::dense_mlp, layer, mlp_mats(m) * h * w, act);
    if (m.linear_bias) plain += w + h;
  }
  const int64_t norms = m.block_norms ? (mixer ? 1 : 0) + (ffn ? 1 : 0) : m.norms_per_layer;
  plain += norms * (m.linear_bias ? 2 * h : h);
  return bytes + checked_mul(plain, act, "weights");
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

int64_t kv_layers(const ModelConfig& m, const StageSpan& s) {
  int64_t n = 0;
  for (int64_t l = s.first; l < s.last; ++l) n += m.caches_kv(l) ? 1 : 0;
  return n;
}

int64_t engine_weight_bytes(const ModelConfig& m, const ServingOptions& o, const StageSpan& s) {
  const int64_t act = act_bytes(m, o), h = m.hidden_size;
  int64_t bytes = 0;
  // Layer by layer: an ignore list may keep one layer's parts 16-bit (QuantSpec::for_part).
  for (int64_t l = s.first; l < s.last; ++l) bytes += layer_weight_bytes(m, o, l);
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
  const int64_t bits = checked_mul(checked_mul(elems, kv_layers(m, s), "KV cell"),
                                   dtype_bits(o.kv_dtype(m)), "KV cell");
  return ceil_div(bits, 8);
}

int64_t vllm_tokens_for_budget(const ModelConfig& m, const ServingOptions& o, const StageSpan& s,
                               int64_t kv_bytes) {
  const int64_t page = vllm_page_bytes_per_layer(m, o);
  const int64_t layers = kv_layers(m, s);
  if (page <= 0 || layers <= 0 || kv_bytes <= 0) return 0;
  int64_t sliding = 0;
  if (!m.layer_window.empty())
    for (int64_t l = s.first; l < s.last; ++l)
      if (m.caches_kv(l) && m.layer_window[static_cast<size_t>(l)] > 0) ++sliding;
  const int64_t full = layers - sliding;
  if (sliding == 0 || full == 0) {
    // _get_kv_cache_config_uniform_type: num_blocks = available // page_size // num_layers
    // (the layers with an Attention module: a no-op layer registers no KV cache spec)
    const int64_t blocks = kv_bytes / page / layers;
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

bool vllm_big_gpu(const GpuSpec& g) {
  std::string name = g.name;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return g.memory_bytes >= 70 * kEngGiB && name.find("a100") == std::string::npos;
}

bool vllm_large_batch_defaults(const VllmRelease& r, const GpuSpec& g) {
  switch (r.batch_tier) {
    case BatchTier::none: return false;
    case BatchTier::h100_h200_names: {
      std::string name = g.name;
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return name.find("h100") != std::string::npos || name.find("h200") != std::string::npos;
    }
    case BatchTier::big_memory: return vllm_big_gpu(g);
  }
  return false;
}

int64_t vllm_default_batched_tokens(const GpuSpec& g, const ServingOptions& o, int64_t max_model_len) {
  const bool big = vllm_large_batch_defaults(vllm_accounting_release(o, g), g);
  const int64_t base = o.offline_entry ? (big ? 16384 : 8192) : (big ? 8192 : 2048);
  return std::min(base, checked_mul(std::max<int64_t>(1, o.max_num_seqs), max_model_len, "tokens"));
}

bool vllm_takes_stream_interval(const ServingOptions& o) {
  return !release_before(vllm_release(o), kVllmStreamIntervalRelease);
}

const VllmRelease& vllm_release(const ServingOptions& o) {
  for (const VllmRelease& r : kVllmReleases)
    if (o.engine_version == r.version) return r;
  if (!o.engine_version.empty())
    throw InputError("--engine", "vllm@" + o.engine_version, "a modelled vLLM release (kvplan --engine vllm@X)",
                     "'" + o.engine_version + "'");
  return kVllmReleases.back();
}

namespace {
// Releases whose V1 engine falls back to V0 on GPUs below compute capability 8.0 (T4,
// V100, RTX 20xx): EngineArgs._is_v1_supported_oracle, vllm/engine/arg_utils.py in 0.8.4
// (read from a public snapshot, Farrrrland/vllm084@36ca3c652f00a1d6c5d6860bc237ad38425e2d53):
// "Need at least Ampere for now (FA support required)" ... get_device_capability().major
// < 8 -> _raise_or_fallback(feature_name="Compute Capability < 8.0") -> V0. PR #23614
// ("[V1] Enable V1 for compute capability < 8.0 + FP32", released in 0.10.2) removed the
// check; kvplan's 0.10 row follows 0.10.2, so 0.10.0-0.10.1 on such GPUs are not modelled.
constexpr std::array<const char*, 2> kVllmV0BelowCc80{{"0.8", "0.9"}};
constexpr int kV1MinComputeCapabilityX10 = 80;
// The V0 worker those releases still ship is 0.7's (Worker.determine_num_available_blocks,
// "# cuda blocks" in executor_base.py, _set_default_args_v0: 256 sequences).
constexpr const char* kLastV0Release = "0.7";
}  // namespace

const VllmRelease& vllm_accounting_release(const ServingOptions& o, const GpuSpec& g) {
  const VllmRelease& r = vllm_release(o);
  const bool pre_ampere = g.compute_capability_x10 > 0 && g.compute_capability_x10 < kV1MinComputeCapabilityX10;
  if (!r.v0 && pre_ampere &&
      std::any_of(kVllmV0BelowCc80.begin(), kVllmV0BelowCc80.end(),
                  [&](const char* v) { return std::string(v) == r.version; }))
    for (const VllmRelease& v0 : kVllmReleases)
      if (std::string(v0.version) == kLastV0Release) return v0;
  return r;
}

bool vllm_runs_v0(const ServingOptions& o, const GpuSpec& g) { return vllm_accounting_release(o, g).v0; }

bool vllm_accepts_block_size(int64_t tokens) {
  return std::find(kVllmBlockSizes.begin(), kVllmBlockSizes.end(), tokens) != kVllmBlockSizes.end();
}

std::string vllm_block_sizes_text() {
  std::string out;
  for (size_t i = 0; i < kVllmBlockSizes.size(); ++i)
    out += (i == 0 ? "" : i + 1 == kVllmBlockSizes.size() ? " or " : ", ") + std::to_string(kVllmBlockSizes[i]);
  return out;
}

std::vector<std::string> vllm_versions() {
  std::vector<std::string> out;
  out.reserve(kVllmReleases.size());
  for (const VllmRelease& r : kVllmReleases) out.emplace_back(r.version);
  return out;
}

bool vllm_v0_chunked_prefill(const ModelConfig& m, const ServingOptions& o) {
  const bool sliding = std::any_of(m.layer_window.begin(), m.layer_window.end(), [](int64_t w) { return w > 0; });
  const int64_t len = engine_max_model_len(m, o);
  return len > kV0LongContext && !sliding && !(o.max_num_batched_tokens && *o.max_num_batched_tokens >= len);
}

int64_t vllm_v0_profile_tokens(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o) {
  if (o.max_num_batched_tokens) return *o.max_num_batched_tokens;
  return vllm_v0_chunked_prefill(m, o) ? vllm_accounting_release(o, g).v0_chunked_tokens
                                       : std::max(engine_max_model_len(m, o), kV0MinBatchedTokens);
}

EngineBatchDefaults vllm_batch_defaults(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o) {
  EngineBatchDefaults d;
  // A V1 release that falls back to V0 on this GPU (vllm_accounting_release) schedules as V0.
  if (vllm_runs_v0(o, g)) {
    // V0's SchedulerConfig: the release's v0_chunked_tokens whenever chunked prefill is on
    // (vllm/config.py:993-997 in 0.6.1.post2), which EngineArgs switches on above 32K.
    d.vllm_v0 = true;
    d.chunked_prefill = vllm_v0_chunked_prefill(m, o);
    d.chunked_tokens = vllm_accounting_release(o, g).v0_chunked_tokens;
  } else {
    // V1 always chunks prefills (vllm/v1/core/sched/scheduler.py has no other mode).
    d.chunked_prefill = true;
    d.chunked_tokens = vllm_default_batched_tokens(g, o, engine_max_model_len(m, o));
    // Async scheduling became the default with vllm-project/vllm PR #27614 (the last item
    // of the "Async Scheduling Plan", vllm-project/vllm#27679, December 2025), first
    // released in 0.14; before it took --async-scheduling.
    d.async_scheduling = !release_before(vllm_release(o), kVllmAsyncDefaultRelease);
  }
  return d;
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

std::string vllm_startup_lines(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o, int64_t kv_tokens) {
  const VllmRelease& rel = vllm_accounting_release(o, g);
  const int64_t len = engine_max_model_len(m, o);
  const int64_t bs = std::max<int64_t>(1, o.block_size);
  const int64_t pool_blocks = kv_tokens / (bs * o.dcp);
  char buf[64];
  if (rel.v0) {
    // V0 executor: "# GPU blocks: N, # CPU blocks: M" and concurrency = blocks x block
    // size / max_model_len, the length printed without separators.
    const StageSpan s = pp_stages(m, 1).front();
    const int64_t block_bytes = checked_mul(vllm_page_bytes_per_layer(m, o), kv_layers(m, s), "KV page");
    const int64_t cpu_blocks = block_bytes > 0 ? kV0SwapBytes / block_bytes : 0;
    std::snprintf(buf, sizeof buf, "%.2fx", static_cast<double>(pool_blocks * bs) / static_cast<double>(len));
    const std::string blocks = std::string(rel.blocks_label) + ": " + std::to_string(pool_blocks) +
                               ", # CPU blocks: " + std::to_string(cpu_blocks);
    // 0.4 prints the block line alone (vllm-project/vllm PR #4454's logs); the concurrency
    // line came with 0.6.
    if (std::string(rel.version) == "0.4") return blocks;
    return blocks + "\n" + "Maximum concurrency for " + std::to_string(len) + " tokens per request: " + buf;
  }
  // V1: 0.8-0.9 divide tokens by max_model_len (PR #13596); later releases divide the
  // pool's num_blocks by the blocks one max_model_len request takes from every KV cache
  // group, summed (get_max_concurrency_for_kv_cache_config, vllm/v1/core/kv_cache_utils.py):
  // a full-attention group cdiv(len, block) (FullAttentionSpec.max_memory_usage_bytes), a
  // sliding one cdiv(min(window - 1 + max_num_batched_tokens, len), block) + 1
  // (SlidingWindowSpec). Groups as vllm_tokens_for_budget forms them; the logged size is
  // num_blocks // groups x block, so num_blocks is rebuilt from it (vLLM's may hold up to
  // groups - 1 blocks more).
  const StageSpan s = pp_stages(m, 1).front();
  int64_t sliding = 0, window = 0;
  for (int64_t l = s.first; l < s.last && !m.layer_window.empty(); ++l)
    if (const int64_t w = m.layer_window[static_cast<size_t>(l)]; w > 0 && m.caches_kv(l)) ++sliding, window = w;
  const int64_t layers = kv_layers(m, s);
  const int64_t full = layers - sliding;
  const int64_t group = sliding == 0 || full == 0 ? layers : std::min(sliding, full);
  const int64_t sliding_groups = sliding > 0 ? ceil_div(sliding, group) : 0;
  const int64_t full_groups = full > 0 ? ceil_div(full, group) : 0;
  const int64_t batched = o.max_num_batched_tokens.value_or(vllm_default_batched_tokens(g, o, len));
  // DCP: a rank holds cdiv(len, dcp) of a request's tokens (max_memory_usage_bytes).
  const int64_t request_blocks = full_groups * ceil_div(ceil_div(len, o.dcp), bs) +
                                 sliding_groups * (ceil_div(std::min(window - 1 + batched, len), bs) + 1);
  const double concurrency =
      rel.concurrency_per_token
          ? static_cast<double>(kv_tokens) / static_cast<double>(len)
          : static_cast<double>(pool_blocks * (sliding_groups + full_groups)) / static_cast<double>(request_blocks);
  std::snprintf(buf, sizeof buf, "%.2fx", concurrency);
  const std::string dcp =
      o.dcp > 1 ? "Multiplying the GPU KV cache size by the dcp_world_size " + std::to_string(o.dcp) + ".\n" : "";
  return dcp + "GPU KV cache size: " + with_thousands(kv_tokens) + " tokens\n" +
         "Maximum concurrency for " + with_thousands(len) + " tokens per request: " + buf;
}

namespace {

MemoryBudget vllm_stage_budget(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o,
                               const StageSpan& s) {
  const VllmRelease& rel = vllm_accounting_release(o, g);
  MemoryBudget b;
  b.gpu_bytes = g.memory_bytes;
  b.usable_bytes = static_cast<int64_t>(std::floor(static_cast<double>(g.memory_bytes) * o.gpu_memory_utilization));
  b.weights_bytes = engine_weight_bytes(m, o, s);
  if (rel.v0) {
    // V0: the forward pass over the batch, then the sampler over max_num_seqs rows. With
    // chunked prefill the logged peak holds the logits of those rows but no sampler sort:
    // 0.6.4 on an RTX 3090 (#10517, 35,000 tokens: 0.06 GiB = 256 x 128,256 bf16 logits)
    // and 0.7.1 on an A10 (tests/data/engine_logs/vllm.yaml, 131,072 tokens: 0.22 GiB =
    // the forward over 2,048 tokens and the logits), against the full sort in every V0 log
    // without it. profile_run (vllm/worker/model_runner.py) builds the same dummy batch in
    // both modes; the code path that skips the sampler was not found, the rule is the logs'.
    const int64_t tokens = vllm_v0_profile_tokens(m, g, o);
    const int64_t per_logit = act_bytes(m, o) + (vllm_v0_chunked_prefill(m, o) ? 0 : rel.sampler_extra_bytes);
    b.activation_bytes = profile_run_peak(m, o, s, tokens, std::min(o.max_num_seqs, tokens), per_logit).peak();
  } else {
    const int64_t len = engine_max_model_len(m, o);
    const int64_t tokens = o.max_num_batched_tokens.value_or(vllm_default_batched_tokens(g, o, len));
    const int64_t reqs = std::min(o.max_num_seqs, tokens);
    b.activation_bytes = profile_run_peak(m, o, s, tokens, reqs, act_bytes(m, o) + rel.sampler_extra_bytes).peak();
  }
  // TP > 1 over PCIe only (no NVLink in the GPU file): the NCCL communicators without the
  // custom all-reduce (tp_comm_bytes(g, o)); vLLM 0.10.1.1 on two A100s without P2P logs
  // KV pools that leave 0.09-0.14 GiB for them (tests/data/engine_logs/vllm.yaml).
  b.reserve_bytes = rel.non_torch_bytes + tp_comm_bytes(g, o);
  b.kv_budget_bytes = std::max<int64_t>(0, b.usable_bytes - b.weights_bytes - b.activation_bytes - b.reserve_bytes);
  const VllmRelease& named = vllm_release(o);
  b.note = std::string("vLLM ") + named.version +
           (!rel.v0           ? " (V1) profile run"
            : named.v0        ? " (V0) profile run"
                              : " (V0: its V1 engine needs compute capability 8.0) profile run") +
           ": CUDA graphs not deducted";
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
  const VllmStagePlan p = vllm_limiting_stage(m, g, o);
  MemoryBudget b = p.budget;
  b.stage_first_layer = p.stage.first;
  b.stage_last_layer = p.stage.last;
  return b;
}

std::string vllm_rank_lines(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o, const MemoryBudget& b) {
  const VllmRelease& rel = vllm_accounting_release(o, g);
  const auto gib = [](int64_t v) { return static_cast<double>(v) / static_cast<double>(kEngGiB); };
  char buf[256];
  if (!rel.v0) {
    // V1: only the first worker logs its pool at INFO (gpu_worker.py "Available KV
    // cache memory"; 0.19 logs of TP 4 and PP 2 print it once, from TP0 / PP0).
    std::snprintf(buf, sizeof buf, "Available KV cache memory: %.2f GiB\n", gib(b.kv_budget_bytes));
    return buf;
  }
  // V0: every worker profiles and logs its own memory; the stages of a pipeline differ.
  const std::vector<StageSpan> stages = pp_stages(m, o.pp);
  std::string out;
  for (size_t si = 0; si < stages.size(); ++si) {
    const MemoryBudget sb = stages.size() == 1 ? b : vllm_stage_budget(m, g, o, stages[si]);
    for (int64_t r = 0; r < o.tp; ++r) {
      if (o.tp * o.pp > 1) out += "(rank " + std::to_string(static_cast<int64_t>(si) * o.tp + r) + ") ";
      if (std::string(rel.version) == "0.4" || std::string(rel.version) == "0.6") {
        // model_runner.py: "Loading model weights took %.4f GB" (the value is in GiB).
        std::snprintf(buf, sizeof buf, "Loading model weights took %.4f GB\n", gib(sb.weights_bytes));
      } else {
        // worker.py (0.6.5+, PR #10511): the budget and its four parts.
        std::snprintf(buf, sizeof buf,
                      "the current vLLM instance can use total_gpu_memory (%.2fGiB) x gpu_memory_utilization "
                      "(%.2f) = %.2fGiB\n",
                      gib(sb.gpu_bytes), o.gpu_memory_utilization, gib(sb.usable_bytes));
        out += buf;
        if (o.tp * o.pp > 1) out += "(rank " + std::to_string(static_cast<int64_t>(si) * o.tp + r) + ") ";
        std::snprintf(buf, sizeof buf,
                      "model weights take %.2fGiB; non_torch_memory takes %.2fGiB; PyTorch activation peak memory "
                      "takes %.2fGiB; the rest of the memory reserved for KV Cache is %.2fGiB.\n",
                      gib(sb.weights_bytes), gib(sb.reserve_bytes), gib(sb.activation_bytes), gib(sb.kv_budget_bytes));
      }
      out += buf;
    }
  }
  return out;
}

int64_t engine_max_kv_tokens(const ModelConfig& m, const ServingOptions& o, const MemoryBudget& b) {
  if (b.kv_budget_bytes <= 0) return 0;
  switch (o.engine) {
    case Engine::vllm: {
      // The budget is the limiting stage's (vllm_budget records which one).
      StageSpan s = pp_stages(m, 1).front();
      if (b.stage_last_layer > b.stage_first_layer)
        for (const StageSpan& stage : pp_stages(m, o.pp))
          if (stage.first == b.stage_first_layer && stage.last == b.stage_last_layer) s = stage;
      // Under DCP each GPU's pages hold one token in dcp: _report_kv_cache_config
      // (vllm/v1/core/kv_cache_utils.py) multiplies the logged size by dcp_world_size.
      return checked_mul(vllm_tokens_for_budget(m, o, s, b.kv_budget_bytes), o.dcp, "KV tokens");
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
    case Engine::trtllm: {
      // Tokens the pool holds, rounded up to whole blocks when the cache is allocated
      // (NVIDIA/TensorRT-LLM#224: "rounded up to the next multiple of block size").
      const int64_t per_token = kv_bytes_per_token_per_gpu(m, o);
      if (per_token <= 0) return 0;
      const int64_t page = std::max<int64_t>(1, o.block_size);
      return checked_mul(ceil_div(b.kv_budget_bytes / per_token, page), page, "KV tokens");
    }
    case Engine::ideal: break;
  }
  const int64_t block = kv_block_bytes_per_gpu(m, o);
  if (block <= 0) return 0;
  return checked_mul(b.kv_budget_bytes / block, kv_block_tokens(o), "KV tokens");
}

}  // namespace kvplan::detail
