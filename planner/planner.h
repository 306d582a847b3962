// kvplan planner: the analytic model of an LLM on a GPU. It offers
//  - parameter counts and weight bytes (params.cpp),
//  - KV-cache bytes per token and per request for every attention kind and quantization
//    scheme, metadata included (kv.cpp),
//  - FLOPs per operation for prefill, one decode step and T-token generation with and
//    without the cache (flops.cpp), 2 FLOPs per multiply-add,
//  - the memory budget each engine leaves for the KV pool (engine.cpp) and the capacity
//    it gives in paged blocks,
//  - roofline step times (roofline.cpp) and `make_plan`, which puts them together.
// Conventions: bytes are int64 and named *_bytes; GB = 1e9, GiB = 2^30; times *_s.
// Everything here is pure computation: no files, no printing, no allocation on the
// hot path, so sweeps of millions of configurations are cheap.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/lora.h"
#include "planner/types.h"

namespace kvplan {

// ---------------------------------------------------------------- validation
//! Throws InputError when options cannot apply to the model (TP not dividing heads, ...).
//! `where` names the option source for the message (e.g. "command line").
void validate(const ModelConfig& m, const ServingOptions& o, const std::string& where);
//! The decode context parallel sizes (--dcp) the engine runs for `m` with options `o`:
//! 1, then each divisor of o.tp that validate() accepts (its --dcp rules,
//! docs/long-context.md), ascending.
std::vector<int64_t> dcp_sizes(const ModelConfig& m, const ServingOptions& o);

//! The longest context the model serves, derived the way vLLM derives max_model_len
//! (vllm/config.py _get_and_verify_max_len, v0.10.0): max_position_embeddings, scaled by
//! rope_scaling.factor unless the type is su, longrope or llama3 (whose
//! max_position_embeddings is already the extended length); YaRN scales
//! original_max_position_embeddings instead; Gemma-3 configs are already scaled.
//! 0 when the model gives no length.
int64_t derived_max_model_len(const ModelConfig& m);
//! Throws InputError when `context` tokens exceed what the options allow: --max-model-len
//! when given, else the derived maximum. A real engine (vllm, sglang, trtllm) also
//! refuses a --max-model-len above the derived maximum, as vLLM does.
void check_context(const ModelConfig& m, const ServingOptions& o, int64_t context, const std::string& where);

// ---------------------------------------------------------------- parameters
struct ParamCount {
  int64_t tower = 0;       // vision / audio encoders and their projector (multimodal)
  int64_t embedding = 0;   // input embedding
  int64_t lm_head = 0;     // 0 when tied
  int64_t attention = 0;   // all layers' token mixers: attention projections (and their
                           // biases, norms of MLA), Mamba and linear-attention blocks
  int64_t mlp = 0;         // dense MLPs, all experts, shared experts, routers
  int64_t norms = 0;       // layer norms and the final norm
  int64_t active_mlp = 0;  // MLP parameters one token uses (top-k + shared experts)
  int64_t total() const { return tower + embedding + lm_head + attention + mlp + norms; }
  int64_t active() const { return tower + embedding + lm_head + attention + active_mlp + norms; }
};
ParamCount count_params(const ModelConfig& m);
//! One decoder layer's token mixer (attention, Mamba or linear attention) and the
//! feed-forward parameters one token uses in it (top-k + shared experts, router).
struct LayerParamCount {
  int64_t mixer = 0;
  int64_t active_ffn = 0;
};
LayerParamCount layer_param_count(const ModelConfig& m, int64_t layer);

//! Weight bytes on one GPU: layers split over PP stages, matrices over TP ranks, routed
//! experts over the stage's tp x dp GPUs (--ep/--dp, docs/parallelism.md);
//! quantized formats count their group scales (awq/gptq: fp16 scale + packed zero per
//! 128 weights), embeddings and LM head stay in 16-bit (as engines load them).
int64_t weight_bytes_per_gpu(const ModelConfig& m, const ServingOptions& o);
//! The vision/audio towers' weight bytes on one GPU (16-bit, split over TP, on the first
//! PP stage), reported apart from the language model's weights.
int64_t tower_bytes_per_gpu(const ModelConfig& m, const ServingOptions& o);

//! The weight quantization in force, as vLLM resolves --quantization: a quantized
//! checkpoint loads as stored (quantization_config, m.weight_quant) and accepts only its
//! own method or a kernel of it; an unquantized one takes none (16-bit) or fp8, int8,
//! awq, gptq, bitsandbytes, modelopt, modelopt_fp4 (quant_spec). InputError otherwise.
QuantSpec weight_quant_of(const ModelConfig& m, const ServingOptions& o);
//! Why weight_quant_of refuses o.quantization for m (the expected-text), or nullopt.
std::optional<std::string> quantization_refusal(const ModelConfig& m, const ServingOptions& o);
//! The layout kvplan assumes for an explicit --quantization kind (planner/quant.cpp).
QuantSpec quant_spec(WeightQuant q);
//! Bytes of `params` weights of one linear component whose matrices have `rows` output
//! rows in all, stored as q (scales and zero points included); `act_bytes` per weight
//! when q is inactive.
int64_t quantized_bytes(const QuantSpec& q, int64_t params, int64_t rows, int64_t act_bytes);
//! The dtype the GEMMs run in: W8A8 schemes (fp8, int8) use the 8-bit tensor cores,
//! weight-only ones dequantize to the activation dtype.
DType compute_dtype(const ModelConfig& m, const ServingOptions& o);
//! "fp8 (block 128x128, W8A8)", "mxfp4 (4.25 bits, weight-only)", ... or the dtype.
std::string weight_label(const ModelConfig& m, const ServingOptions& o);

// ---------------------------------------------------------------- KV cache
//! Bits per stored element of a quantized cache, metadata included, at steady state
//! (residual fp16 window excluded), for the element counts of one layer.
struct KvLayout {
  int64_t elems_per_token_per_layer = 0;  // K+V (or MLA latent+rope) elements, one GPU
  int64_t replication = 1;                // how many GPUs hold a copy (TP > n_kv, MLA)
  int64_t group = 0;                      // effective quantization group
  int64_t residual_tokens = 0;            // fp16 window (kivi)
  double bits_per_elem = 16;              // steady state, metadata included
};
KvLayout kv_layout(const ModelConfig& m, const ServingOptions& o);

//! KV bytes per token of the whole model (all layers, one copy, metadata included).
int64_t kv_bytes_per_token(const ModelConfig& m, const ServingOptions& o);
//! Same, on one GPU (its TP shard of its PP stage's layers, replicas included), for a
//! token the GPU holds: under DCP a GPU holds one token in dcp.
int64_t kv_bytes_per_token_per_gpu(const ModelConfig& m, const ServingOptions& o);
//! KV bytes of one request holding `tokens` tokens, whole model, before block rounding:
//! sliding-window layers capped at their window, fp16 residual, metadata.
int64_t kv_bytes_per_request(const ModelConfig& m, const ServingOptions& o, int64_t tokens);
//! Fixed state one request holds in the Mamba and linear-attention layers (conv state +
//! SSM / delta-rule state, vLLM's MambaStateShapeCalculator), whole model, one copy.
int64_t state_bytes_per_request(const ModelConfig& m, const ServingOptions& o);
//! Same on one GPU (its TP shard of the heaviest PP stage's layers).
int64_t state_bytes_per_request_per_gpu(const ModelConfig& m, const ServingOptions& o);
//! Tokens one block of the scheduler's pool holds: block_size, x dcp under decode context
//! parallelism (vLLM's scheduler block; each GPU of the DCP group holds block_size of them).
int64_t kv_block_tokens(const ServingOptions& o);
//! Bytes of one paged block (block_size tokens) on one GPU, all of its layers.
int64_t kv_block_bytes_per_gpu(const ModelConfig& m, const ServingOptions& o);
//! Blocks one request of `tokens` tokens holds on one GPU, counted in whole-model blocks
//! (a sliding layer holds at most ceil(window / block_size) + 1 blocks).
int64_t kv_blocks_per_request(const ModelConfig& m, const ServingOptions& o, int64_t tokens);
//! Bytes one request of `tokens` tokens holds on one GPU, each layer in whole blocks,
//! plus the fixed Mamba / linear-attention state of its state layers (the paged pool
//! holds both: vLLM's hybrid allocator pages Mamba state in the same pool).
int64_t kv_request_footprint_per_gpu(const ModelConfig& m, const ServingOptions& o, int64_t tokens);

// ---------------------------------------------------------------- FLOPs
//! FLOPs by operation, whole model, 2 per multiply-add.
struct FlopBreakdown {
  double qkv = 0;          // Q, K, V projections (MLA: down/up projections)
  double attn_scores = 0;  // Q·K^T
  double attn_values = 0;  // softmax·V
  double out_proj = 0;     // attention output projection
  double mlp = 0;          // MLP, experts (active), routers
  double lm_head = 0;      // logits of the positions that are sampled
  double total() const { return qkv + attn_scores + attn_values + out_proj + mlp + lm_head; }
  FlopBreakdown& operator+=(const FlopBreakdown& b);
};
//! One forward pass over `tokens` new tokens that follow `cached` tokens already in the
//! cache (causal; sliding layers see at most their window); logits for the last only.
//! MLA runs absorbed for one token (a decode) and decompressed for more (a prefill
//! chunk, which also decompresses the `cached` latents: flops.cpp).
FlopBreakdown forward_flops(const ModelConfig& m, int64_t tokens, int64_t cached);
//! Prefill of a T-token prompt = forward_flops(m, T, 0).
FlopBreakdown prefill_flops(const ModelConfig& m, int64_t tokens);
//! One decode step: one new token attending to `context` keys (itself included).
FlopBreakdown decode_step_flops(const ModelConfig& m, int64_t context);
//! Producing T tokens one at a time from a one-token prompt, with the cache:
//! sum_{t=1..T} decode_step_flops(t).
FlopBreakdown generate_cached_flops(const ModelConfig& m, int64_t tokens);
//! Same without a cache: step t re-runs the forward pass over all t tokens:
//! sum_{t=1..T} prefill_flops(t). Closed forms, no loop over t (DeepSeek-V4's compressed
//! entries: one term per group of r tokens).
FlopBreakdown generate_naive_flops(const ModelConfig& m, int64_t tokens);
//! DeepSeek-V4 (flops.cpp): the attention FLOPs of `tokens` queries after `cached` tokens,
//! split as TP runs them: the heads' scores and values over the window and compressed
//! entries, sharded with the heads, and what every TP rank runs whole, the indexer's
//! scoring and the compressors' pooling (DeepseekV4Indexer: "no tensor parallel, just
//! replicated"; DeepseekCompressor: disable_tp). In forward_flops they are attn_scores,
//! attn_values and (the pooling) qkv.
struct CsaAttentionFlops {
  double sharded = 0, replicated = 0;
};
CsaAttentionFlops csa_attention_flops(const ModelConfig& m, int64_t tokens, int64_t cached);
//! Attention FLOPs of one query-key pair in every attention layer, as a decode step runs
//! it (MLA absorbed) and as a prefill chunk does (MLA decompressed), and what a prefill
//! chunk spends per cached token it follows (MLA: kv_b_proj over the cached latents; 0
//! otherwise). The step-time model prices KvTraffic's layer-mean pairs and keys with them.
struct PairFlops {
  double decode = 0, prefill = 0, prefill_context_per_token = 0;
};
PairFlops pair_flops(const ModelConfig& m);
//! The seed's Theorem 1 convention: Q,K,V projections only, d x d each, 1 FLOP per
//! multiply-add, summed over T steps and L layers: 3 d^2 T(T+1)/2 L.
double seed_naive_projection_flops(const ModelConfig& m, int64_t tokens);

//! The CUDA context a process holds before it loads weights: 0.51 GiB in vLLM 0.19's
//! "worker init memory snapshot" on H100 (llm-d-incubation/llm-d-planner
//! accuracy/results/v0.19.0/logs). SGLang and TensorRT-LLM measure free memory after it.
//! Public because gpu_validate measures it on the device.
inline constexpr int64_t kCudaContextBytes = int64_t{522} << 20;  // 0.51 GiB

// ---------------------------------------------------------------- memory and capacity
struct MemoryBudget {
  int64_t gpu_bytes = 0;          // memory as CUDA reports it
  int64_t usable_bytes = 0;       // gpu_bytes x gpu_memory_utilization
  int64_t weights_bytes = 0;
  int64_t activation_bytes = 0;   // peak of the largest step the engine plans for
  int64_t reserve_bytes = 0;      // CUDA context, library workspaces, NCCL, graphs
  int64_t kv_budget_bytes = 0;    // what is left for the KV pool (>= 0)
  std::string note;               // why the pool is empty, or the engine's caveat
  int64_t stage_first_layer = 0;  // the pipeline stage the budget is for (vLLM sizes the
  int64_t stage_last_layer = 0;   // pool on the stage with the fewest blocks); 0, 0 = all
  int64_t tower_bytes = 0;        // vision encoders (multimodal), apart from weights
  int64_t lora_bytes = 0;         // LoRA adapter slots (planner/lora.h), apart from weights
};
//! The host-memory KV tier below the GPU pool, as the engine sizes it:
//! - vLLM's KV offloading (--kv-offloading-size, backend native = OffloadingConnector,
//!   vLLM 0.14+): vllm/config/vllm.py sets cpu_bytes_to_use = size x 2^30 for the whole
//!   engine, and the CPU offloading spec splits it over the tp x pp KV ranks and cuts each
//!   rank's share into blocks of that rank's block bytes (a drafter's KV layers included:
//!   they share the target's blocks);
//! - SGLang's HiCache (--enable-hierarchical-cache): HostKVCache holds
//!   hicache_size x 1e9 / bytes per token tokens per rank when --hicache-size is given,
//!   else hicache_ratio x the device pool's tokens, and asserts it exceeds the device pool
//!   (python/sglang/srt/mem_cache/memory_pool_host.py).
//! Every rank holds its shard of every block, so `blocks` is also the engine's count.
struct HostKvTier {
  int64_t bytes_per_gpu = 0;
  int64_t block_bytes_per_gpu = 0;
  int64_t blocks = 0;          //!< floor(bytes_per_gpu / block_bytes_per_gpu)
  int64_t tokens = 0;          //!< blocks x block_size: prefix tokens the tier holds
  std::string sized_by;        //!< the flags, as given: "--kv-offloading-size 64 GiB", "--hicache-ratio 2"
  //! The disk tier below it (--kv-disk-size; 0 when off): bytes per GPU = size / (tp x pp),
  //! cut into the same blocks.
  int64_t disk_bytes_per_gpu = 0;
  int64_t disk_blocks = 0;
  int64_t disk_tokens = 0;
  //! The remote store (--kv-remote-size; 0 when off), shared by the fleet: each engine
  //! writes its tp x pp shards of a block, so a block takes block_bytes_per_gpu x tp x pp
  //! of the store.
  int64_t remote_blocks = 0;
  int64_t remote_tokens = 0;
};
//! Empty when neither tier is asked for. `pool_blocks_per_gpu`: the GPU pool the engine
//! runs with (HiCache's ratio is of it). Throws InputError when HiCache's host pool would
//! not exceed the GPU pool (SGLang refuses to start).
std::optional<HostKvTier> host_kv_tier(const ModelConfig& m, const ServingOptions& o, int64_t pool_blocks_per_gpu);
//! The flag that sized the host KV tier, for messages: --kv-offloading-size, --hicache-size
//! or --hicache-ratio.
std::string host_kv_tier_flag(const ServingOptions& o);

//! How the engine (o.engine) splits one GPU's memory. See engine.cpp for each engine.
MemoryBudget memory_budget(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o);

struct Capacity {
  int64_t num_blocks = 0;                // paged blocks in the pool, per GPU
  // With --dp both below are the replica's: dp ranks, each with its own pool.
  int64_t max_kv_tokens = 0;             // tokens the pool holds
  int64_t max_concurrent_requests = 0;   // requests of the asked context that fit at once
  std::string limited_by;                // "memory", "max_num_seqs", "weights do not fit"...
};
Capacity capacity(const ModelConfig& m, const ServingOptions& o, const MemoryBudget& b,
                  int64_t context_tokens);
//! Capacity when every request begins with the same `prefix_tokens` (a system prompt) and
//! prefix caching is on: the prefix's full blocks are held once for all requests (vLLM's
//! automatic prefix caching hashes full blocks only; SGLang's radix cache shares token
//! cells, counted here at block granularity), each request holds its other blocks,
//! including the prefix's partial last block.
struct SharedPrefixCapacity {
  int64_t prefix_tokens = 0;
  int64_t shared_blocks = 0;           // held once: floor(prefix / block_size)
  int64_t blocks_per_request = 0;      // each request's own blocks
  int64_t max_concurrent_requests = 0; // (pool - shared) / own, 0 when the pool cannot hold them
};
//! Throws InputError (key --shared-prefix-tokens) when the prefix is not shorter than the
//! context, prefix caching is off, or the model has sliding-window or state layers (their
//! caches keep only a window / a fixed state, so a shared prefix is not held as a whole).
SharedPrefixCapacity shared_prefix_capacity(const ModelConfig& m, const ServingOptions& o, const Capacity& c,
                                            int64_t context_tokens, int64_t prefix_tokens);
//! The options with the engine's own defaults filled in where the user gave none
//! (vLLM: max_num_seqs 1024 on GPUs of >= 70 GiB other than A100s, else 256).
ServingOptions with_engine_defaults(const GpuSpec& g, ServingOptions o);
//! The batching an engine release applies when the user sets none (docs/engines.md
//! "Schedulers"; each rule's source is cited where it is computed, engine_*.cpp):
//! whether it chunks prefills by default and the per-step token budget it then uses.
struct EngineBatchDefaults {
  //! vLLM V1 (0.8+): always; V0 (0.4-0.7): when max_model_len > 32768 and the model has no
  //! sliding window; SGLang: always (chunked_prefill_size); TensorRT-LLM: off
  //! (enable_chunked_prefill defaults to False); ideal: off.
  bool chunked_prefill = false;
  //! vLLM V0's block manager (admission watermark) rather than V1's.
  bool vllm_v0 = false;
  //! The token budget of one step with chunked prefill (vLLM V1: by release, entry point
  //! and GPU memory; V0: 512; SGLang: chunked_prefill_size by GPU memory; TensorRT-LLM:
  //! max_num_tokens 8192); 0 where the engine does not say (ideal).
  int64_t chunked_tokens = 0;
  //! vLLM V1 from 0.14: the scheduler composes step k + 1 while step k runs
  //! (--async-scheduling on by default since vllm-project/vllm PR #27614; ServingOptions).
  bool async_scheduling = false;
};
EngineBatchDefaults engine_batch_defaults(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o);
//! When the engine sends a streamed request's tokens to the client under
//! ServingOptions::stream_interval (docs/engines.md "Streaming" cites each rule): a chunk
//! goes out after the step that brings the request to g output tokens when g == 1 (the
//! first token, at once, in every modelled release), when g is its last token, or when
//! (g - offset) is a multiple of `interval`: SGLang 0.5 and vLLM offset 1 (chunks at
//! tokens 1, N + 1, 2N + 1, ...), TensorRT-LLM offset 0 (1, N, 2N, ...).
struct StreamDelivery {
  int64_t interval = 1;
  int64_t offset = 1;
  bool sends(int64_t g, int64_t last) const { return g == 1 || g == last || (g - offset) % interval == 0; }
};
//! The rule of o's engine release. Throws InputError (key --stream-interval) for an
//! interval below 1, or above 1 where it is not modelled: --engine ideal, vLLM before
//! 0.12, SGLang 0.4 (its first chunk waits for the N-th token), TensorRT-LLM 0.x, and
//! speculative decoding (several tokens per step).
StreamDelivery stream_delivery(const ServingOptions& o);
//! What the engine release (o.engine, o.engine_version) prints at start-up about its KV
//! cache, one line per rank where it prints one per rank (vLLM V1: "Available KV cache
//! memory", then "GPU KV cache size: N tokens" and "Maximum concurrency ..."; vLLM V0:
//! "# GPU blocks: N, # CPU blocks: M"; SGLang: "KV Cache is allocated. #tokens: ...";
//! TensorRT-LLM: "[MemUsageChange] Allocated ..."), or empty for --engine ideal.
std::string engine_startup_lines(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o,
                                 const MemoryBudget& b, const Capacity& c);
//! Releases kvplan models for an engine, oldest first; the last is the one an empty
//! ServingOptions::engine_version means. Empty for Engine::ideal.
std::vector<std::string> engine_versions(Engine e);
//! The modelled release `version` belongs to ("0.10.2" -> "0.10"), or empty when none does.
std::string match_engine_version(Engine e, const std::string& version);

// ---------------------------------------------------------------- KV traffic per step
//! How many keys each attention layer touches, and so how many KV bytes a step moves:
//! the one place where a per-layer window (ModelConfig::layer_window) meets step time.
//! A decode step of a sequence holding `context` tokens reads, in every layer l,
//! min(context, window_l) tokens of K and V (all of them for full-attention layers); a
//! prefill chunk writes each of its new tokens once in every layer (a sliding layer
//! frees a block only once the window has passed it, so it still stores every token).
//! Key counts are averaged over the layers of one GPU's PP stage (the heaviest, as for
//! kv_bytes_per_token_per_gpu), so `keys x kv_bytes_per_token_per_gpu` is that GPU's
//! bytes and `keys x all-layer FLOPs per pair` the attention FLOPs.
class KvTraffic {
 public:
  KvTraffic(const ModelConfig& m, const ServingOptions& o);
  //! Layer-mean keys one decoding sequence with `context` tokens attends to.
  double decode_keys(int64_t context) const;
  //! Layer-mean query-key pairs of `chunk` new tokens after `cached` cached ones:
  //! sum over queries p = cached+1 .. cached+chunk of min(p, window_l).
  double prefill_pairs(int64_t cached, int64_t chunk) const;
  //! KV bytes one GPU reads for one sequence's decode step (kv_decode_read_bytes_per_gpu).
  double decode_read_bytes(int64_t context) const;
  //! KV bytes one GPU reads for `keys` layer-mean keys (a sum of decode_keys over sequences).
  double read_bytes_for_keys(double keys) const { return bytes_per_token_ * keys; }
  //! KV bytes one GPU writes for `chunk` new tokens of one sequence.
  double prefill_write_bytes(int64_t chunk) const { return bytes_per_token_ * static_cast<double>(chunk); }
  //! True when some layer has a window (decode_keys is then not simply `context`).
  bool windowed() const { return windowed_; }

 private:
  struct Group {
    int64_t window = 0;  // 0 = full attention
    double layers = 0;   // layers of the stage with this window
  };
  std::vector<Group> groups_;
  double layers_ = 1;
  double bytes_per_token_ = 0;
  bool windowed_ = false;
  // DeepSeek-V4: the stage's compress ratios and what a decode step reads per entry
  // (decode_read_bytes); its keys are not one kind, so decode_keys and prefill_pairs refuse.
  std::vector<int64_t> csa_ratios_;
  int64_t csa_window_ = 0, csa_topk_ = 0;
  double csa_entry_bytes_ = 0, csa_index_bytes_ = 0;
  std::string model_;
  [[noreturn]] void refuse_csa() const;
};
//! DeepSeek-V4's cache layouts (kv.cpp), bytes per entry: one K=V latent, one indexer key.
int64_t csa_entry_bytes(const ModelConfig& m);
int64_t csa_index_bytes(const ModelConfig& m);
//! KV bytes one GPU reads in one decode step of one sequence with `context` tokens,
//! each layer capped at its window (KvTraffic::decode_read_bytes).
double kv_decode_read_bytes_per_gpu(const ModelConfig& m, const ServingOptions& o, int64_t context);

// ---------------------------------------------------------------- roofline
enum class Bound { memory, compute };
std::string_view to_string(Bound b);

struct StepTime {
  double time_s = 0;
  double compute_s = 0;       // FLOPs / (peak x efficiency), per GPU
  double memory_s = 0;        // bytes / (bandwidth x efficiency), per GPU
  double communication_s = 0; // TP all-reduces and PP sends (and dcp_communication_s)
  double dcp_communication_s = 0;  // the DCP group's attention merge (--dcp), in communication_s
  double overhead_s = 0;      // kernel floors, step_overhead_s and the host time the step adds
  double gpu_s = 0;           // the GPU's side: everything but the host's CPU work
  double host_s = 0;          // EngineCore's CPU work per sequence, whether or not it adds (roofline.cpp)
  double lora_s = 0;          // the batched LoRA kernels (planner/lora.h), per GPU; in time_s
  double flops = 0;           // whole model
  double bytes = 0;           // per GPU
  Bound bound = Bound::memory;
};

namespace detail {
struct TunedMoeConfig;  // planner/moe_configs.h
}  // namespace detail

//! Step-time model of one engine iteration, shared by the planner and the simulator.
//! Built once per (model, GPU, options); each call is O(1) and allocation-free.
class StepTimeModel {
 public:
  StepTimeModel(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o);
  //! One iteration: `prefill_tokens` new prompt tokens whose chunks attend to
  //! `prefill_attn_pairs` layer-mean query-key pairs (KvTraffic::prefill_pairs), plus
  //! `decode_seqs` decoding sequences attending to `decode_keys` layer-mean keys in all
  //! (the sum of KvTraffic::decode_keys over them; the sum of contexts without windows).
  //! `prefill_seqs`: how many prompts the prefill tokens belong to; with --dp the step's
  //! sequences are dealt to the data-parallel ranks (docs/parallelism.md).
  //! `prefill_context_tokens`: the cached tokens those prompts' chunks follow, summed over
  //! them (MLA prefill decompresses them again: PairFlops).
  //! `lora`: the step's LoRA work as the simulator tracks it (--enable-lora); null: the
  //! worst case the slots allow.
  StepTime step(int64_t prefill_tokens, double prefill_attn_pairs, int64_t decode_seqs,
                double decode_keys, int64_t prefill_seqs = 1, double prefill_context_tokens = 0,
                const LoraStepLoad* lora = nullptr) const;
  //! The per-layer window accounting every step goes through.
  const KvTraffic& kv_traffic() const { return kv_; }
  //! Prefill of one prompt of T tokens, alone.
  StepTime prefill(int64_t tokens) const;
  //! One decode step of `batch` sequences, each with `context` keys.
  StepTime decode(int64_t batch, int64_t context) const;
  //! Under --dcp: bytes one GPU sends per attention layer to merge `decode_tokens` tokens'
  //! partial attention over its DCP group (all-gather Q and LSE, reduce-scatter O), and
  //! the step's time for it over all layers; 0 without DCP.
  double dcp_bytes_per_layer(double decode_tokens) const;
  double dcp_communication_s(double decode_tokens) const;
  //! A step of back-to-back steps from its GPU and host parts: their sum, or the longer
  //! of the two where the engine overlaps them (vLLM V1's async scheduling).
  double compose(double gpu_s, double host_s) const;

 private:
  // A step's attention: FLOPs of the prefill chunks and of the decoding sequences (TP
  // shards them with the heads), FLOPs every TP rank runs whole, KV bytes one GPU reads.
  struct AttentionWork {
    double prefill_flops = 0, decode_flops = 0, replicated_flops = 0, read_bytes = 0;
  };
  StepTime step(int64_t prefill_tokens, const AttentionWork& a, int64_t decode_seqs, int64_t prefill_seqs,
                double prefill_context_tokens, const LoraStepLoad* lora) const;
  // Rows one expert slot computes in the fused-MoE kernel for `tokens` tokens routed to it
  // with probability p each, padded to BLOCK_SIZE_M; moe_align_block_size's launches.
  double fused_moe_rows(double tokens, double p) const;
  double moe_align_kernels(double tokens) const;

  // Copied, not referenced: the model need not outlive the step model.
  int64_t layers_ = 0, hidden_size_ = 0;
  KvTraffic kv_;
  // DeepSeek-V4: its attention is priced from the model's layers (prefill, decode).
  std::shared_ptr<const ModelConfig> csa_;
  double peak_flops_per_gpu_, bw_bytes_per_s_, link_bytes_per_s_;
  double prefill_eff_, decode_eff_;
  double weight_bytes_, act_bytes_per_elem_;
  double linear_flops_per_token_, attn_flops_per_pair_, lm_head_flops_;
  double prefill_attn_flops_per_pair_ = 0, context_flops_per_token_ = 0;  // PairFlops
  double moe_expert_bytes_, moe_dense_bytes_;  // per GPU; for experts touched per step
  int64_t tp_, pp_, experts_, top_k_, moe_layers_per_gpu_;
  // Expert and data parallelism (docs/parallelism.md): dp attention ranks; the MoE token
  // exchange per MoE layer and direction, per token of the replica.
  int64_t dp_ = 1, moe_layers_ = 0;
  double moe_slots_ = 0, moe_local_slots_ = 0;  // physical expert slots (EPLB's included): all, per GPU
  double moe_row_flops_ = 0;       // per GPU: one token row through one expert slot's GEMMs
  bool moe_block_quant_ = false;   // fp8 W8A8 with block scales: BLOCK_SIZE_M 64
  const detail::TunedMoeConfig* moe_tuned_ = nullptr;  // vLLM's tuned config for the shape, if it ships one
  double routed_flops_per_token_ = 0;         // whole model: top_k experts in every MoE layer
  double moe_exchange_bytes_per_rank_token_ = 0;  // EP with DP: per token of the GPU's rank
  double moe_exchange_bytes_per_token_ = 0;       // DP without EP: per token of the replica
  double moe_exchange_bytes_per_s_ = 0;
  double allreduce_bytes_per_token_;
  // The calibrated model (Calibration: gemm_* > 0): additive per-kernel costs.
  bool refined_ = false;
  bool custom_allreduce_ = false;  // vLLM's custom all-reduce at its measured H100 cost
  double gemm_flops_per_s_ = 0, gemm_bytes_per_s_ = 0, elementwise_bytes_per_s_ = 0;
  double kernel_floor_s_ = 0, kernels_per_step_ = 0, elementwise_bytes_per_token_ = 0;
  double attn_flops_per_s_ = 0;
  double embedding_table_bytes_ = 0;  // per GPU; input embedding table apart from the LM head
  double step_overhead_s_ = 0, step_overhead_per_seq_s_ = 0;
  bool host_overlaps_ = false;  // vLLM V1's async scheduling: the host runs beside the GPU
  double allreduce_latency_s_ = 0, allreduce_bus_bytes_per_s_ = 0;
  // Beyond the scale-up domain (GpuSpec::scale_up_domain_gpus): a TP all-reduce is
  // hierarchical (domain_tp_ GPUs at the link, tp / domain_tp_ domains over the NIC); of
  // the pp - 1 stage boundaries, pp_crossings_ go over the NIC.
  int64_t domain_tp_ = 1, pp_crossings_ = 0;
  std::optional<LoraMemory> lora_;  // --enable-lora: the slots the LoRA kernels read
  double scale_out_bytes_per_s_ = 0, scale_out_latency_s_ = 0;
  // Decode context parallelism: per decode token, the bytes of the three merge
  // collectives' buffers (before the (dcp-1)/dcp a ring moves), and their link.
  int64_t dcp_ = 1;
  double dcp_bytes_per_token_ = 0, dcp_link_bytes_per_s_ = 0, dcp_latency_s_ = 0;
  bool dcp_in_domain_ = true;
};

//! When the model's GPUs (TP x PP x DP) span more than one scale-up domain of `g`: which
//! collectives cross the scale-out link, in words; empty otherwise. Throws InputError
//! when the GPU's file lacks the figures that decide it (scale_up, kv_links rdma).
std::string scale_out_note(const GpuSpec& g, const ServingOptions& o);

//! How a calibration's memory-bound efficiencies (GEMM weight reads, KV reads, elementwise
//! bytes; fractions of the datasheet bandwidth of the GPU it was fitted on, `c.gpu`)
//! carry to GPU `g`: factor = (g's measured / datasheet bandwidth) / (the fitted GPU's
//! measured / datasheet), so the fitted efficiency is read as a share of what the fitted
//! GPU can really stream. `measured` is false, and factor 1 (the datasheet fraction
//! carried over as before), when either GPU has no measured ceiling or no GPU is named.
struct CeilingTransfer {
  double factor = 1;
  bool measured = false;
};
CeilingTransfer memory_bandwidth_transfer(const Calibration& c, const GpuSpec& g);
//! The same for the GEMM FLOP efficiency (a fraction of the fitted GPU's datasheet peak):
//! factor = (g's measured GEMM FLOP/s / its peak) / (the fitted GPU's measured / peak), both
//! measured at the same dtype (configs/gpus `measured.gemm_dtype`); factor 1 and `measured`
//! false where either GPU lacks the figure or the dtypes differ. Prefill attention's FLOP
//! efficiency is not transferred (no same-method attention figure: docs/calibration.md).
CeilingTransfer gemm_flops_transfer(const Calibration& c, const GpuSpec& g);

// ---------------------------------------------------------------- the plan
struct Plan {
  int64_t context_tokens = 0;
  int64_t batch = 1;
  int64_t params = 0;
  DType weight_dtype = DType::bf16;
  DType kv_dtype = DType::bf16;
  MemoryBudget memory;
  int64_t kv_bytes_per_token = 0;      // whole model, one copy
  int64_t kv_bytes_per_token_per_gpu = 0;
  int64_t kv_bytes_per_request = 0;    // whole model, context_tokens, before rounding
  int64_t state_bytes_per_request = 0; // whole model: Mamba / linear-attention state
  Capacity capacity;
  FlopBreakdown prefill, decode_step, generate_cached, generate_naive;
  double seed_naive_projection_flops = 0;
  StepTime prefill_time, decode_time;  // decode_time: `batch` sequences at the context
  bool fits = false;                   // weights fit and `batch` requests fit
  std::optional<SharedPrefixCapacity> shared_prefix;  // --shared-prefix-tokens
  std::string weight_format;           // "bf16", or the quantization in force ("fp8", "mxfp4", ...)
  std::string scale_out_note;          // which collectives leave the scale-up domain (scale_out_note)
  CeilingTransfer bandwidth_transfer;  // the calibration's memory-bound efficiencies on this GPU
  CeilingTransfer gemm_transfer;       // and its GEMM FLOP efficiency
  //! What paging bought: the longest request the engine admits (--max-model-len, else the
  //! derived maximum) and the requests the same pool holds when each reserves that many
  //! tokens up front, as engines allocated before PagedAttention (docs/speculative.md).
  int64_t max_model_len = 0;
  int64_t contiguous_max_requests = 0;
  std::optional<HostKvTier> host_tier;  // --kv-offloading-size
  //! Under --dcp: the same options at DCP 1, for the plan to state what DCP changed.
  struct WithoutDcp {
    Capacity capacity;
    int64_t kv_bytes_per_token_per_gpu = 0;
    StepTime decode_time;
    bool fits = false;
  };
  std::optional<WithoutDcp> without_dcp;
  //! Under --dcp: bytes one GPU sends per attention layer in the decode step's merge.
  double dcp_bytes_per_layer = 0;
};

//! Everything above for one configuration. Throws InputError on impossible options.
Plan make_plan(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o,
               int64_t context_tokens, int64_t batch);

//! The model with num_key_value_heads replaced by the --kv-heads what-if, if any.
ModelConfig apply_what_if(const ModelConfig& m, const ServingOptions& o);

}  // namespace kvplan
