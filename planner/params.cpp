// Parameter counts and weight bytes. Counting follows the Hugging Face modelling code of
// each architecture (LlamaForCausalLM, MixtralForCausalLM, DeepseekV3ForCausalLM,
// PhiForCausalLM, Gemma2ForCausalLM, Qwen3NextForCausalLM, NemotronHForCausalLM,
// JambaForCausalLM, GptOssForCausalLM, Lfm2ForCausalLM): every weight matrix, bias and norm vector.
// Layers are counted one by one: hybrid models mix attention, Mamba and linear-attention
// mixers with dense, MoE or no feed-forward blocks (ModelConfig::layer_mixer/layer_ffn).
#include <algorithm>

#include "planner/checked.h"
#include "planner/planner.h"

namespace kvplan {

namespace {

// Checked int64 arithmetic: a model whose parameter count or weight bytes do not fit in
// 63 bits is bad input (InputError), never a silent wrap-around.
int64_t mul(int64_t a, int64_t b) { return detail::checked_mul(a, b, "model size"); }
int64_t plus(int64_t a, int64_t b) { return detail::checked_add(a, b, "model size"); }
int64_t mul3(int64_t a, int64_t b, int64_t c) { return mul(mul(a, b), c); }

struct LayerParams {
  int64_t attention = 0;  // token mixer: projections and biases (MLA: its two norms too)
  int64_t mlp = 0;        // dense MLP or all experts (routed + shared), router excluded
  int64_t shared = 0;     // shared experts (part of mlp)
  int64_t router = 0;     // MoE router (and shared-expert gate): stays 16-bit
  int64_t active_mlp = 0; // what one token uses, router included
  int64_t norms = 0;
};

int64_t mlp_matrix_params(const ModelConfig& m, int64_t width) {
  const int64_t mats = m.gated_mlp ? 3 : 2;
  int64_t p = mul3(mats, m.hidden_size, width);
  if (m.linear_bias) p = plus(p, plus(width, m.hidden_size));
  return p;
}

// Attention geometry of one layer: sliding layers may have their own (MiMo-V2-Flash).
struct AttnGeom {
  int64_t heads, kv_heads, head_dim, v_head_dim;
};
AttnGeom attn_geom(const ModelConfig& m, int64_t layer) {
  const bool swa = m.swa_num_kv_heads > 0 && !m.layer_window.empty() &&
                   m.layer_window[static_cast<size_t>(layer)] > 0;
  if (swa) {
    const int64_t hd = m.swa_head_dim > 0 ? m.swa_head_dim : m.head_dim;
    return {m.swa_num_heads > 0 ? m.swa_num_heads : m.num_heads, m.swa_num_kv_heads, hd,
            m.swa_v_head_dim > 0 ? m.swa_v_head_dim : hd};
  }
  return {m.num_heads, m.num_kv_heads, m.head_dim, m.attn_v_head_dim > 0 ? m.attn_v_head_dim : m.head_dim};
}

// Gemma-4's full layers with attention_k_eq_v take V from the K projection.
bool no_v_proj(const ModelConfig& m, int64_t layer) {
  return m.attn_k_eq_v && (m.layer_window.empty() || m.layer_window[static_cast<size_t>(layer)] == 0);
}

// DeepSeek-V4's compressor (vLLM layers/deepseek_compressor.py DeepseekCompressor): fp32
// position biases ape (ratio x coff head_dim), wkv and wgate h -> coff head_dim each, an
// RMSNorm of head_dim; coff = 2 where ratio-4 windows overlap.
int64_t compressor_params(const ModelConfig& m, int64_t ratio, int64_t head_dim) {
  const int64_t coff = ratio == 4 ? 2 : 1;
  return plus(plus(mul3(ratio, coff, head_dim), mul3(m.hidden_size, mul(2, coff), head_dim)), head_dim);
}

// DeepSeek-V4 attention (vLLM models/deepseek_v4.py DeepseekV4Attention): wq_a h -> q_lora
// and wkv h -> head_dim with their RMSNorms, wq_b q_lora -> heads x head_dim, the grouped
// output wo_a (heads x head_dim -> o_groups x o_lora, one block per group) and wo_b
// (o_groups x o_lora -> h), a sink per head; a compressor where ratio > 1; at ratio 4 the
// indexer (DeepseekV4Indexer): wq_b q_lora -> index heads x index_head_dim, weights_proj
// h -> index heads, its own compressor of index_head_dim.
int64_t csa_attention_params(const ModelConfig& m, int64_t layer) {
  const int64_t h = m.hidden_size, hd = m.head_dim, ratio = m.compress_ratio(layer);
  int64_t p = plus(mul(h, plus(m.q_lora_rank, hd)), plus(m.q_lora_rank, hd));
  p = plus(p, mul3(m.q_lora_rank, m.num_heads, hd));
  p = plus(p, mul3(m.num_heads, hd, m.o_lora_rank));
  p = plus(p, plus(mul3(m.o_groups, m.o_lora_rank, h), m.num_heads));
  if (ratio > 1) p = plus(p, compressor_params(m, ratio, hd));
  if (ratio == 4) {
    p = plus(p, plus(mul3(m.q_lora_rank, m.index_heads, m.index_head_dim), mul(h, m.index_heads)));
    p = plus(p, compressor_params(m, ratio, m.index_head_dim));
  }
  return p;
}

int64_t attention_params(const ModelConfig& m, int64_t layer) {
  const int64_t h = m.hidden_size;
  if (m.is_csa()) return csa_attention_params(m, layer);
  if (m.is_mla()) {
    const int64_t qk = plus(m.qk_nope_head_dim, m.qk_rope_head_dim);
    int64_t p = 0;
    if (m.q_lora_rank > 0)
      p = plus(plus(mul(h, m.q_lora_rank), m.q_lora_rank), mul3(m.q_lora_rank, m.num_heads, qk));
    else
      p = mul3(h, m.num_heads, qk);
    p = plus(p, plus(mul(h, plus(m.kv_lora_rank, m.qk_rope_head_dim)), m.kv_lora_rank));
    p = plus(p, mul3(m.kv_lora_rank, m.num_heads, plus(m.qk_nope_head_dim, m.v_head_dim)));
    p = plus(p, mul3(m.num_heads, m.v_head_dim, h));
    if (m.index_head_dim > 0) {
      // DeepSeek-V3.2 lightning indexer (HF DeepseekV32 Indexer): wq_b q_lora -> heads x
      // index_head_dim, wk h -> index_head_dim, its LayerNorm (weight + bias), and
      // weights_proj h -> index_n_heads.
      p = plus(p, plus(mul3(m.q_lora_rank, m.index_heads, m.index_head_dim), mul(h, m.index_head_dim)));
      p = plus(p, plus(mul(2, m.index_head_dim), mul(h, m.index_heads)));
    }
    return p;
  }
  const AttnGeom g = attn_geom(m, layer);
  const int64_t q = mul(g.heads, g.head_dim), k = mul(g.kv_heads, g.head_dim);
  const int64_t v = no_v_proj(m, layer) ? 0 : mul(g.kv_heads, g.v_head_dim);
  const int64_t q_out = m.attn_output_gate ? mul(2, q) : q;
  int64_t p = plus(plus(mul(h, q_out), mul(h, plus(k, v))), mul3(g.heads, g.v_head_dim, h));
  if (m.qkv_bias || m.linear_bias) p = plus(p, plus(q_out, plus(k, v)));
  if (m.o_bias || m.linear_bias) p = plus(p, h);
  if (m.qk_norm) p = plus(p, m.qk_norm_whole ? plus(q, k) : mul(2, g.head_dim));
  return p;
}

// HF MambaMixer (Jamba): in_proj h -> 2 d_inner, depthwise conv1d, x_proj d_inner ->
// dt_rank + 2 d_state, dt_proj dt_rank -> d_inner (+bias), A_log d_inner x d_state, D,
// out_proj d_inner -> h; Jamba adds RMSNorms on dt (dt_rank), B and C (d_state each).
int64_t mamba1_params(const ModelConfig& m) {
  const int64_t h = m.hidden_size, di = m.mamba_inner, ds = m.mamba_state, r = m.mamba_dt_rank;
  int64_t p = mul3(h, 2, di);
  if (m.mamba_proj_bias) p = plus(p, mul(2, di));
  p = plus(p, mul(di, m.mamba_conv_kernel));
  if (m.mamba_conv_bias) p = plus(p, di);
  p = plus(p, mul(di, plus(r, mul(2, ds))));
  p = plus(p, plus(mul(r, di), di));
  p = plus(p, plus(mul(di, ds), di));
  p = plus(p, mul(di, h));
  if (m.mamba_proj_bias) p = plus(p, h);
  if (m.mamba_dt_norms) p = plus(p, plus(r, mul(2, ds)));
  return p;
}

// HF Mamba2Mixer / NemotronHMamba2Mixer: in_proj h -> 2 d_inner + 2 groups d_state +
// heads, conv1d over d_inner + 2 groups d_state channels, dt_bias, A_log and D per head,
// a gated RMSNorm over d_inner, out_proj d_inner -> h.
int64_t mamba2_params(const ModelConfig& m) {
  const int64_t h = m.hidden_size, di = m.mamba_inner;
  const int64_t gs = mul3(2, m.mamba_groups, m.mamba_state);
  const int64_t conv_dim = plus(di, gs);
  int64_t p = mul(h, plus(plus(mul(2, di), gs), m.mamba_heads));
  if (m.mamba_proj_bias) p = plus(p, plus(plus(mul(2, di), gs), m.mamba_heads));
  p = plus(p, mul(conv_dim, m.mamba_conv_kernel));
  if (m.mamba_conv_bias) p = plus(p, conv_dim);
  p = plus(p, mul(3, m.mamba_heads));
  p = plus(p, di);
  p = plus(p, mul(di, h));
  if (m.mamba_proj_bias) p = plus(p, h);
  return p;
}

// HF Qwen3NextGatedDeltaNet: in_proj_qkvz h -> 2 key_dim + 2 value_dim, in_proj_ba
// h -> 2 value heads, conv1d (no bias) over 2 key_dim + value_dim channels, dt_bias and
// A_log per value head, a gated RMSNorm of value_head_dim, out_proj value_dim -> h.
int64_t gated_delta_params(const ModelConfig& m) {
  const int64_t h = m.hidden_size;
  const int64_t kd = mul(m.linear_key_heads, m.linear_key_head_dim);
  const int64_t vd = mul(m.linear_value_heads, m.linear_value_head_dim);
  int64_t p = mul(h, plus(mul(2, kd), mul(2, vd)));
  p = plus(p, mul3(h, 2, m.linear_value_heads));
  p = plus(p, mul(plus(mul(2, kd), vd), m.linear_conv_kernel));
  p = plus(p, mul(2, m.linear_value_heads));
  p = plus(p, m.linear_value_head_dim);
  p = plus(p, mul(vd, h));
  return p;
}

// DeepSeek-V4's hyper-connections (vLLM DeepseekV4DecoderLayer): before attention and
// before the FFN, fn ((2 + hc) hc x hc h), base ((2 + hc) hc) and scale (3), fp32.
int64_t hyper_connection_params(const ModelConfig& m) {
  if (m.hc_mult == 0) return 0;
  const int64_t mix = mul(plus(2, m.hc_mult), m.hc_mult);
  return mul(2, plus(plus(mul3(mix, m.hc_mult, m.hidden_size), mix), 3));
}

// Its head (DeepseekV4Model hc_head_fn, _base, _scale) folds the streams into one.
int64_t hc_head_params(const ModelConfig& m) {
  return m.hc_mult == 0 ? 0 : plus(plus(mul3(m.hc_mult, m.hc_mult, m.hidden_size), m.hc_mult), 1);
}

// HF Lfm2ShortConv (transformers models/lfm2/modeling_lfm2.py): in_proj h -> 3 conv_dim
// (B, C and x), a depthwise conv1d of kernel taps per channel, out_proj conv_dim -> h;
// biases on all three with conv_bias.
int64_t short_conv_params(const ModelConfig& m) {
  const int64_t h = m.hidden_size, d = m.short_conv_dim;
  int64_t p = plus(mul3(h, 3, d), plus(mul(d, m.short_conv_kernel), mul(d, h)));
  if (m.short_conv_bias) p = plus(p, plus(plus(mul(3, d), d), h));
  return p;
}

LayerParams layer_params(const ModelConfig& m, int64_t layer) {
  const int64_t h = m.hidden_size;
  LayerParams p;
  switch (m.mixer(layer)) {
    case Mixer::attention: p.attention = attention_params(m, layer); break;
    case Mixer::mamba1: p.attention = mamba1_params(m); break;
    case Mixer::mamba2: p.attention = mamba2_params(m); break;
    case Mixer::linear_attention: p.attention = gated_delta_params(m); break;
    case Mixer::short_conv: p.attention = short_conv_params(m); break;
    // MllamaTextCrossAttention: Llama's q/k/v/o with RMSNorms of head_dim on q and k, and the
    // decoder layer's two tanh gates (cross_attn_attn_gate, cross_attn_mlp_gate), one value each.
    case Mixer::cross_attention: p.attention = plus(attention_params(m, layer), plus(mul(2, m.head_dim), 2)); break;
    case Mixer::none: break;
  }
  switch (m.ffn(layer)) {
    case Ffn::moe: {
      const int64_t width = m.moe_intermediate_size > 0 ? m.moe_intermediate_size : m.intermediate_size;
      const int64_t expert = mlp_matrix_params(m, width);
      p.shared = mul(m.num_shared_experts, expert);
      if (m.shared_expert_intermediate_size > 0)
        p.shared = plus(p.shared, mlp_matrix_params(m, m.shared_expert_intermediate_size));
      p.router = plus(plus(mul(h, m.num_experts), m.shared_expert_gate ? h : 0),
                      m.router_scales ? plus(h, m.num_experts) : 0);
      // DeepSeek-V4's gates: a token-id -> experts table (tid2eid, vocab x top-k) in the
      // hash layers, a per-expert score bias in the others.
      if (m.is_csa())
        p.router = plus(p.router, layer < m.hash_layers ? mul(m.vocab_size, m.experts_per_token) : m.num_experts);
      p.mlp = plus(mul(m.num_experts, expert), p.shared);
      p.active_mlp = plus(plus(mul(m.experts_per_token, expert), p.shared), p.router);
      break;
    }
    case Ffn::dense: p.mlp = p.active_mlp = mlp_matrix_params(m, m.intermediate(layer)); break;
    case Ffn::none: break;
  }
  // RMSNorm has a weight; LayerNorm (phi) a weight and a bias.
  const int64_t norms = (m.block_norms ? (m.mixer(layer) != Mixer::none ? 1 : 0) + (m.ffn(layer) != Ffn::none ? 1 : 0)
                                       : m.norms_per_layer) +
                        (m.ffn(layer) == Ffn::moe ? m.moe_layer_norms : 0);
  p.norms = mul(norms, m.linear_bias ? mul(2, h) : h);
  p.norms = plus(p.norms, hyper_connection_params(m));
  return p;
}

}  // namespace

ParamCount count_params(const ModelConfig& m) {
  ParamCount c;
  c.tower = m.tower_params;
  c.embedding = mul(m.vocab_size, m.hidden_size);
  if (!m.tie_word_embeddings) c.lm_head = plus(c.embedding, m.lm_head_bias ? m.vocab_size : 0);
  c.embedding = plus(c.embedding, mul(m.extra_embedding_rows, m.hidden_size));
  c.embedding = plus(c.embedding, mul(m.learned_positions, m.hidden_size));
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const LayerParams p = layer_params(m, l);
    c.attention = plus(c.attention, p.attention);
    c.mlp = plus(c.mlp, plus(p.mlp, p.router));
    c.active_mlp = plus(c.active_mlp, p.active_mlp);
    c.norms = plus(c.norms, p.norms);
  }
  c.norms = plus(c.norms, plus(m.linear_bias ? mul(2, m.hidden_size) : m.hidden_size, hc_head_params(m)));  // final norm
  (void)plus(plus(plus(plus(c.embedding, c.lm_head), plus(c.attention, c.mlp)), c.norms), c.tower);
  return c;
}

LayerParamCount layer_param_count(const ModelConfig& m, int64_t layer) {
  const LayerParams p = layer_params(m, layer);
  return {p.attention, p.active_mlp};
}

int64_t weight_bytes_per_gpu(const ModelConfig& m, const ServingOptions& o) {
  const int64_t tp = o.tp;
  const int64_t layers_per_stage = detail::ceil_div(m.num_layers, o.pp);
  const int64_t act_bytes = dtype_bits(o.activation_dtype(m)) / 8;
  const QuantSpec q = weight_quant_of(m, o);
  int64_t worst = 0;
  for (int64_t s = 0; s < o.pp; ++s) {
    const int64_t first = s * layers_per_stage;
    const int64_t last = std::min(m.num_layers, first + layers_per_stage);
    int64_t bytes = 0;
    for (int64_t l = first; l < last; ++l) {
      const LayerParams p = layer_params(m, l);
      // Scale rows per GPU of a layer (per-channel schemes): every output row of its matrices.
      const int64_t rows = plus(plus(m.q_dim(), m.hidden_size), m.intermediate(l)) / tp;
      // K/V heads are replicated when there are fewer of them than TP ranks (the layer's
      // own heads: sliding layers may have more; no V projection to copy without one).
      int64_t attention = p.attention;
      const AttnGeom g = attn_geom(m, l);
      if ((m.mixer(l) == Mixer::attention || m.mixer(l) == Mixer::cross_attention) && !m.is_mla() && !m.is_csa() &&
          g.kv_heads < tp) {
        const int64_t kv = g.kv_heads * g.head_dim;
        const int64_t mats = no_v_proj(m, l) ? 1 : 2;
        attention = plus(attention, mul(mul3(mats, m.hidden_size, kv), tp / g.kv_heads - 1));
      }
      const bool moe = m.ffn(l) == Ffn::moe;
      const QuantSpec qa = q.for_part(WeightPart::attention, l);
      const QuantSpec qe = q.for_part(moe ? WeightPart::experts : WeightPart::dense_mlp, l);
      const QuantSpec qs = q.for_part(WeightPart::shared_experts, l);
      int64_t layer_bytes = quantized_bytes(qa, attention / tp, rows, act_bytes);
      // Routed experts spread over the stage's tp x dp GPUs, whole (EP) or split (TP):
      // num_experts / ep experts of width / (tp x dp / ep) each (docs/parallelism.md).
      const int64_t ffn_split = moe ? tp * o.dp : tp;
      int64_t routed = p.mlp - p.shared;
      // EPLB's redundant experts: more physical experts of the same size.
      if (moe && o.redundant_experts > 0) routed = plus(routed, mul(routed / m.num_experts, o.redundant_experts));
      layer_bytes = plus(layer_bytes, quantized_bytes(qe, routed / ffn_split, rows, act_bytes));
      if (p.shared > 0) layer_bytes = plus(layer_bytes, quantized_bytes(qs, p.shared / tp, rows, act_bytes));
      layer_bytes = plus(layer_bytes, mul(plus(p.norms, p.router), act_bytes));
      bytes = plus(bytes, layer_bytes);
    }
    // Engines keep the vocabulary-parallel embedding and LM head in 16-bit.
    const int64_t vocab = mul3(detail::ceil_div(m.vocab_size, tp), m.hidden_size, act_bytes);
    if (s == 0) bytes = plus(bytes, plus(vocab, mul3(detail::ceil_div(m.extra_embedding_rows, tp), m.hidden_size, act_bytes)));
    // Learned positions are a plain embedding, whole on every rank (vLLM's
    // OPTLearnedPositionalEmbedding is an nn.Embedding).
    if (s == 0) bytes = plus(bytes, mul3(m.learned_positions, m.hidden_size, act_bytes));
    if (s == o.pp - 1) {
      // A checkpoint that quantizes its LM head (ModelOpt quantized_layers) stores it so.
      const int64_t rows = detail::ceil_div(m.vocab_size, tp);
      const int64_t head = q.lm_head ? quantized_bytes(*q.lm_head, mul(rows, m.hidden_size), rows, act_bytes) : vocab;
      if (!m.tie_word_embeddings || o.pp > 1) bytes = plus(bytes, head);
      bytes = plus(bytes, mul(plus(m.hidden_size, hc_head_params(m)), act_bytes));
    }
    worst = std::max(worst, bytes);
  }
  return worst;
}

int64_t tower_bytes_per_gpu(const ModelConfig& m, const ServingOptions& o) {
  return mul(detail::ceil_div(m.tower_params, o.tp), dtype_bits(o.activation_dtype(m)) / 8);
}

}  // namespace kvplan
