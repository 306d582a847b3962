// Helpers shared by the engine models (engine_vllm.cpp, engine_sglang.cpp,
// engine_trtllm.cpp). Internal: not part of the planner's public interface.
// docs/engines.md explains every formula here and links the engine code it follows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/planner.h"

namespace kvplan::detail {

inline constexpr int64_t kEngMiB = int64_t{1} << 20;
inline constexpr int64_t kEngGiB = int64_t{1} << 30;

//! One pipeline stage: layers [first, last) and whether it holds the embedding (first
//! stage) and the LM head, final norm and sampler (last stage).
struct StageSpan {
  int64_t first = 0;
  int64_t last = 0;
  bool first_stage = true;
  bool last_stage = true;
  int64_t layers() const { return last - first; }
};

//! vLLM's get_pp_indices: L / pp layers per stage, the remainder given one each to the
//! stages just before the last (the last holds the LM head). SGLang splits the same way.
std::vector<StageSpan> pp_stages(const ModelConfig& m, int64_t pp);

//! The stage's layers that hold K/V (Nemotron-NAS's no-op attention layers hold none).
int64_t kv_layers(const ModelConfig& m, const StageSpan& s);

//! Weight bytes of one stage on one GPU as vLLM (and SGLang, whose layers shard the same
//! way) load them: vocabulary padded to 64 and split over TP, embedding and LM head in
//! 16-bit whatever the weight quantization, tied LM head shared (unless PP splits them),
//! K/V heads replicated when TP exceeds them, MLA down-projections, norms and MoE router
//! replicated, quantized linear layers with their scales, and the rotary cos/sin cache.
int64_t engine_weight_bytes(const ModelConfig& m, const ServingOptions& o, const StageSpan& s);

//! Bytes of one KV page (block_size tokens) of one attention layer on one GPU, as vLLM's
//! KV cache specs count them (FullAttentionSpec / SlidingWindowSpec: 2 x block x heads
//! per rank x head_size x dtype; MLAAttentionSpec: block x (kv_lora_rank + rope) x dtype).
int64_t vllm_page_bytes_per_layer(const ModelConfig& m, const ServingOptions& o);

//! KV tokens vLLM logs ("GPU KV cache size") for a pool of `kv_bytes` on a stage:
//! uniform layers: blocks = bytes / (page x layers); mixed sliding/full layers: the
//! hybrid allocator's groups (group size = the smaller layer count).
int64_t vllm_tokens_for_budget(const ModelConfig& m, const ServingOptions& o, const StageSpan& s,
                               int64_t kv_bytes);

//! Bytes of one token's K and V over the stage's layers on one GPU (SGLang's cell size).
int64_t kv_cell_bytes(const ModelConfig& m, const ServingOptions& o, const StageSpan& s);

//! max_model_len: the option, else the model's max_position_embeddings (vLLM's default).
int64_t engine_max_model_len(const ModelConfig& m, const ServingOptions& o);

//! vLLM V1's max_num_batched_tokens default: `vllm serve` (OPENAI_API_SERVER context,
//! chunked prefill on) 8192 on big GPUs (vllm_big_gpu), else 2048; offline LLM()
//! (LLM_CLASS) 16384 / 8192; then capped at max_num_seqs x max_model_len (arg_utils.py).
int64_t vllm_default_batched_tokens(const GpuSpec& g, const ServingOptions& o, int64_t max_model_len);

//! Peak torch memory of a profiling step on one stage, split by cause.
struct ActivationPeak {
  int64_t forward = 0;        // largest live set inside the forward pass
  int64_t sampler = 0;        // logits and sampler tensors (last stage only)
  int64_t kept = 0;           // what the forward leaves alive: hidden states, MoE workspace
  int64_t moe_workspace = 0;  // fused-MoE workspaces (persistent in vLLM >= 0.17)
  int64_t peak() const;
};

//! The profile run: a forward pass over `tokens` dummy tokens, then (last stage) the
//! sampler over `reqs` rows of full-vocabulary logits at `sampler_bytes_per_logit`.
ActivationPeak profile_run_peak(const ModelConfig& m, const ServingOptions& o, const StageSpan& s,
                                int64_t tokens, int64_t reqs, int64_t sampler_bytes_per_logit);

// Runtime reserves: the memory a serving process holds outside the weights, the
// activations and the KV pool. Every engine model takes them from here.
//
// --engine ideal: round, engine-neutral figures (a documented default, not a
// measurement): 512 MiB for the CUDA context and library workspaces, plus 256 MiB of NCCL
// buffers when the model spans GPUs. A calibration file's runtime_reserve_bytes replaces
// both. They are deliberately not the H100 measurements below: ideal plans for any GPU.
inline constexpr int64_t kIdealContextReserveBytes = 512 * kEngMiB;
inline constexpr int64_t kIdealNcclReserveBytes = 256 * kEngMiB;
//! Communication buffers that TP > 1 adds on each GPU (NCCL channels, custom all-reduce
//! and symmetric-memory buffers); vLLM 0.19 on H100 NVLink: 2.06-2.17 GiB of non-torch
//! memory at TP 2-4 against 0.25 GiB at TP 1 (same logs, accuracy_report.md TP table).
inline constexpr int64_t kTpCommBytes = 1894 * kEngMiB;  // 1.85 GiB
//! Data-parallel ranks exchange MoE tokens through the same kind of buffers (all-to-all or
//! all-gather), counted alike: no log of a DP deployment's non-torch memory was found.
inline int64_t tp_comm_bytes(const ServingOptions& o) { return o.tp * o.dp > 1 ? kTpCommBytes : 0; }
//! The same buffers on GPUs joined by PCIe only: 0.13 GiB, what the TP communicators hold
//! once SGLang 0.4.3.post4's init_torch_distributed returns on 4 x L4 at TP 4 ("Init torch
//! distributed ends. mem usage=X GB", didier-durand/llms-in-clouds@
//! b001c8690e894d234cf3a2e2345d259173acf293:docs/sglang.md). Custom all-reduce is off there
//! (vLLM's and SGLang's custom_all_reduce.py: "not supported on more than two PCIe-only
//! GPUs", and off without P2P), so only NCCL's communicators remain, with the few channels
//! NCCL opens over PCIe. vLLM 0.10.1.1 on two A100s without P2P logs the same (engine_vllm.cpp).
inline constexpr int64_t kPcieTpCommBytes = 133 * kEngMiB;  // 0.13 GiB
//! Whether the GPU file names no NVLink link between the GPUs of a node (kv_links without
//! nvlink). A file without kv_links says nothing: kvplan then keeps the NVLink measurement.
inline bool pcie_only(const GpuSpec& g) { return g.kv_links && !g.kv_links->nvlink; }
//! tp_comm_bytes on GPU g: the PCIe figure where the file names no NVLink.
inline int64_t tp_comm_bytes(const GpuSpec& g, const ServingOptions& o) {
  if (o.tp * o.dp <= 1) return 0;
  return pcie_only(g) ? kPcieTpCommBytes : kTpCommBytes;
}

//! vLLM's "large GPU" test behind its batch defaults (arg_utils.py get_batch_defaults):
//! at least 70 GiB and not an A100. The one place kvplan decides it.
bool vllm_big_gpu(const GpuSpec& g);
struct VllmRelease;
//! Whether release `r` gives GPU `g` its larger batch defaults (BatchTier).
bool vllm_large_batch_defaults(const VllmRelease& r, const GpuSpec& g);

//! Which GPUs a vLLM release gives its larger batch defaults: none, GPUs named H100 or
//! H200 (0.8.4's EngineArgs._set_default_args_v1), or vllm_big_gpu (0.9+).
enum class BatchTier { none, h100_h200_names, big_memory };

//! What moves the KV pool between vLLM releases (docs/engines.md, "Versions"; each
//! value cites its log or source in engine_vllm.cpp's table).
struct VllmRelease {
  const char* version = "";          // "0.10": every 0.10.x
  bool v0 = false;                   // V0 engine: Worker.determine_num_available_blocks
  int64_t sampler_extra_bytes = 0;   // V1 dummy sampler, bytes per logit beyond the logits
  int64_t non_torch_bytes = 0;       // non-torch increase of the profile run at TP 1
  bool concurrency_per_token = false;  // concurrency = tokens / max_model_len (0.8-0.9)
  const char* blocks_label = "";     // V0's block line: "# GPU blocks" / "# cuda blocks"
  BatchTier batch_tier = BatchTier::none;  // which GPUs get the larger batch defaults
  int64_t v0_chunked_tokens = 0;     // V0: max_num_batched_tokens SchedulerConfig gives chunked prefill
};
//! The release o.engine_version names (the latest when empty); o.engine must be vllm.
const VllmRelease& vllm_release(const ServingOptions& o);
//! The release whose code sizes the pool on GPU g: o's release, or, where its V1 engine
//! falls back to V0 (0.8 and 0.9 below compute capability 8.0), the V0 worker it ships
//! (0.7's row). The one place kvplan decides which engine a vLLM start-up runs.
const VllmRelease& vllm_accounting_release(const ServingOptions& o, const GpuSpec& g);
//! Whether vLLM runs its V0 engine (V0 releases; 0.8-0.9 on GPUs below compute capability 8.0).
bool vllm_runs_v0(const ServingOptions& o, const GpuSpec& g);
//! Whether vLLM's `--block-size` accepts `tokens`: its CLI takes the CacheConfig BlockSize
//! literal as its choices (engine_vllm.cpp cites the source); other values exit there.
bool vllm_accepts_block_size(int64_t tokens);
//! Those choices as a sentence: "1, 8, 16, 32, 64, 128 or 256".
std::string vllm_block_sizes_text();
//! Every modelled vLLM release, oldest first.
std::vector<std::string> vllm_versions();
//! Tokens vLLM V0 profiles on GPU g (max_num_batched_tokens as the V0 SchedulerConfig of
//! the release that sizes the pool, vllm_accounting_release, defaults it).
int64_t vllm_v0_profile_tokens(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o);
//! Whether vLLM V0 runs with chunked prefill: its EngineArgs switch it on by themselves
//! above max_model_len 32768 without a sliding-window layer (arg_utils.py:894-916 in
//! 0.6.1.post2), unless a max_num_batched_tokens of at least max_model_len is given (the
//! value V0 requires when chunked prefill is off; the offline benchmarks pass both).
bool vllm_v0_chunked_prefill(const ModelConfig& m, const ServingOptions& o);
//! engine_batch_defaults for vLLM (the release o.engine_version names).
EngineBatchDefaults vllm_batch_defaults(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o);

//! The KV lines the release prints (V1: "GPU KV cache size: N tokens" and "Maximum
//! concurrency for T tokens per request: X" as kv_cache_utils prints them; V0: the block
//! line and "Maximum concurrency ..."), without the per-rank lines.
std::string vllm_startup_lines(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o, int64_t kv_tokens);

//! The PP stage vLLM's pool is limited by (the one with the fewest blocks), its budget
//! and the tokens it gives.
struct VllmStagePlan {
  StageSpan stage;
  MemoryBudget budget;
  int64_t tokens = 0;
};
VllmStagePlan vllm_limiting_stage(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o);

//! 1,234,567
std::string with_thousands(int64_t v);

}  // namespace kvplan::detail
