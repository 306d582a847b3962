// kvplan io: the family registry, one data table of every model_type kvplan reads.
// config_io.cpp's reader dispatches on a row's fields (its layer plan, attention kind,
// norms, biases, defaults), never on the family's name; `kvplan models --families` and
// docs/models.md (a block generated from registry_markdown()) list the same rows.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kvplan::io {

//! How the layers are laid out beyond "every layer attention + MLP" (io/config_io.cpp
//! apply_layer_plan): the standard decoder, or a hybrid's rule.
enum class LayerPlan { standard, jamba, nemotron_h, gated_deltanet, mimo_v2, llama4, nemotron_nas, gemma4, lfm2, mllama };
//! The attention a family's layers hold, as far as it changes the reading.
enum class Attention {
  gqa,          //!< MHA/GQA/MQA from num_key_value_heads (MLA too when kv_lora_rank is set)
  mla_indexed,  //!< MLA plus the sparse-attention indexer's key cache (index_head_dim, index_n_heads)
  falcon,       //!< one K/V head by multi_query, num_kv_heads with new_decoder_architecture
  softmax_list, //!< GQA; attn_type_list must mark every layer softmax (1)
  //! DeepSeek-V4: one K=V latent per token in a sliding window, compressed by compress_ratios
  //! per layer, an indexer over the ratio-4 layers, hyper-connections (hc_mult)
  compressed_sparse,
};
//! Per-head q/k RMSNorms (always, or with use_qk_norm), or one RMSNorm over all query heads
//! and one over all key heads (whole: OLMo-2/3, MiniMax-M2).
enum class QkNorm { none, always, by_use_qk_norm, whole };
//! Which layers slide when a sliding_window is set without layer_types (then every
//! global_every-th layer is global, sliding_window_pattern overriding the period).
enum class Sliding {
  all,   //!< every layer (use_sliding_window, default true, may turn it off)
  qwen,  //!< only with use_sliding_window true (default false), from max_window_layers on
  //! only with use_sliding_window true (default false), on the layers without RoPE
  //! (no_rope_layers 0, else every no_rope_layer_interval-th: SmolLM3Config)
  nope_layers,
};
enum class RowKind { family, wrapper, alias };
//! How a wrapper's vision tower is counted (io/config_io.cpp tower_params): a ViT whose
//! projector is one linear layer or Qwen-VL's patch merger; LFM2-VL's SigLIP2 with a pixel
//! unshuffle of downsample_factor^2 patches into a two-layer MLP of projector_hidden_size;
//! Mllama's tiled encoder (local and gated global layers, tile and aspect-ratio position
//! embeddings), whose image tokens the text model's cross-attention layers cache.
enum class VisionProjector { linear, pixel_unshuffle_mlp, mllama, llava_mlp };
//! A wrapper's audio tower: none (an audio_config is refused), or Voxtral's Whisper
//! encoder with its two-matrix projector.
enum class AudioTower { none, whisper };

//! A key the configuration class fills in when config.json leaves it out.
struct FamilyDefault {
  const char* key;
  int64_t value;
};

//! A key a family spells its own way, read as the common key of the same meaning
//! (ERNIE-4.5's moe_num_experts is n_routed_experts); a file holding both is refused.
struct KeyAlias {
  const char* key;
  const char* means;
};

//! A key read only at the value kvplan counts (use_bias false: no biases); a file that sets
//! it otherwise is refused naming the key.
struct FixedKey {
  const char* key;
  const char* value;
};

//! One registry row. A family row says how its config is read; a wrapper row where its
//! text model sits; an alias row which family a nested text model_type is read as.
struct ModelFamily {
  const char* model_type;
  RowKind kind;
  const char* architecture;  //!< the HF class (family, wrapper) or the model_type read (alias)
  LayerPlan plan = LayerPlan::standard;
  Attention attention = Attention::gqa;
  bool tie_default = false;       //!< the config class's tie_word_embeddings default
  int64_t norms = 2;              //!< norms per decoder layer
  bool ungated = false;           //!< an ungated MLP (GELU, ReLU) with biases everywhere (GPT-2 lineage, OPT)
  bool lm_head_bias = false;      //!< the untied LM head has a bias (PhiForCausalLM's lm_head)
  //! The dense MLP width's key (OPT: ffn_dim); "" where the layer plan gives each layer's.
  const char* intermediate_key = "intermediate_size";
  //! Learned absolute positions: max_position_embeddings + this many rows (-1: none, rotary).
  int64_t learned_positions_offset = -1;
  bool qkv_bias_default = false;  //!< biases on q/k/v without attention_bias in the file
  QkNorm qk_norm = QkNorm::none;
  bool o_bias_with_qkv = false;   //!< the output projection has a bias whenever q/k/v do
  //! attention_bias names the q/k/v biases only: the output projection has none (Qwen2Attention).
  bool o_bias_never = false;
  bool all_sparse = false;        //!< a MoE block in every layer; intermediate_size optional
  //! Quantization ignore lists' "mlp" is the dense MLP beside the routed "experts" (Gemma-4),
  //! not the whole MoE block.
  bool mlp_beside_experts = false;
  Sliding sliding = Sliding::all;
  int64_t global_every = 0;       //!< every Nth layer global (0: none); sliding_window_pattern overrides
  const char* text_key = "";      //!< wrapper: where the language model's keys are
  bool top_level = false;         //!< wrapper: or at the root beside vision_config
  VisionProjector projector = VisionProjector::linear;  //!< wrapper: its vision projector
  AudioTower audio = AudioTower::none;                  //!< wrapper: its audio tower
  const char* keys = "";          //!< the keys it reads beyond the common ones (docs)
  std::span<const FamilyDefault> defaults = {};
  std::span<const KeyAlias> aliases = {};
  std::span<const FixedKey> fixed = {};
  //! The key of each shared expert's width where it need not be moe_intermediate_size
  //! (BailingMoE: n_shared_experts experts of moe_shared_expert_intermediate_size, one MLP).
  const char* shared_expert_width_key = "";
  //! Further defaults used only where the config is a wrapper's text config: the wrapper's
  //! class builds it from the family's configuration class, so a checkpoint may leave the
  //! geometry to that class (llava-hf/llava-1.5-7b-hf); a top-level config must state it.
  std::span<const FamilyDefault> nested_defaults = {};
  const char* source = "";        //!< where the reading and the defaults come from
};

//! Every row, in table order.
std::span<const ModelFamily> model_registry();
//! The family row a model_type is read with (through an alias), or nullptr.
const ModelFamily* find_family(std::string_view model_type);
//! The family row whose architecture is `architecture` (a file without model_type).
const ModelFamily* find_family_by_architecture(std::string_view architecture);
//! The wrapper row of a model_type, or nullptr.
const ModelFamily* find_wrapper(std::string_view model_type);
//! The configuration class's default of `key` for a family, when it has one; `nested`: the
//! config is a wrapper's text config (nested_defaults apply too).
std::optional<int64_t> family_default(const ModelFamily* family, std::string_view key, bool nested = false);
//! Every registered model_type, comma-separated (the refusal message lists them).
std::string supported_model_types();
//! The registry as the Markdown table docs/models.md holds between its markers.
std::string registry_markdown();

}  // namespace kvplan::io
