#include "io/model_registry.h"

namespace kvplan::io {

namespace {

// Defaults a configuration class's __init__ applies when config.json leaves the key out;
// only values that change sizes. The row's source names the file.
constexpr FamilyDefault kGemma2Defaults[] = {{"vocab_size", 256000}};
// Gemma3TextConfig (huggingface/transformers@008f5c8c29be84d4721dc6d1e0fcd72300580be4:
// src/transformers/models/gemma3/configuration_gemma3.py): google/gemma-3-4b's text_config
// leaves out the heads, which are these defaults.
constexpr FamilyDefault kGemma3Defaults[] = {
  {"vocab_size", 262208}, {"max_position_embeddings", 131072}, {"sliding_window", 4096},
  {"num_attention_heads", 8}, {"num_key_value_heads", 4}, {"head_dim", 256},
};
constexpr FamilyDefault kLlama4Defaults[] = {{"attention_chunk_size", 8192}};
// LlamaConfig (huggingface/transformers v4.57 src/transformers/models/llama/configuration_llama.py;
// num_key_value_heads None means num_attention_heads, read so already): llava-hf/llava-1.5-7b-hf's
// text_config names only vocab_size and max_position_embeddings, LlavaConfig building the rest
// from these.
constexpr FamilyDefault kLlamaNestedDefaults[] = {
  {"vocab_size", 32000}, {"hidden_size", 4096}, {"intermediate_size", 11008}, {"num_hidden_layers", 32},
  {"num_attention_heads", 32}, {"max_position_embeddings", 2048},
};
// SmolLM3Config (huggingface/transformers@008e574391258935f3ecc3035c882e73bbcac419:
// src/transformers/models/smollm3/configuration_smollm3.py).
constexpr FamilyDefault kSmolLM3Defaults[] = {
  {"vocab_size", 128256}, {"hidden_size", 2048}, {"intermediate_size", 11008}, {"num_hidden_layers", 36},
  {"num_attention_heads", 16}, {"num_key_value_heads", 4}, {"max_position_embeddings", 32768},
};
// Lfm2Config (huggingface/transformers@05cd1ec14dbe16127778060fb68c34105873015c:
// src/transformers/models/lfm2/configuration_lfm2.py): conv_L_cache 3, block_multiple_of
// 256 (block_auto_adjust_ff_dim true, block_ffn_dim_multiplier 1.0 and conv_bias false are
// read in io/config_io.cpp with the same defaults).
constexpr FamilyDefault kLfm2Defaults[] = {{"conv_L_cache", 3}, {"block_multiple_of", 256}};

// Ernie4_5_MoeConfig (transformers v4.57 models/ernie4_5_moe/configuration_ernie4_5_moe.py):
// its MoE keys under their own names (attribute_map: num_experts = moe_num_experts,
// num_experts_per_tok = moe_k) and defaults; moe_layer_end_index -1 = the last layer.
constexpr KeyAlias kErnieMoeAliases[] = {
  {"moe_num_experts", "n_routed_experts"}, {"moe_k", "num_experts_per_tok"},
  {"moe_num_shared_experts", "n_shared_experts"}, {"moe_layer_start_index", "first_k_dense_replace"},
  {"moe_layer_interval", "decoder_sparse_step"},
};
constexpr FamilyDefault kErnieMoeDefaults[] = {
  {"n_routed_experts", 64}, {"num_experts_per_tok", 6}, {"n_shared_experts", 2}, {"first_k_dense_replace", 1},
};
constexpr FixedKey kNoBias[] = {{"use_bias", "false"}};
// BailingMoE (vllm-project/vllm@3a04cf8f models/bailing_moe.py): num_shared_experts shared
// experts; q/k norms are RMSNorms with use_rmsnorm (LayerNorms with biases otherwise).
constexpr KeyAlias kBailingAliases[] = {{"num_shared_experts", "n_shared_experts"}};
constexpr FixedKey kBailingFixed[] = {{"use_bias", "false"}, {"use_qkv_bias", "false"}, {"use_rmsnorm", "true"}};
// vLLM's RWConfig (vllm-project/vllm@a0aaf7fd vllm/transformers_utils/configs/falcon.py), which
// reads model_type RefinedWeb / RefinedWebModel (Falcon as first published): its attribute_map.
constexpr KeyAlias kRWConfigKeys[] = {{"n_layer", "num_hidden_layers"}, {"n_head", "num_attention_heads"}};

// OLMoE (vllm-project/vllm@048a32c7 models/olmoe.py): qkv_proj and o_proj without biases,
// whatever attention_bias says; transformers' OlmoeAttention reads it, so only false is read.
constexpr FixedKey kNoAttentionBias[] = {{"attention_bias", "false"}};
// GPT-NeoX (GPTNeoXConfig attention_bias, default true): query_key_value and dense with biases.
constexpr FixedKey kAttentionBias[] = {{"attention_bias", "true"}};

constexpr const char* kHf = "transformers v4.57 ";

// clang-format off
constexpr ModelFamily kRegistry[] = {
  // ---------------------------------------------------------------- families
  {.model_type = "llama", .kind = RowKind::family, .architecture = "LlamaForCausalLM",
   .keys = "attention_bias (q/k/v/o biases)", .nested_defaults = kLlamaNestedDefaults,
   .source = "models/llama/configuration_llama.py"},
  {.model_type = "mistral", .kind = RowKind::family, .architecture = "MistralForCausalLM",
   .keys = "sliding_window (every layer)", .source = "models/mistral/configuration_mistral.py"},
  {.model_type = "mixtral", .kind = RowKind::family, .architecture = "MixtralForCausalLM",
   .keys = "num_local_experts, num_experts_per_tok", .source = "models/mixtral/configuration_mixtral.py"},
  {.model_type = "qwen2", .kind = RowKind::family, .architecture = "Qwen2ForCausalLM", .qkv_bias_default = true,
   .sliding = Sliding::qwen, .keys = "use_sliding_window, max_window_layers", .source = "models/qwen2/configuration_qwen2.py"},
  {.model_type = "qwen2_moe", .kind = RowKind::family, .architecture = "Qwen2MoeForCausalLM", .qkv_bias_default = true,
   .sliding = Sliding::qwen, .keys = "num_experts, shared_expert_intermediate_size (gated), decoder_sparse_step, mlp_only_layers",
   .source = "models/qwen2_moe/configuration_qwen2_moe.py"},
  {.model_type = "qwen3", .kind = RowKind::family, .architecture = "Qwen3ForCausalLM", .qk_norm = QkNorm::always,
   .sliding = Sliding::qwen, .keys = "head_dim", .source = "models/qwen3/configuration_qwen3.py"},
  {.model_type = "qwen3_moe", .kind = RowKind::family, .architecture = "Qwen3MoeForCausalLM", .qk_norm = QkNorm::always,
   .sliding = Sliding::qwen, .keys = "num_experts, moe_intermediate_size, decoder_sparse_step, mlp_only_layers",
   .source = "models/qwen3_moe/configuration_qwen3_moe.py"},
  {.model_type = "qwen3_next", .kind = RowKind::family, .architecture = "Qwen3NextForCausalLM", .plan = LayerPlan::gated_deltanet,
   .qk_norm = QkNorm::always, .sliding = Sliding::qwen,
   .keys = "full_attention_interval (default 4) or layer_types, linear_* (Gated DeltaNet), attn_output_gate, shared expert + gate",
   .source = "models/qwen3_next/configuration_qwen3_next.py"},
  // Qwen3.5 / 3.6 (vllm/model_executor/models/qwen3_5.py: Qwen3-Next's decoder layer; a
  // dense MLP in every layer for qwen3_5_text, Qwen3-Next's sparse MoE for qwen3_5_moe_text).
  {.model_type = "qwen3_5_text", .kind = RowKind::family, .architecture = "Qwen3_5ForCausalLM", .plan = LayerPlan::gated_deltanet,
   .qk_norm = QkNorm::always, .sliding = Sliding::qwen,
   .keys = "Qwen3-Next's layer plan, a dense MLP in every layer; mamba_ssm_dtype (the delta-rule state under the ForConditionalGeneration architectures)",
   .source = "vllm/model_executor/models/qwen3_5.py"},
  {.model_type = "qwen3_5_moe_text", .kind = RowKind::family, .architecture = "Qwen3_5MoeForCausalLM", .plan = LayerPlan::gated_deltanet,
   .qk_norm = QkNorm::always, .all_sparse = true, .sliding = Sliding::qwen,
   .keys = "Qwen3-Next's layer plan, a sparse MoE block in every layer (no intermediate_size needed)",
   .source = "vllm/model_executor/models/qwen3_5.py"},
  {.model_type = "gemma", .kind = RowKind::family, .architecture = "GemmaForCausalLM", .tie_default = true,
   .keys = "head_dim", .source = "models/gemma/configuration_gemma.py"},
  {.model_type = "gemma2", .kind = RowKind::family, .architecture = "Gemma2ForCausalLM", .tie_default = true, .norms = 4,
   .global_every = 2, .keys = "sliding_window (even layers slide)", .defaults = kGemma2Defaults,
   .source = "models/gemma2/configuration_gemma2.py"},
  {.model_type = "gemma3_text", .kind = RowKind::family, .architecture = "Gemma3ForCausalLM", .tie_default = true, .norms = 4,
   .qk_norm = QkNorm::always, .global_every = 6, .keys = "sliding_window_pattern (default 6: five local, one global) or layer_types",
   .defaults = kGemma3Defaults, .source = "models/gemma3/configuration_gemma3.py"},
  // Granite: Llama's geometry; its multipliers scale activations, not shapes.
  {.model_type = "granite", .kind = RowKind::family, .architecture = "GraniteForCausalLM",
   .keys = "Llama's (embedding/residual/attention multipliers change no size)", .source = "models/granite/configuration_granite.py"},
  // SmolLM3 (SmolLM3Config above; modeling_smollm3.py): Llama's layers; every
  // no_rope_layer_interval-th layer skips RoPE (no_rope_layers 0), which moves no size;
  // without layer_types those NoPE layers slide when use_sliding_window (default false) and
  // sliding_window are set; the LM head tied by default.
  {.model_type = "smollm3", .kind = RowKind::family, .architecture = "SmolLM3ForCausalLM", .tie_default = true,
   .sliding = Sliding::nope_layers,
   .keys = "no_rope_layers, no_rope_layer_interval (NoPE layers: no size; they slide with use_sliding_window), layer_types",
   .defaults = kSmolLM3Defaults, .source = "transformers@008e5743 models/smollm3/configuration_smollm3.py"},
  // LFM2 (Lfm2Config, Lfm2DecoderLayer at huggingface/transformers@0096ba4f66d4f5f7b1d4e162f8a75d0894b40ea8
  // models/lfm2/modeling_lfm2.py; vllm/model_executor/models/lfm2.py): layer_types "conv" =
  // gated short convolution (Lfm2ShortConv, a state of conv_L_cache - 1 inputs per request),
  // "full_attention" = GQA with per-head q/k RMSNorms; the SwiGLU MLP of every layer is
  // int(2 block_ff_dim / 3) scaled by block_ffn_dim_multiplier and rounded up to
  // block_multiple_of (Lfm2MLP with block_auto_adjust_ff_dim).
  {.model_type = "lfm2", .kind = RowKind::family, .architecture = "Lfm2ForCausalLM", .plan = LayerPlan::lfm2, .tie_default = true,
   .intermediate_key = "", .qk_norm = QkNorm::always,
   .keys = "layer_types (conv / full_attention), conv_L_cache, conv_dim, conv_bias, block_ff_dim (or intermediate_size), block_auto_adjust_ff_dim, block_ffn_dim_multiplier, block_multiple_of",
   .defaults = kLfm2Defaults, .source = "transformers@0096ba4f models/lfm2/modeling_lfm2.py; vllm/model_executor/models/lfm2.py"},
  // Mllama's text model (MllamaTextModel, transformers models/mllama/modeling_mllama.py):
  // Llama self-attention layers, and at cross_attention_layers layers that attend to the
  // image's vision states instead (MllamaCrossAttentionDecoderLayer: q/k/v/o, q/k RMSNorms,
  // two tanh gates), whose K/V are cached once per request; embed_tokens has vocab_size + 8
  // rows. Planned with --engine ideal (the engine models do not follow a cross-attention cache).
  {.model_type = "mllama_text_model", .kind = RowKind::family, .architecture = "MllamaForCausalLM", .plan = LayerPlan::mllama,
   .keys = "cross_attention_layers (cross-attention to the image tokens: K/V per request); embed_tokens of vocab_size + 8 rows",
   .source = "transformers@00368133 models/mllama/modeling_mllama.py"},
  // EXAONE 4.0: Llama's projections with per-head q/k RMSNorms and the two norms after
  // attention and MLP (QK-Reorder-Norm); layer_types mark three sliding layers in four
  // (sliding_window_pattern "LLLG" restates them; without layer_types the file is refused).
  {.model_type = "exaone4", .kind = RowKind::family, .architecture = "Exaone4ForCausalLM", .qk_norm = QkNorm::always,
   .keys = "layer_types (sliding_attention / full_attention), sliding_window", .source = "models/exaone4/configuration_exaone4.py"},
  // OLMo-3: OLMo-2's post-norms and q/k RMSNorms over all heads (Olmo3Attention: q_norm of
  // num_heads x head_dim, k_norm of num_kv_heads x head_dim); layer_types for its sliding layers.
  {.model_type = "olmo3", .kind = RowKind::family, .architecture = "Olmo3ForCausalLM", .qk_norm = QkNorm::whole,
   .keys = "layer_types (sliding_attention / full_attention), sliding_window", .source = "models/olmo3/configuration_olmo3.py"},
  {.model_type = "phi", .kind = RowKind::family, .architecture = "PhiForCausalLM", .norms = 1, .ungated = true, .lm_head_bias = true,
   .keys = "GELU MLP with biases, one LayerNorm a layer", .source = "models/phi/configuration_phi.py"},
  // OPT (OPTDecoderLayer): q/k/v/out projections and fc1/fc2 (ReLU, ungated) all with
  // biases (enable_bias), two LayerNorms a layer and a final one, learned positions of
  // max_position_embeddings + 2 rows (OPTLearnedPositionalEmbedding's offset), the LM head
  // tied to the embedding. Only word_embed_proj_dim = hidden_size with pre-norm layers is
  // read (opt-350m's projections and post-norm are refused by name).
  {.model_type = "opt", .kind = RowKind::family, .architecture = "OPTForCausalLM", .tie_default = true,
   .ungated = true, .intermediate_key = "ffn_dim", .learned_positions_offset = 2,
   .keys = "ffn_dim (ReLU MLP with biases), learned positions (max_position_embeddings + 2); word_embed_proj_dim = hidden_size, do_layer_norm_before true",
   .source = "models/opt/configuration_opt.py, modeling_opt.py"},
  {.model_type = "phi3", .kind = RowKind::family, .architecture = "Phi3ForCausalLM", .keys = "sliding_window",
   .source = "models/phi3/configuration_phi3.py"},
  {.model_type = "deepseek_v2", .kind = RowKind::family, .architecture = "DeepseekV2ForCausalLM",
   .keys = "MLA (kv_lora_rank, q_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim), n_routed_experts, n_shared_experts, first_k_dense_replace",
   .source = "models/deepseek_v2/configuration_deepseek_v2.py"},
  {.model_type = "deepseek_v3", .kind = RowKind::family, .architecture = "DeepseekV3ForCausalLM",
   .keys = "DeepSeek-V2's; num_nextn_predict_layers (MTP, not counted)", .source = "models/deepseek_v3/configuration_deepseek_v3.py"},
  {.model_type = "deepseek_v32", .kind = RowKind::family, .architecture = "DeepseekV32ForCausalLM", .attention = Attention::mla_indexed,
   .keys = "DeepSeek-V3's; index_head_dim, index_n_heads (the indexer's fp8 key cache + fp32 scale per 128)",
   .source = "vllm DeepseekV32IndexerCache"},
  {.model_type = "kimi_k2", .kind = RowKind::family, .architecture = "DeepseekV3ForCausalLM", .keys = "DeepSeek-V3's",
   .source = "models/deepseek_v3/configuration_deepseek_v3.py"},
  // GLM-4.7-Flash: DeepSeek-V3's MLA and MoE layout.
  {.model_type = "glm4_moe_lite", .kind = RowKind::family, .architecture = "Glm4MoeLiteForCausalLM", .keys = "DeepSeek-V3's",
   .source = "models/glm4_moe_lite/configuration_glm4_moe_lite.py"},
  // GLM-5: DeepSeek-V3.2's MLA with the sparse-attention indexer.
  {.model_type = "glm_moe_dsa", .kind = RowKind::family, .architecture = "GlmMoeDsaForCausalLM", .attention = Attention::mla_indexed,
   .keys = "DeepSeek-V3.2's; layer_types all deepseek_sparse_attention", .source = "models/glm_moe_dsa/configuration_glm_moe_dsa.py"},
  // GLM-4.5/4.6/4.7: GQA with partial RoPE, MoE after first_k_dense_replace dense layers,
  // one shared expert; q/k norms only with use_qk_norm.
  {.model_type = "glm4_moe", .kind = RowKind::family, .architecture = "Glm4MoeForCausalLM", .qk_norm = QkNorm::by_use_qk_norm,
   .keys = "partial_rotary_factor (no size), n_routed_experts, n_shared_experts, first_k_dense_replace, use_qk_norm (default false)",
   .source = "models/glm4_moe/configuration_glm4_moe.py"},
  // MiniMax-M2: GQA, RMSNorm over all q and k heads, experts in every layer, no shared expert.
  {.model_type = "minimax_m2", .kind = RowKind::family, .architecture = "MiniMaxM2ForCausalLM", .attention = Attention::softmax_list,
   .qk_norm = QkNorm::whole, .keys = "num_local_experts, attn_type_list (all 1; 0 = lightning attention is refused)",
   .source = "modeling_minimax_m2.py (MiniMaxAI/MiniMax-M2)"},
  {.model_type = "gpt_oss", .kind = RowKind::family, .architecture = "GptOssForCausalLM", .o_bias_with_qkv = true,
   .keys = "layer_types (alternating sliding), attention_bias, num_local_experts, experts_per_token",
   .source = "models/gpt_oss/configuration_gpt_oss.py"},
  // Falcon: the MLP is ffn_hidden_size wide (FalconConfig: 4 x hidden_size when absent;
  // FalconConfig has no intermediate_size). The first published configs (RWForCausalLM,
  // model_type RefinedWeb / RefinedWebModel, aliases below) are read as vLLM's RWConfig
  // reads them: n_layer, n_head, n_head_kv (default 1), new decoder at hidden_size 8192.
  {.model_type = "falcon", .kind = RowKind::family, .architecture = "FalconForCausalLM", .attention = Attention::falcon,
   .tie_default = true, .norms = 1, .ungated = true, .intermediate_key = "",
   .keys = "multi_query (default true: one K/V head), new_decoder_architecture (num_kv_heads, two norms), parallel_attn, bias, ffn_hidden_size (default 4 x hidden_size); RefinedWeb: n_layer, n_head, n_head_kv (default 1), new decoder at hidden_size 8192",
   .aliases = kRWConfigKeys,
   .source = "models/falcon/configuration_falcon.py; vllm@a0aaf7fd vllm/transformers_utils/configs/falcon.py (RWConfig)"},
  {.model_type = "jamba", .kind = RowKind::family, .architecture = "JambaForCausalLM", .plan = LayerPlan::jamba,
   .keys = "attn_layer_period/offset (8/4), expert_layer_period/offset (2/1), mamba_d_state (16), mamba_d_conv (4), mamba_expand (2), mamba_dt_rank (ceil(hidden/16))",
   .source = "models/jamba/configuration_jamba.py"},
  {.model_type = "nemotron_h", .kind = RowKind::family, .architecture = "NemotronHForCausalLM", .plan = LayerPlan::nemotron_h, .norms = 1,
   .keys = "hybrid_override_pattern (M Mamba-2, * attention, - MLP, E MoE), mamba_num_heads, mamba_head_dim, ssm_state_size, n_groups, conv_kernel",
   .source = "models/nemotron_h/configuration_nemotron_h.py"},
  {.model_type = "mimo_v2_flash", .kind = RowKind::family, .architecture = "MiMoV2FlashForCausalLM", .plan = LayerPlan::mimo_v2,
   .keys = "hybrid_layer_pattern (1 = sliding with swa_* heads and head sizes), v_head_dim, moe_layer_freq list",
   .source = "XiaomiMiMo/MiMo-V2-Flash modeling code"},
  {.model_type = "llama4_text", .kind = RowKind::family, .architecture = "Llama4ForCausalLM", .plan = LayerPlan::llama4,
   .keys = "interleave_moe_layer_step, intermediate_size_mlp, attention_chunk_size (chunked RoPE layers), no_rope_layers (global every 4th)",
   .defaults = kLlama4Defaults, .source = "models/llama4/configuration_llama4.py"},
  // Nemotron-NAS (DeciLM, the Llama-Nemotron Super/Ultra line): Llama-3 layers cut down by
  // neural architecture search. block_configs gives each layer's attention (no_op, or GQA
  // with num_attention_heads / n_heads_in_group K/V heads) and FFN (no_op, or a gated MLP
  // of round_up(int(2 ffn_mult hidden / 3), 256)); a no-op block has no norm either
  // (DeciLMDecoderLayer in the checkpoint's modeling_decilm.py and vLLM's
  // models/nemotron_nas.py). Linear replacements, sparsified, windowed or sink attention
  // and per-layer K/V head counts are refused by name.
  {.model_type = "nemotron-nas", .kind = RowKind::family, .architecture = "DeciLMForCausalLM", .plan = LayerPlan::nemotron_nas,
   .intermediate_key = "",
   .keys = "block_configs (per layer: attention no_op / n_heads_in_group, ffn no_op / ffn_mult); intermediate_size and num_key_value_heads null",
   .source = "nvidia/Llama-3_3-Nemotron-Super-49B-v1 modeling_decilm.py; vllm/model_executor/models/nemotron_nas.py"},
  // Gemma-4 (Gemma4TextConfig, huggingface/transformers@0246b4f3 models/gemma4/
  // modeling_gemma4.py; vllm-project/vllm@001cabc1 models/gemma4.py): five sliding layers
  // to one full (layer_types); full layers of global_head_dim with num_global_key_value_heads
  // and no v_proj under attention_k_eq_v; q/k norms with weights, v_norm without; four norms
  // a layer, three more where enable_moe_block adds routed experts beside the dense MLP
  // (which always runs), a router with per-hidden and per-expert scales. Per-layer
  // embeddings (E2B/E4B) and KV-shared layers are refused by name.
  {.model_type = "gemma4_text", .kind = RowKind::family, .architecture = "Gemma4ForCausalLM", .plan = LayerPlan::gemma4,
   .tie_default = true, .norms = 4, .qk_norm = QkNorm::always, .mlp_beside_experts = true,
   .keys = "layer_types, sliding_window, global_head_dim, num_global_key_value_heads, attention_k_eq_v, enable_moe_block (num_experts, top_k_experts, moe_intermediate_size beside the dense MLP); hidden_size_per_layer_input and num_kv_shared_layers 0",
   .source = "transformers@0246b4f3 models/gemma4/modeling_gemma4.py; vllm/model_executor/models/gemma4.py"},
  // DeepSeek-V4 (vllm-project/vllm@023da1fc models/deepseek_v4.py, @0a291a2e
  // layers/deepseek_v4_attention.py, @0de10a27 layers/deepseek_compressor.py): every layer
  // keeps its last sliding_window tokens' latent (head_dim, one K=V head); compress_ratios
  // gives each layer's compression (1 or 0: the window alone; 4: one latent per 4 tokens,
  // read through an indexer of index_n_heads x index_head_dim with its own compressor;
  // 128: one per 128 tokens); the compressors keep fp32 partial states of 2 x ratio (4) or
  // ratio (128) tokens. q through q_lora_rank, output through o_groups low-rank groups of
  // o_lora_rank, hc_mult residual streams mixed by per-layer hyper-connection weights; MoE
  // in every layer, the first num_hash_layers routed by a token-id table. expert_dtype fp4:
  // MXFP4 experts beside the FP8 linears (vLLM DeepseekV4FP8Config); absent, the experts are
  // stored as quantization_config says (deepseek-ai/DeepSeek-V4 inference README: drop
  // expert_dtype for FP8 experts).
  {.model_type = "deepseek_v4", .kind = RowKind::family, .architecture = "DeepseekV4ForCausalLM",
   .attention = Attention::compressed_sparse, .all_sparse = true,
   .keys = "compress_ratios, sliding_window, head_dim, q_lora_rank, qk_rope_head_dim, o_groups, o_lora_rank, index_n_heads, index_head_dim, index_topk, hc_mult, num_hash_layers, n_routed_experts, n_shared_experts, expert_dtype",
   .source = "vllm/model_executor/models/deepseek_v4.py, layers/deepseek_v4_attention.py, layers/deepseek_compressor.py"},
  // MiMo-7B (vllm-project/vllm@055e47c2 models/mimo.py): MiMoModel is Qwen2Model (q/k/v
  // biases, none on o_proj, whatever attention_bias says); its num_nextn_predict_layers MTP
  // layers are loaded by the draft model only (mimo_mtp.py), not counted.
  {.model_type = "mimo", .kind = RowKind::family, .architecture = "MiMoForCausalLM", .qkv_bias_default = true,
   .o_bias_never = true, .sliding = Sliding::qwen,
   .keys = "Qwen2's; num_nextn_predict_layers (MTP, not counted)", .source = "vllm/model_executor/models/mimo.py"},
  // ERNIE-4.5 MoE (vllm-project/vllm@0028a751 models/ernie45_moe.py): Llama's attention
  // (no biases with use_bias false), a dense MLP before moe_layer_start_index and after
  // moe_layer_end_index, else routed experts with moe_num_shared_experts shared ones of
  // moe_intermediate_size (one MLP of their summed width); the router's per-expert score bias
  // (e_score_correction_bias, moe_num_experts values a layer) is not counted.
  {.model_type = "ernie4_5_moe", .kind = RowKind::family, .architecture = "Ernie4_5_MoeForCausalLM", .tie_default = true,
   .keys = "moe_num_experts, moe_k, moe_num_shared_experts, moe_intermediate_size, moe_layer_start_index, moe_layer_end_index, moe_layer_interval; use_bias false",
   .defaults = kErnieMoeDefaults, .aliases = kErnieMoeAliases, .fixed = kNoBias,
   .source = "models/ernie4_5_moe/configuration_ernie4_5_moe.py; vllm/model_executor/models/ernie45_moe.py"},
  // Ling / Ring (BailingMoeForCausalLM and 2.0's BailingMoeV2ForCausalLM, one model_type;
  // vllm-project/vllm@3a04cf8f models/bailing_moe.py reads both): fused query_key_value and
  // dense projections, per-head q/k RMSNorms with use_qk_norm, a dense MLP in the first
  // first_k_dense_replace layers, then routed experts and num_shared_experts shared ones of
  // moe_shared_expert_intermediate_size (moe_intermediate_size without it); norm_head
  // normalizes the LM head's weights, no size.
  {.model_type = "bailing_moe", .kind = RowKind::family, .architecture = "BailingMoeV2ForCausalLM",
   .qk_norm = QkNorm::by_use_qk_norm,
   .keys = "num_experts, num_shared_experts, moe_intermediate_size, moe_shared_expert_intermediate_size, first_k_dense_replace, use_qk_norm; use_bias, use_qkv_bias false, use_rmsnorm true",
   .aliases = kBailingAliases, .fixed = kBailingFixed, .shared_expert_width_key = "moe_shared_expert_intermediate_size",
   .source = "vllm/model_executor/models/bailing_moe.py"},
  // OLMoE (vllm-project/vllm@048a32c7 models/olmoe.py): OLMo's q/k RMSNorms over all heads
  // (q_norm of num_heads x head_dim, k_norm of num_kv_heads x head_dim), a MoE block of
  // num_experts experts of intermediate_size in every layer (top num_experts_per_tok, a router
  // of hidden_size x num_experts), no shared expert; clip_qkv clamps, norm_topk_prob
  // renormalizes: no size.
  {.model_type = "olmoe", .kind = RowKind::family, .architecture = "OlmoeForCausalLM", .qk_norm = QkNorm::whole,
   .keys = "num_experts, num_experts_per_tok (experts of intermediate_size); attention_bias false",
   .fixed = kNoAttentionBias, .source = "models/olmoe/configuration_olmoe.py; vllm/model_executor/models/olmoe.py"},
  // GPT-NeoX / Pythia (vllm-project/vllm@002800f0 models/gpt_neox.py): fused query_key_value
  // and dense with biases, an ungated GELU MLP (dense_h_to_4h, dense_4h_to_h) with biases, two
  // LayerNorms with biases a layer and a final one, embed_out untied and without a bias.
  // rotary_pct (RoPE on a quarter of each head) and use_parallel_residual (attention and MLP
  // read the same input) change no size.
  {.model_type = "gpt_neox", .kind = RowKind::family, .architecture = "GPTNeoXForCausalLM", .ungated = true,
   .keys = "GELU MLP and attention with biases, two LayerNorms a layer; rotary_pct, use_parallel_residual (no size); attention_bias true",
   .fixed = kAttentionBias, .source = "models/gpt_neox/configuration_gpt_neox.py; vllm/model_executor/models/gpt_neox.py"},
  // ---------------------------------------------------------------- multimodal wrappers
  // The language model sits under text_key; top_level: the Hub's own config.json may hold
  // the language keys at the root beside vision_config (Qwen2-VL and Qwen2.5-VL as
  // published, saved before their configuration classes nested a text_config).
  {.model_type = "llama4", .kind = RowKind::wrapper, .architecture = "Llama4ForConditionalGeneration", .text_key = "text_config"},
  {.model_type = "gemma3", .kind = RowKind::wrapper, .architecture = "Gemma3ForConditionalGeneration", .text_key = "text_config"},
  {.model_type = "gemma4", .kind = RowKind::wrapper, .architecture = "Gemma4ForConditionalGeneration", .text_key = "text_config"},
  {.model_type = "mistral3", .kind = RowKind::wrapper, .architecture = "Mistral3ForConditionalGeneration", .text_key = "text_config"},
  // LLaVA (LlavaMultiModalProjector, transformers models/llava/modeling_llava.py): linear_1
  // from the vision width (times the number of vision_feature_layer entries) to the text
  // width, GELU, linear_2 text to text, biases by multimodal_projector_bias (default true).
  {.model_type = "llava", .kind = RowKind::wrapper, .architecture = "LlavaForConditionalGeneration", .text_key = "text_config",
   .projector = VisionProjector::llava_mlp},
  {.model_type = "qwen2_5_vl", .kind = RowKind::wrapper, .architecture = "Qwen2_5_VLForConditionalGeneration", .text_key = "text_config",
   .top_level = true},
  {.model_type = "qwen2_vl", .kind = RowKind::wrapper, .architecture = "Qwen2VLForConditionalGeneration", .text_key = "text_config",
   .top_level = true},
  {.model_type = "qwen3_vl", .kind = RowKind::wrapper, .architecture = "Qwen3VLForConditionalGeneration", .text_key = "text_config"},
  {.model_type = "qwen3_vl_moe", .kind = RowKind::wrapper, .architecture = "Qwen3VLMoeForConditionalGeneration", .text_key = "text_config"},
  {.model_type = "qwen3_5", .kind = RowKind::wrapper, .architecture = "Qwen3_5ForConditionalGeneration", .text_key = "text_config"},
  {.model_type = "qwen3_5_moe", .kind = RowKind::wrapper, .architecture = "Qwen3_5MoeForConditionalGeneration", .text_key = "text_config"},
  {.model_type = "kimi_k25", .kind = RowKind::wrapper, .architecture = "KimiK25ForConditionalGeneration", .text_key = "text_config"},
  {.model_type = "internvl_chat", .kind = RowKind::wrapper, .architecture = "InternVLChatModel", .text_key = "llm_config"},
  {.model_type = "deepseek_vl_v2", .kind = RowKind::wrapper, .architecture = "DeepseekVLV2ForCausalLM", .text_key = "language_config"},
  // LFM2-VL (Lfm2VlMultiModalProjector, vllm/model_executor/models/lfm2_vl.py): a SigLIP2
  // NaFlex tower, pixel unshuffle by downsample_factor, then linear_1 / linear_2.
  {.model_type = "lfm2_vl", .kind = RowKind::wrapper, .architecture = "Lfm2VlForConditionalGeneration", .text_key = "text_config",
   .projector = VisionProjector::pixel_unshuffle_mlp},
  // Llama-3.2-Vision (MllamaForConditionalGeneration): MllamaVisionModel, its projector of
  // vision_output_dim to the text width, and the text model's cross-attention layers.
  {.model_type = "mllama", .kind = RowKind::wrapper, .architecture = "MllamaForConditionalGeneration", .text_key = "text_config",
   .projector = VisionProjector::mllama},
  // Voxtral (transformers models/voxtral/modular_voxtral.py): a Whisper encoder
  // (VoxtralEncoder) and VoxtralMultiModalProjector before a Llama text model.
  {.model_type = "voxtral", .kind = RowKind::wrapper, .architecture = "VoxtralForConditionalGeneration", .text_key = "text_config",
   .audio = AudioTower::whisper},
  // ---------------------------------------------------------------- aliases
  // Text model_types the wrappers nest, read as the family named in .architecture.
  {.model_type = "qwen2_5_vl_text", .kind = RowKind::alias, .architecture = "qwen2"},
  {.model_type = "qwen2_vl_text", .kind = RowKind::alias, .architecture = "qwen2"},
  {.model_type = "qwen3_vl_text", .kind = RowKind::alias, .architecture = "qwen3"},
  {.model_type = "qwen3_vl_moe_text", .kind = RowKind::alias, .architecture = "qwen3_moe"},
  {.model_type = "ministral", .kind = RowKind::alias, .architecture = "mistral"},
  // Falcon's first published model_types (vLLM _CONFIG_REGISTRY: RWConfig for both).
  {.model_type = "RefinedWeb", .kind = RowKind::alias, .architecture = "falcon"},
  {.model_type = "RefinedWebModel", .kind = RowKind::alias, .architecture = "falcon"},
  // Ministral 3 / Devstral Small 2 (transformers v5 Ministral3Config): Mistral's layers;
  // YaRN with llama_4_scaling_beta scales attention, no size.
  {.model_type = "ministral3", .kind = RowKind::alias, .architecture = "mistral"},
  // DeepSeek's reference inference checkpoints (sgl-project's FP8 copies): DeepSeek-V4's keys.
  {.model_type = "deepseek_ref", .kind = RowKind::alias, .architecture = "deepseek_v4"},
};
// clang-format on

const char* plan_name(LayerPlan p) {
  switch (p) {
    case LayerPlan::standard: return "attention + MLP";
    case LayerPlan::jamba: return "Jamba: attention / Mamba-1 periods, MoE periods";
    case LayerPlan::nemotron_h: return "Nemotron-H: Mamba-2 / attention / MLP / MoE blocks";
    case LayerPlan::gated_deltanet: return "full attention / Gated DeltaNet";
    case LayerPlan::mimo_v2: return "MiMo-V2: sliding / full pattern, MoE list";
    case LayerPlan::llama4: return "Llama-4: chunked / global, MoE interleave";
    case LayerPlan::nemotron_nas: return "Nemotron-NAS: per-layer attention / FFN blocks, no-ops";
    case LayerPlan::gemma4: return "Gemma-4: sliding / global geometry, MoE beside the MLP";
    case LayerPlan::lfm2: return "LFM2: short conv / full attention";
    case LayerPlan::mllama: return "self-attention / cross-attention to the image";
  }
  return "";
}

std::string attention_name(const ModelFamily& f) {
  std::string s;
  switch (f.attention) {
    case Attention::gqa: s = "GQA (MLA with kv_lora_rank)"; break;
    case Attention::mla_indexed: s = "MLA + sparse indexer"; break;
    case Attention::falcon: s = "MQA / GQA (multi_query)"; break;
    case Attention::softmax_list: s = "GQA, softmax in every layer"; break;
    case Attention::compressed_sparse: s = "compressed sparse attention (sliding window + compressed latents, indexer)"; break;
  }
  if (f.qk_norm == QkNorm::always) s += "; q/k norms";
  if (f.qk_norm == QkNorm::by_use_qk_norm) s += "; q/k norms with use_qk_norm";
  if (f.qk_norm == QkNorm::whole) s += "; q/k norms over all heads";
  if (f.qkv_bias_default) s += "; q/k/v biases";
  if (f.global_every > 0) s += "; sliding, every " + std::to_string(f.global_every) + (f.global_every == 2 ? "nd" : "th") + " layer global";
  if (f.sliding == Sliding::qwen) s += "; sliding only with use_sliding_window";
  if (f.sliding == Sliding::nope_layers) s += "; the NoPE layers slide only with use_sliding_window";
  return s;
}

std::string cell(const std::string& s) {
  // A table cell: pipes would split it.
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else out += c;
  }
  return out;
}

}  // namespace

std::span<const ModelFamily> model_registry() { return kRegistry; }

const ModelFamily* find_family(std::string_view model_type) {
  for (const ModelFamily& f : kRegistry)
    if (f.kind == RowKind::alias && model_type == f.model_type) model_type = f.architecture;
  for (const ModelFamily& f : kRegistry)
    if (f.kind == RowKind::family && model_type == f.model_type) return &f;
  return nullptr;
}

const ModelFamily* find_family_by_architecture(std::string_view architecture) {
  const ModelFamily* found = nullptr;
  for (const ModelFamily& f : kRegistry)  // the last row wins, as the reader's loop did
    if (f.kind == RowKind::family && architecture == f.architecture) found = &f;
  return found;
}

const ModelFamily* find_wrapper(std::string_view model_type) {
  for (const ModelFamily& f : kRegistry)
    if (f.kind == RowKind::wrapper && model_type == f.model_type) return &f;
  return nullptr;
}

std::optional<int64_t> family_default(const ModelFamily* family, std::string_view key, bool nested) {
  if (!family) return std::nullopt;
  for (const FamilyDefault& d : family->defaults)
    if (key == d.key) return d.value;
  if (nested)
    for (const FamilyDefault& d : family->nested_defaults)
      if (key == d.key) return d.value;
  return std::nullopt;
}

std::string supported_model_types() {
  std::string s;
  for (const ModelFamily& f : kRegistry)
    if (f.kind != RowKind::alias) s += (s.empty() ? "" : ", ") + std::string(f.model_type);
  return s;
}

std::string registry_markdown() {
  std::string s =
      "| model_type | kind | architecture | layer plan | attention | keys read beyond the common ones | defaults when absent | source |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const ModelFamily& f : kRegistry) {
    std::string row = "| " + std::string(f.model_type) + " | ";
    if (f.kind == RowKind::family) {
      std::string defaults = f.tie_default ? "tie_word_embeddings = true" : "";
      for (const FamilyDefault& d : f.defaults)
        defaults += (defaults.empty() ? "" : ", ") + std::string(d.key) + " = " + std::to_string(d.value);
      std::string nested;
      for (const FamilyDefault& d : f.nested_defaults)
        nested += (nested.empty() ? "" : ", ") + std::string(d.key) + " = " + std::to_string(d.value);
      if (!nested.empty()) defaults += (defaults.empty() ? "" : "; ") + std::string("in a wrapper's text config: ") + nested;
      const std::string src = std::string(f.source).rfind("models/", 0) == 0 ? kHf + std::string(f.source) : f.source;
      row += "family | " + std::string(f.architecture) + " | " + plan_name(f.plan) + " | " + attention_name(f) + " | " +
             cell(f.keys) + " | " + (defaults.empty() ? "-" : defaults) + " | " + src + " |";
    } else if (f.kind == RowKind::wrapper) {
      const std::string towers = f.audio == AudioTower::whisper ? "audio_config (Whisper encoder + two-matrix projector)"
                                 : f.projector == VisionProjector::pixel_unshuffle_mlp
                                     ? "vision_config (tower; pixel unshuffle by downsample_factor into a two-layer projector)"
                                 : f.projector == VisionProjector::llava_mlp
                                     ? "vision_config (tower; two-layer projector to the text width)"
                                 : f.projector == VisionProjector::mllama
                                     ? "vision_config (tiled encoder, gated global layers; max_num_tiles x ((image_size / patch_size)^2 + 1) image tokens per request)"
                                     : "vision_config (tower)";
      row += "wrapper | " + std::string(f.architecture) + " | the text model's, from `" + f.text_key + "`" +
             (f.top_level ? " or the top level beside `vision_config`" : "") + " | the text model's | " + towers + " | - | - |";
    } else {
      row += "alias | read as " + std::string(f.architecture) + " | " + f.architecture + "'s | " + f.architecture +
             "'s | - | - | - |";
    }
    s += row + "\n";
  }
  return s;
}

}  // namespace kvplan::io
