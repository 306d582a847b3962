// kvplan planner: the value types every component shares (models, GPUs, serving options).
// No I/O, no third-party dependency: gpu_validate links this on machines without yaml-cpp.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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
std::string_view to_string(DType d);
//! Parses fp32|fp16|bf16|fp8|int8|int4|int2 (also float16, bfloat16, half, float32, float).
std::optional<DType> parse_dtype(std::string_view s);

//! Weight quantization as engines load it.
enum class WeightQuant { none, fp8, int8, awq, gptq };
std::string_view to_string(WeightQuant q);
std::optional<WeightQuant> parse_weight_quant(std::string_view s);

//! How a quantized KV cache stores its metadata (see planner/kv.h for each layout).
enum class KvQuant { raw, per_token, kivi, kvquant };
std::string_view to_string(KvQuant q);
std::optional<KvQuant> parse_kv_quant(std::string_view s);

//! How the engine splits GPU memory (planner/engine.h).
enum class Engine { ideal, vllm, sglang, trtllm };
std::string_view to_string(Engine e);
std::optional<Engine> parse_engine(std::string_view s);

//! A decoder-only transformer, in Hugging Face config.json terms.
struct ModelConfig {
  std::string name;
  std::string model_type;
  int64_t hidden_size = 0;          // h
  int64_t num_layers = 0;           // L
  int64_t num_heads = 0;            // n_h (query heads)
  int64_t num_kv_heads = 0;         // n_kv (= n_h for MHA, 1 for MQA)
  int64_t head_dim = 0;             // d_h
  int64_t intermediate_size = 0;    // dense MLP width
  int64_t vocab_size = 0;           // V
  bool tie_word_embeddings = false;
  bool gated_mlp = true;            // SwiGLU/GeGLU (3 matrices) vs GELU MLP (2, phi/gpt2)
  bool linear_bias = false;         // biases on every linear layer (phi-2)
  bool qkv_bias = false;            // biases on q/k/v only (Qwen2)
  int64_t max_position_embeddings = 0;
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

  // rope_scaling of config.json (empty type: none), for the derived maximum length
  // (planner.h derived_max_model_len).
  std::string rope_type;
  double rope_factor = 1;
  int64_t rope_original_max_position_embeddings = 0;

  std::optional<int64_t> published_params;
  std::string source;

  bool is_mla() const { return kv_lora_rank > 0; }
  bool is_moe() const { return num_experts > 0; }
  bool is_moe_layer(int64_t layer) const { return is_moe() && layer >= first_dense_layers; }
  int64_t q_dim() const;  //!< width of the query projection output
};

//! Dense peak throughput per dtype in FLOP/s (2 FLOPs per multiply-add), 0 = unsupported.
struct PeakFlops {
  double fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0, fp8 = 0, int8 = 0;
  double for_dtype(DType d) const;
};

struct GpuSpec {
  std::string name;
  int64_t memory_bytes = 0;                  // as CUDA reports it (cudaMemGetInfo total)
  double memory_bandwidth_bytes_per_s = 0;
  PeakFlops peak_flops;
  double interconnect_bytes_per_s = 0;       // per direction per GPU
  std::optional<double> price_per_hour_usd;
  std::string source;
};

//! Measured efficiencies (gpu_validate writes them; --calibration reads them).
struct Calibration {
  double bandwidth_efficiency = 0.80;  // achieved / datasheet memory bandwidth
  double prefill_flops_efficiency = 0.70;
  double decode_flops_efficiency = 0.50;
  std::optional<int64_t> runtime_reserve_bytes;  // CUDA context + library workspaces
  std::string device;                  // where measured; empty = documented defaults
  bool measured = false;
};

//! What the engine is asked to do; names follow vLLM's flags.
struct ServingOptions {
  int64_t tp = 1;
  int64_t pp = 1;
  std::optional<DType> dtype;          // weights/activations; empty = model's torch_dtype
  WeightQuant quantization = WeightQuant::none;
  std::optional<DType> kv_cache_dtype; // empty = "auto" (activation dtype)
  KvQuant kv_quant = KvQuant::raw;
  int64_t kv_group = 0;                // 0 = the scheme's default (kv.h)
  int64_t kv_residual = -1;            // -1 = the scheme's default
  int64_t block_size = 16;
  double gpu_memory_utilization = 0.90;
  std::optional<int64_t> max_model_len;
  int64_t max_num_seqs = 256;
  bool max_num_seqs_given = false;     // false: the engine's own default applies (planner.h)
  std::optional<int64_t> max_num_batched_tokens;  // empty = engine default
  Engine engine = Engine::ideal;
  std::optional<int64_t> kv_heads;     // what-if override of num_key_value_heads
  bool kv_cache = true;                // false = naive recompute (the seed's baseline)
  Calibration calibration;

  DType activation_dtype(const ModelConfig& m) const;
  DType kv_dtype(const ModelConfig& m) const;
};

}  // namespace kvplan
