// kvplan planner: the value types every component shares (models, GPUs, serving options).
// No I/O, no third-party dependency: gpu_validate links this on machines without yaml-cpp.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "planner/names.h"

namespace kvplan {

//! Bad user input: names the file (or option), the key and what was expected. CLI exit 2.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string key, const std::string& expected, const std::string& got = {});
  const std::string& file() const { return file_; }
  const std::string& key() const { return key_; }

 private:
  std::string file_, key_;
};

//! Element types. Bits per element are exact (int4 = 4 bits, packed).
enum class DType { fp32, fp16, bf16, fp8, int8, int4, int2 };
int dtype_bits(DType d);
//! fp32|fp16|bf16|fp8|int8|int4|int2, also float32, float, float16, half, bfloat16 and
//! fp8_e4m3 (config.json's torch_dtype spellings), in any case.
inline constexpr NameTable<DType, 13> kDTypeNames{{{
    {"fp32", DType::fp32}, {"fp16", DType::fp16}, {"bf16", DType::bf16}, {"fp8", DType::fp8},
    {"int8", DType::int8}, {"int4", DType::int4}, {"int2", DType::int2},
    {"float32", DType::fp32}, {"float", DType::fp32}, {"float16", DType::fp16}, {"half", DType::fp16},
    {"bfloat16", DType::bf16}, {"fp8_e4m3", DType::fp8},
}}, true};
std::string_view to_string(DType d);
std::optional<DType> parse_dtype(std::string_view s);

//! Weight quantization as --quantization names it: vLLM's method names (its
//! QuantizationMethods; none = the flag absent) plus int8, kvplan's W8A8 what-if.
//! planner/quant.cpp weight_quant_of says which a checkpoint accepts.
enum class WeightQuant {
  none, fp8, int8, awq, gptq, awq_marlin, gptq_marlin, marlin, moe_wna16, bitsandbytes,
  compressed_tensors, modelopt, modelopt_fp4, mxfp4, fbgemm_fp8
};
inline constexpr NameTable<WeightQuant, 16> kWeightQuantNames{{{
    {"none", WeightQuant::none}, {"fp8", WeightQuant::fp8}, {"int8", WeightQuant::int8},
    {"awq", WeightQuant::awq}, {"gptq", WeightQuant::gptq}, {"awq_marlin", WeightQuant::awq_marlin},
    {"gptq_marlin", WeightQuant::gptq_marlin}, {"marlin", WeightQuant::marlin},
    {"moe_wna16", WeightQuant::moe_wna16}, {"bitsandbytes", WeightQuant::bitsandbytes},
    {"compressed-tensors", WeightQuant::compressed_tensors}, {"modelopt", WeightQuant::modelopt},
    {"modelopt_fp4", WeightQuant::modelopt_fp4}, {"mxfp4", WeightQuant::mxfp4},
    {"fbgemm_fp8", WeightQuant::fbgemm_fp8},
    // vLLM normalizes the library's Python spelling (ModelConfig._verify_quantization).
    {"compressed_tensors", WeightQuant::compressed_tensors},
}}, true};
std::string_view to_string(WeightQuant q);
std::optional<WeightQuant> parse_weight_quant(std::string_view s);

//! How a quantized KV cache stores its metadata (see planner/kv.h for each layout).
enum class KvQuant { raw, per_token, kivi, kvquant };
inline constexpr NameTable<KvQuant, 4> kKvQuantNames{{{
    {"raw", KvQuant::raw}, {"per-token", KvQuant::per_token}, {"kivi", KvQuant::kivi},
    {"kvquant", KvQuant::kvquant},
}}, true};
std::string_view to_string(KvQuant q);
std::optional<KvQuant> parse_kv_quant(std::string_view s);

//! How the engine splits GPU memory (planner/engine.h).
enum class Engine { ideal, vllm, sglang, trtllm };
inline constexpr NameTable<Engine, 4> kEngineNames{{{
    {"ideal", Engine::ideal}, {"vllm", Engine::vllm}, {"sglang", Engine::sglang},
    {"trtllm", Engine::trtllm},
}}, true};
std::string_view to_string(Engine e);
std::optional<Engine> parse_engine(std::string_view s);

//! What mixes tokens in one layer. Attention layers hold KV bytes per token; Mamba,
//! linear-attention and short-convolution layers hold a fixed state per request, and so do
//! cross-attention layers: the K/V of the request's image tokens (planner/kv.cpp).
enum class Mixer : uint8_t { attention, mamba1, mamba2, linear_attention, short_conv, cross_attention, none };
//! The feed-forward block of one layer.
enum class Ffn : uint8_t { dense, moe, none };

//! The quantizable parts of a layer an ignore list can name.
enum class WeightPart : uint8_t { attention, dense_mlp, experts, shared_experts };

//! Weight quantization a checkpoint declares (its config.json quantization_config), or
//! one --quantization asks for. Bits are per stored weight; scales and zero points are
//! counted per `group` weights (0 = per output row, -1 = one per tensor).
struct QuantSpec {
  std::string method;          // "" = none (weights at the compute dtype)
  int64_t bits = 16;           // stored bits per weight
  int64_t group = 0;           // weights per scale (0 = per output channel, -1 = per tensor)
  int64_t block_rows = 0;      // 2-D block scales (fp8 128x128): rows per block (0 = none)
  int64_t scale_bits = 0;      // bits of one scale
  int64_t zero_bits = 0;       // bits of one zero point (asymmetric schemes)
  std::optional<DType> compute;  // W8A8: the GEMM dtype (fp8/int8); empty = weight-only
  //! W4A4: the activations are quantized to FP4 too (NVFP4 with input scales: ModelOpt
  //! NVFP4, compressed-tensors W4A4), so the GEMMs run at the FP4 tensor rate where the
  //! GPU has the kernel (compute capability 10.0 and above, roofline.cpp) and weight-only
  //! in 16-bit math elsewhere (vLLM's Marlin FP4). False: weight-only everywhere (MXFP4).
  bool fp4_activations = false;
  //! Bits of the per-tensor scales a quantized matrix stores besides its group scales
  //! (NVFP4: weight_scale_2 and input_scale, fp32 each = 64); 0: none.
  int64_t tensor_scale_bits = 0;
  //! The quant_method vLLM derives from the checkpoint (fp8, awq, gptq, compressed-tensors,
  //! modelopt, modelopt_fp4, mxfp4, bitsandbytes, fbgemm_fp8): a --quantization must agree.
  std::string engine_method;
  // modules_to_not_convert / ignore lists, by component: these stay 16-bit.
  bool skip_attention = false, skip_experts = false, skip_dense_mlp = false, skip_shared = false;
  std::vector<int64_t> skip_layers;  // whole layers left unquantized
  //! One part of one layer left unquantized (an ignore list naming
  //! model.layers.3.self_attn.q_proj keeps layer 3's attention 16-bit, not the layer).
  struct LayerPart {
    int64_t layer;
    WeightPart part;
    bool operator==(const LayerPart& o) const { return layer == o.layer && part == o.part; }
  };
  std::vector<LayerPart> skip_parts;
  //! Per part (indexed by WeightPart), its own format where the checkpoint stores parts
  //! apart (DeepSeek-V4's expert_dtype fp4: MXFP4 experts beside FP8 block linears;
  //! ModelOpt MIXED_PRECISION's quantized_layers); null: the part takes this one.
  std::array<std::shared_ptr<const QuantSpec>, 4> parts;
  //! The LM head's format where the checkpoint quantizes it (ModelOpt quantized_layers
  //! naming lm_head); null: 16-bit, as engines keep it otherwise.
  std::shared_ptr<const QuantSpec> lm_head;
  bool active() const { return !method.empty(); }
  //! The quantization `part` of `layer` is stored at: this one, or none (16-bit) where the
  //! checkpoint's ignore list keeps it.
  QuantSpec for_part(WeightPart part, int64_t layer) const;
};

//! A decoder-only transformer, in Hugging Face config.json terms.
struct ModelConfig {
  std::string name;
  std::string model_type;
  int64_t hidden_size = 0;          // h
  int64_t num_layers = 0;           // L
  int64_t num_heads = 0;            // n_h (query heads)
  int64_t num_kv_heads = 0;         // n_kv (= n_h for MHA, 1 for MQA)
  int64_t head_dim = 0;             // d_h
  int64_t intermediate_size = 0;    // dense MLP width (with layer_intermediate: the widest)
  int64_t vocab_size = 0;           // V
  bool tie_word_embeddings = false;
  bool gated_mlp = true;            // SwiGLU/GeGLU (3 matrices) vs GELU MLP (2, phi/gpt2)
  bool linear_bias = false;         // biases on every linear layer (phi-2)
  bool lm_head_bias = false;        // a bias on the untied LM head (phi-2; GPT-NeoX's embed_out has none)
  bool qkv_bias = false;            // biases on q/k/v only (Qwen2)
  int64_t max_position_embeddings = 0;
  //! Learned absolute position embeddings, rows of hidden_size (OPT: max_position_embeddings
  //! + 2, its offset); 0 = rotary or none.
  int64_t learned_positions = 0;
  DType torch_dtype = DType::bf16;

  //! Per layer: 0 = full attention, otherwise the sliding window in tokens.
  std::vector<int64_t> layer_window;

  // Mixture of experts (0 = dense).
  int64_t num_experts = 0;
  int64_t experts_per_token = 0;
  int64_t moe_intermediate_size = 0;
  int64_t num_shared_experts = 0;
  int64_t first_dense_layers = 0;   // first_k_dense_replace

  // Multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank > 0 means MLA.
  int64_t kv_lora_rank = 0;
  int64_t q_lora_rank = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t v_head_dim = 0;

  int64_t shared_expert_intermediate_size = 0;  // Qwen2/3-MoE style shared expert (0 = none)
  bool shared_expert_gate = false;              // its sigmoid gate (h x 1)

  // Per layer (empty = every layer is attention; MoE per first_dense_layers).
  std::vector<Mixer> layer_mixer;
  std::vector<Ffn> layer_ffn;
  //! Per layer, the dense MLP's width where layers differ (Nemotron-NAS block_configs);
  //! empty = intermediate_size in every dense layer.
  std::vector<int64_t> layer_intermediate;
  //! Layers that read another layer's K/V (cross-layer KV sharing): no cache of their own.
  std::vector<uint8_t> layer_kv_shared;
  // Sliding-window layers with their own geometry (MiMo-V2-Flash swa_*): 0 = as full ones.
  int64_t swa_num_heads = 0, swa_num_kv_heads = 0, swa_head_dim = 0, swa_v_head_dim = 0;
  int64_t attn_v_head_dim = 0;     // V head size when it differs from head_dim (0 = same)
  bool attn_output_gate = false;   // Qwen3-Next: q_proj also emits a gate (2 x q width)
  //! Full-attention layers project no V: V is the K projection through a weightless norm
  //! (Gemma-4 attention_k_eq_v); their cache still holds K and V, which differ.
  bool attn_k_eq_v = false;
  //! The router also scales per hidden unit and per expert (Gemma-4: scale [h] and
  //! per_expert_scale [E] beside its projection).
  bool router_scales = false;
  int64_t moe_layer_norms = 0;     // norms a MoE layer adds to norms_per_layer (Gemma-4: 3)
  int64_t norms_per_layer = 2;     // RMS/LayerNorms per layer (Gemma-2/3: 4)
  //! One norm before each block a layer has (DeciLM: a no-op attention or FFN block has no
  //! norm either), instead of norms_per_layer in every layer.
  bool block_norms = false;

  // Mamba (Jamba: mamba1; Nemotron-H, Falcon-H1, Zamba2: mamba2).
  int64_t mamba_inner = 0;         // d_inner = expand x hidden (mamba2: heads x head_dim)
  int64_t mamba_state = 0;         // ssm state size (d_state)
  int64_t mamba_conv_kernel = 0;
  int64_t mamba_heads = 0, mamba_head_dim = 0, mamba_groups = 1;  // mamba2
  int64_t mamba_dt_rank = 0;       // mamba1
  bool mamba_conv_bias = true, mamba_proj_bias = false, mamba_dt_norms = false;
  //! The recurrent (SSM / delta-rule) state's dtype where the checkpoint fixes it (vLLM's
  //! mamba_ssm_cache_dtype from Qwen3.5's mamba_ssm_dtype); unset: the model dtype. The
  //! conv state always takes the model dtype.
  std::optional<DType> ssm_state_dtype;

  //! Gated short convolution (LFM2's Lfm2ShortConv): in_proj h -> 3 x conv_dim (B, C, x),
  //! a depthwise conv of short_conv_kernel taps, out_proj conv_dim -> h; its state is the
  //! last kernel - 1 inputs of conv_dim channels.
  int64_t short_conv_dim = 0, short_conv_kernel = 0;
  bool short_conv_bias = false;
  //! Image tokens a cross-attention layer caches K/V for, once per request (Mllama: one
  //! image of max_num_tiles tiles of (image_size / patch_size)^2 + 1 patches).
  int64_t cross_attention_tokens = 0;
  //! Rows of the input embedding beyond vocab_size (MllamaTextModel: vocab_size + 8).
  int64_t extra_embedding_rows = 0;

  // Linear attention: Gated DeltaNet (Qwen3-Next).
  int64_t linear_key_heads = 0, linear_value_heads = 0, linear_key_head_dim = 0, linear_value_head_dim = 0;
  int64_t linear_conv_kernel = 0;

  //! DeepSeek-V3.2 sparse attention: the lightning indexer caches one key of
  //! index_head_dim per token per layer (0 = none).
  int64_t index_head_dim = 0;
  int64_t index_heads = 0;         // index_n_heads (its query heads)

  //! DeepSeek-V4 compressed sparse attention (vLLM models/deepseek_v4.py): per layer the
  //! compress ratio (1: the sliding window alone; 4: one entry per 4 tokens and an indexer
  //! over them; 128: one entry per 128 tokens); empty = none. One K=V latent of head_dim
  //! (qk_rope_head_dim of it rotary) per entry, in a fixed fp8 layout (planner/kv.cpp).
  std::vector<int64_t> layer_compress_ratio;
  int64_t csa_window = 0;          // sliding_window: the latest tokens every layer keeps whole
  int64_t index_topk = 0;          // index_topk: the ratio-4 entries the indexer selects per query
  int64_t o_groups = 0, o_lora_rank = 0;  // the grouped low-rank output projection
  int64_t hc_mult = 0;             // hyper-connection residual streams (hc_mult)
  int64_t hash_layers = 0;         // first layers routing by a token-id table (num_hash_layers)
  bool o_bias = false;             // bias on the attention output projection
  bool qk_norm = false;            // per-head RMSNorm of q and k (Qwen3, Gemma-3)
  bool qk_norm_whole = false;      // with qk_norm: one RMSNorm over all q heads, one over all k heads (OLMo-3)

  QuantSpec weight_quant;          // as the checkpoint is stored (quantization_config)
  // Vision / audio encoders of a multimodal checkpoint, counted apart from the LM.
  int64_t tower_params = 0;
  std::string tower_note;          // what the tower is ("vision: 27 layers x 1152 ...")
  std::string architecture;        // architectures[0]
  //! How a model_type kvplan has no family entry for was read (the standard-decoder
  //! path, io/config_io.cpp): the layout assumed and the keys used; empty otherwise.
  std::string reading_note;

  // rope_scaling of config.json (empty type: none), for the derived maximum length
  // (planner.h derived_max_model_len).
  std::string rope_type;
  double rope_factor = 1;
  int64_t rope_original_max_position_embeddings = 0;

  //! Multi-token-prediction layers the checkpoint ships beside the main ones (DeepSeek-V3's
  //! num_nextn_predict_layers: 1): not counted in the model's parameters; speculative
  //! decoding with method mtp loads them (planner/speculative.h).
  int64_t num_nextn_predict_layers = 0;
  //! An EAGLE-3 head's own LM-head rows (its config's draft_vocab_size); 0 = vocab_size.
  int64_t draft_vocab_size = 0;

  std::optional<int64_t> published_params;
  std::string source;

  bool is_mla() const { return kv_lora_rank > 0; }
  bool is_moe() const { return num_experts > 0; }
  bool is_csa() const { return !layer_compress_ratio.empty(); }
  int64_t compress_ratio(int64_t layer) const {
    return layer_compress_ratio.empty() ? 0 : layer_compress_ratio[static_cast<size_t>(layer)];
  }
  bool is_moe_layer(int64_t layer) const {
    if (!layer_ffn.empty()) return layer_ffn[static_cast<size_t>(layer)] == Ffn::moe;
    return is_moe() && layer >= first_dense_layers;
  }
  Mixer mixer(int64_t layer) const {
    return layer_mixer.empty() ? Mixer::attention : layer_mixer[static_cast<size_t>(layer)];
  }
  Ffn ffn(int64_t layer) const {
    if (!layer_ffn.empty()) return layer_ffn[static_cast<size_t>(layer)];
    return is_moe_layer(layer) ? Ffn::moe : Ffn::dense;
  }
  //! The dense MLP width of layer `layer`.
  int64_t intermediate(int64_t layer) const {
    return layer_intermediate.empty() ? intermediate_size : layer_intermediate[static_cast<size_t>(layer)];
  }
  //! Does layer `layer` keep K/V per token (attention, not reading a shared cache)?
  bool caches_kv(int64_t layer) const {
    return mixer(layer) == Mixer::attention &&
           (layer_kv_shared.empty() || layer_kv_shared[static_cast<size_t>(layer)] == 0);
  }
  bool has_state_layers() const;  //!< any Mamba or linear-attention layer
  int64_t attention_layers() const;  //!< layers that cache K/V
  int64_t q_dim() const;  //!< width of the query projection output
};

//! Dense peak throughput per dtype in FLOP/s (2 FLOPs per multiply-add), 0 = unsupported.
struct PeakFlops {
  double fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0, fp8 = 0, int8 = 0;
  double fp6 = 0, fp4 = 0;  // Blackwell / CDNA 4 block-scaled formats (MXFP6, NVFP4 / MXFP4)
  double for_dtype(DType d) const;
};

//! One link a serving instance can move KV cache over to another (simulate --disagg):
//! what one GPU's share of it carries, per direction, and the fixed cost per transfer.
struct KvLink {
  double bytes_per_s = 0;
  double latency_s = 0;
};

//! The links of the usual server of a GPU type (the `kv_links` block of a GPU file):
//! NVLink or PCIe within a node, RDMA (InfiniBand / RoCE) or plain Ethernet across nodes.
struct KvLinks {
  int64_t gpus_per_node = 0;
  std::optional<KvLink> nvlink, pcie, rdma, ethernet;
};

struct GpuSpec {
  std::string name;
  int64_t memory_bytes = 0;                  // as CUDA reports it (cudaMemGetInfo total)
  double memory_bandwidth_bytes_per_s = 0;
  PeakFlops peak_flops;
  double interconnect_bytes_per_s = 0;       // per direction per GPU
  std::optional<double> price_per_hour_usd;
  std::string source;
  std::optional<KvLinks> kv_links;           // absent: the file gives no KV transfer links
  //! NVIDIA compute capability x 10 (9.0 -> 90, 12.1 -> 121); 0: not given (AMD parts
  //! name their architecture instead). Decides which kernels engines run (FP8 W8A8 at
  //! 8.9 and above).
  int compute_capability_x10 = 0;
  std::string architecture;                  // "Hopper", "CDNA 3 (gfx942)": for the reader
  //! cudaDeviceProp::name of the part (configs/gpus `cuda_device_names`): vLLM names its tuned
  //! fused-MoE kernel configs after it (planner/moe_configs.cpp); empty: not given.
  std::vector<std::string> cuda_device_names;
  //! Achievable memory bandwidth as a published microbenchmark measured it (configs/gpus
  //! `measured.hbm_bandwidth_bytes_per_s`, at most the datasheet figure) and where it comes
  //! from; nullopt: not measured. A calibration's memory-bound efficiencies are fractions of
  //! the datasheet on the GPU they were fitted on; on another GPU they are scaled by the
  //! ratio of the two GPUs' measured fractions (memory_bandwidth_transfer, planner.h).
  std::optional<double> measured_memory_bandwidth_bytes_per_s;
  std::string measured_source;
  //! Achievable dense GEMM FLOP/s as a published microbenchmark measured it at one dtype
  //! (configs/gpus `measured.gemm_flops_per_s`, `gemm_dtype`: at most that dtype's
  //! datasheet peak) and where it comes from; nullopt: not measured. A calibration's GEMM
  //! FLOP efficiency transfers by the ratio of the two GPUs' measured fractions of peak at
  //! the same dtype (gemm_flops_transfer, planner.h).
  std::optional<double> measured_gemm_flops_per_s;
  DType measured_gemm_dtype = DType::fp8;
  std::string measured_gemm_source;
  //! GPUs one NVLink / xGMI domain joins at interconnect_bytes_per_s (8 on an HGX board,
  //! 72 in an NVL72 rack; 1: no GPU fabric); 0: not given. A collective over more GPUs
  //! crosses the scale-out link (kv_links rdma, else ethernet).
  int64_t scale_up_domain_gpus = 0;
  //! Memory shared with the CPU (GB10): one pool, so what the engine finds free at
  //! start is what the OS left, below memory_bytes.
  std::optional<int64_t> unified_free_at_start_bytes;
  //! The link a collective crosses between scale-up domains: kv_links' rdma, else its
  //! ethernet; nullopt when the file gives neither.
  std::optional<KvLink> scale_out() const {
    if (!kv_links) return std::nullopt;
    return kv_links->rdma ? kv_links->rdma : kv_links->ethernet;
  }
};

//! A measured statement of the time model's error, carried by the calibration file
//! (scripts/accuracy.py writes it from the held-out runs) so that reports show it beside
//! the figures it qualifies. `scope`: the models it concerns; `gpus`: the catalog GPUs it
//! was measured on (empty: any).
struct AccuracyNote {
  enum class Scope { all, dense, moe };
  Scope scope = Scope::all;
  std::vector<std::string> gpus;
  std::string text;
};

//! One held-out run's signed relative error, (predicted - measured) / measured, of its
//! mean TTFT, mean ITL (TPOT) and mean end-to-end latency (scripts/accuracy.py).
struct MeasuredError {
  std::string run;  //!< which run (the accuracy set's id)
  std::string gpu;  //!< catalog GPU it ran on
  bool moe = false; //!< a model with routed experts
  double ttft = 0, tpot = 0, e2e = 0;
};

//! Measured efficiencies (gpu_validate writes them; --calibration reads them).
struct Calibration {
  double bandwidth_efficiency = 0.80;  // achieved / datasheet memory bandwidth
  double prefill_flops_efficiency = 0.70;
  double decode_flops_efficiency = 0.50;
  std::optional<int64_t> runtime_reserve_bytes;  // CUDA context + library workspaces
  std::string device;                  // where measured; empty = documented defaults
  bool measured = false;
  // The step-time model beyond the roofline (docs/calibration.md names each term and
  // its source). Zero keeps the bare roofline of roofline.cpp.
  double request_overhead_s = 0;       // per request outside the GPU: API, tokenize, stream
  // The API server's output processor, one queue per engine that overlaps the next step:
  // a step's outputs are delivered output_overhead_s + output_overhead_per_seq_s x
  // (sequences with a token in it) after the step's end or after the previous step's
  // delivery, whichever is later (sim/engine.cpp; docs/calibration.md).
  double output_overhead_s = 0;          // per step's outputs: receive, decode, dispatch
  double output_overhead_per_seq_s = 0;  // per sequence with a token: detokenize, stream
  double step_overhead_s = 0;          // per step, serial (GPU side): beyond the modelled kernels; roofline.cpp
  double step_overhead_per_seq_s = 0;  // EngineCore CPU per sequence: overlaps the GPU under async scheduling
  double kernel_floor_s = 0;           // shortest kernel: a per-kernel time at tiny sizes
  double gemm_bandwidth_efficiency = 0;  // GEMM weight reads / datasheet bandwidth; 0 = roofline
  double gemm_flops_efficiency = 0;      // large-M GEMM FLOP/s / datasheet peak; 0 = roofline
  double elementwise_bandwidth_efficiency = 0;  // norms, adds, activation, RoPE; 0 = none
  double allreduce_latency_s = 0;      // NCCL all-reduce fixed cost; 0 = roofline's 5 us
  double allreduce_bus_bytes_per_s = 0;  // NCCL bus bandwidth; 0 = the GPU's link
  std::string source;                  // the calibration file's provenance, for reports
  std::string file;                    // where it was loaded from
  //! The catalog GPU the parameters were fitted on, and its datasheet link. On another
  //! GPU the efficiencies (fractions of the datasheet) and the host-side overheads
  //! transfer; the all-reduce terms, absolute figures of that GPU's link, are scaled by
  //! the link ratio and vLLM's custom all-reduce (measured on H100) is not assumed
  //! (roofline.cpp). Empty: a /1 file or a hand-made calibration, applied as is.
  std::string gpu;
  double gpu_interconnect_bytes_per_s = 0;
  //! That GPU's datasheet memory bandwidth and its measured achievable one (0: not
  //! measured): the memory-bound efficiencies transfer by the measured fractions' ratio.
  double gpu_memory_bandwidth_bytes_per_s = 0;
  double gpu_measured_memory_bandwidth_bytes_per_s = 0;
  //! That GPU's measured GEMM FLOP/s over its datasheet peak at the measured dtype (0: not
  //! measured): the GEMM FLOP efficiency transfers by the measured fractions' ratio.
  double gpu_measured_gemm_flops_fraction = 0;
  DType gpu_measured_gemm_dtype = DType::fp8;
  std::vector<AccuracyNote> accuracy;  // the file's measured error statements, if any
  std::vector<MeasuredError> held_out_errors;  // the runs behind them (planner/error_bars.h)

  //! The statements that concern a model with (moe) or without routed experts, run on
  //! catalog GPU `run_gpu`.
  std::vector<std::string> accuracy_for(bool moe, const std::string& run_gpu) const {
    std::vector<std::string> out;
    for (const AccuracyNote& a : accuracy) {
      const bool model = a.scope == AccuracyNote::Scope::all || (a.scope == AccuracyNote::Scope::moe) == moe;
      bool on_gpu = a.gpus.empty();
      for (const std::string& g : a.gpus) on_gpu = on_gpu || g == run_gpu;
      if (model && on_gpu) out.push_back(a.text);
    }
    return out;
  }
};

struct SpecDecode;  // planner/speculative.h

//! vLLM's LoRA engine arguments (vllm/config/lora.py LoRAConfig; planner/lora.h).
struct LoraOptions {
  int64_t max_loras = 1;        //!< --max-loras: adapter slots on the GPU (distinct adapters per batch)
  int64_t max_lora_rank = 16;   //!< --max-lora-rank: every slot is allocated at this rank
  int64_t max_cpu_loras = 0;    //!< --max-cpu-loras: adapters cached in host memory; 0 = max_loras
  //! --lora-target-modules as given (q_proj, qkv_proj, ..., lm_head); empty = every module
  //! the model supports, vLLM's default.
  std::vector<std::string> target_modules;
  // Spelled out: the CUDA sources include this header as C++17 (no defaulted ==).
  bool operator==(const LoraOptions& b) const {
    return max_loras == b.max_loras && max_lora_rank == b.max_lora_rank && max_cpu_loras == b.max_cpu_loras &&
           target_modules == b.target_modules;
  }
};

//! What the engine is asked to do; names follow vLLM's flags.
struct ServingOptions {
  int64_t tp = 1;
  int64_t pp = 1;
  //! Expert parallelism (--ep): each GPU of a PP stage's tp x dp holds num_experts / ep
  //! whole routed experts, each split over tp x dp / ep GPUs. 1 = every expert split over
  //! tp x dp (vLLM without --enable-expert-parallel). docs/parallelism.md.
  int64_t ep = 1;
  //! Data-parallel attention (--dp): dp attention ranks of tp GPUs each share the MoE
  //! layers; each rank holds its own requests' KV (vLLM --data-parallel-size, SGLang
  //! --enable-dp-attention). GPUs of a replica = tp x dp x pp.
  int64_t dp = 1;
  //! EPLB's redundant experts (vLLM --num-redundant-experts, SGLang
  //! --ep-num-redundant-experts): extra physical expert slots per MoE layer, so each GPU
  //! holds (num_experts + redundant) / ep experts. Needs ep > 1.
  int64_t redundant_experts = 0;
  //! Decode context parallelism (vLLM --decode-context-parallel-size / -dcp, from 0.10.2):
  //! the tp GPUs form tp / dcp groups of dcp GPUs; token i of a request is cached on GPU
  //! i % dcp of its group only, so KV the TP split would replicate is sharded by position
  //! instead. Adds no GPU; must divide tp (and tp / num_kv_heads for GQA). 1 = off.
  //! docs/long-context.md.
  int64_t dcp = 1;
  std::optional<DType> dtype;          // weights/activations; empty = model's torch_dtype
  WeightQuant quantization = WeightQuant::none;
  //! none, given (`--quantization none`) or not (auto), is vLLM's absent flag: the
  //! checkpoint's own quantization_config applies (planner.h weight_quant_of). Given, it
  //! is its own row of a comma list, labelled with the format it loads.
  bool quantization_given = false;
  std::optional<DType> kv_cache_dtype; // empty = "auto" (activation dtype)
  KvQuant kv_quant = KvQuant::raw;
  int64_t kv_group = 0;                // 0 = the scheme's default (kv.h)
  std::optional<int64_t> kv_residual;  // empty = the scheme's default
  int64_t block_size = 16;
  double gpu_memory_utilization = 0.90;
  std::optional<int64_t> max_model_len;
  int64_t max_num_seqs = 256;
  bool max_num_seqs_given = false;     // false: the engine's own default applies (planner.h)
  std::optional<int64_t> max_num_batched_tokens;  // empty = engine default
  Engine engine = Engine::ideal;
  std::string engine_version;          // "0.10" (--engine vllm@0.10); empty = the latest modelled release
  bool offline_entry = false;          // vLLM: offline LLM() instead of `vllm serve` (batch defaults differ)
  std::optional<int64_t> kv_heads;     // what-if override of num_key_value_heads
  bool kv_cache = true;                // false = naive recompute (the seed's baseline)
  //! --enable-prefix-caching / --no-enable-prefix-caching; empty = the engine's default
  //! (on: vLLM V1, SGLang's radix cache and TensorRT-LLM's block reuse all default on).
  std::optional<bool> enable_prefix_caching;
  //! --async-scheduling on|off (vLLM V1's flag): the scheduler composes step k + 1 while
  //! step k runs, so a request that arrives during step k waits for step k + 2
  //! (sim/engine.cpp). Empty = the engine release's default (EngineBatchDefaults): on for
  //! vLLM V1 from 0.14, which turned it on by default (PR #27614), off otherwise.
  std::optional<bool> async_scheduling;
  //! --stream-interval N (SGLang's --stream-interval, TensorRT-LLM's `stream_interval`,
  //! vLLM's --stream-interval from 0.12): the API server sends a streamed request's tokens
  //! in chunks of N (planner.h stream_delivery has each engine's rule). Empty = the
  //! engine's default, 1 (a chunk per token) in every modelled release.
  std::optional<int64_t> stream_interval;
  //! Speculative decoding (--speculative-config, planner/speculative.h); null = off.
  std::shared_ptr<const SpecDecode> spec;
  //! LoRA adapters (--enable-lora, planner/lora.h); empty = off.
  std::optional<LoraOptions> lora;
  //! vLLM's --kv-offloading-size (GiB) in bytes: host memory for KV blocks below the GPU
  //! pool, the whole engine's over its tp x pp ranks (OffloadingConnector; planner.h
  //! host_kv_tier). 0 = off.
  int64_t kv_offloading_bytes = 0;
  //! SGLang's HiCache (--enable-hierarchical-cache): a host pool of `ratio` x the GPU
  //! pool's tokens per rank (--hicache-ratio, default 2.0), or `size_bytes_per_gpu`
  //! (--hicache-size GB, 1e9 bytes, per rank) when nonzero. Empty = off.
  struct HiCache {
    double ratio = 2.0;
    int64_t size_bytes_per_gpu = 0;
    // Spelled out: the CUDA sources include this header as C++17 (no defaulted ==).
    bool operator==(const HiCache& b) const { return ratio == b.ratio && size_bytes_per_gpu == b.size_bytes_per_gpu; }
  };
  std::optional<HiCache> hicache;
  //! A local-disk (NVMe) KV tier below the host tier (--kv-disk-size GiB, in bytes): the
  //! engine's over its tp x pp ranks, as --kv-offloading-size; blocks the host tier evicts
  //! demote to it (docs/kv-tiers.md "The disk tier"). 0 = off.
  int64_t kv_disk_bytes = 0;
  //! A remote KV store below the host tier (--kv-remote-size GiB, in bytes): the whole
  //! store, shared by every replica of the fleet, as a Mooncake store's pool is the sum of
  //! the segments its clients contribute (docs/kv-tiers.md "The remote tier"). 0 = off.
  int64_t kv_remote_bytes = 0;
  Calibration calibration;

  //! The GPUs one replica occupies: tp x dp x pp (a data-parallel-attention replica has
  //! dp ranks of tp GPUs in each pipeline stage). The one count that rent, purchase,
  //! reports and layouts all use.
  int64_t gpus_per_replica() const { return tp * dp * pp; }
  DType activation_dtype(const ModelConfig& m) const;
  DType kv_dtype(const ModelConfig& m) const;
};

}  // namespace kvplan
