// Parameter counts and weight bytes. Counting follows the Hugging Face modelling code of
// each architecture (LlamaForCausalLM, MixtralForCausalLM, DeepseekV3ForCausalLM,
// PhiForCausalLM, Gemma2ForCausalLM): every weight matrix, bias and norm vector.
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
//! ModelConfig::q_dim(), checked.
int64_t q_dim(const ModelConfig& m) {
  return mul(m.num_heads, m.is_mla() ? plus(m.qk_nope_head_dim, m.qk_rope_head_dim) : m.head_dim);
}

struct LayerParams {
  int64_t attention = 0;  // projection matrices and biases (MLA: its two norms too)
  int64_t mlp = 0;        // all experts, shared experts, router
  int64_t active_mlp = 0; // what one token uses
  int64_t norms = 0;
};

int64_t mlp_matrix_params(const ModelConfig& m, int64_t width) {
  const int64_t mats = m.gated_mlp ? 3 : 2;
  int64_t p = mul3(mats, m.hidden_size, width);
  if (m.linear_bias) p = plus(p, plus(width, m.hidden_size));
  return p;
}

LayerParams layer_params(const ModelConfig& m, int64_t layer) {
  const int64_t h = m.hidden_size;
  LayerParams p;
  if (m.is_mla()) {
    const int64_t qk = plus(m.qk_nope_head_dim, m.qk_rope_head_dim);
    if (m.q_lora_rank > 0)
      p.attention = plus(plus(mul(h, m.q_lora_rank), m.q_lora_rank), mul3(m.q_lora_rank, m.num_heads, qk));
    else
      p.attention = mul3(h, m.num_heads, qk);
    p.attention = plus(p.attention, plus(mul(h, plus(m.kv_lora_rank, m.qk_rope_head_dim)), m.kv_lora_rank));
    p.attention = plus(p.attention, mul3(m.kv_lora_rank, m.num_heads, plus(m.qk_nope_head_dim, m.v_head_dim)));
    p.attention = plus(p.attention, mul3(m.num_heads, m.v_head_dim, h));
  } else {
    const int64_t q = mul(m.num_heads, m.head_dim), kv = mul(m.num_kv_heads, m.head_dim);
    p.attention = plus(plus(mul(h, q), mul3(2, h, kv)), mul(q, h));
    if (m.qkv_bias || m.linear_bias) p.attention = plus(p.attention, plus(q, mul(2, kv)));
    if (m.linear_bias) p.attention = plus(p.attention, h);
  }
  if (m.is_moe_layer(layer)) {
    const int64_t width = m.moe_intermediate_size > 0 ? m.moe_intermediate_size : m.intermediate_size;
    const int64_t expert = mlp_matrix_params(m, width);
    const int64_t router = mul(h, m.num_experts);
    p.mlp = plus(mul(plus(m.num_experts, m.num_shared_experts), expert), router);
    p.active_mlp = plus(mul(plus(m.experts_per_token, m.num_shared_experts), expert), router);
  } else {
    p.mlp = p.active_mlp = mlp_matrix_params(m, m.intermediate_size);
  }
  // RMSNorm has a weight; LayerNorm (phi) a weight and a bias. Gemma-2 has four norms.
  const int64_t per_norm = m.linear_bias ? mul(2, h) : h;
  const int64_t norms = m.model_type == "gemma2" ? 4 : (m.model_type == "phi" ? 1 : 2);
  p.norms = mul(norms, per_norm);
  return p;
}

int64_t bits_per_weight(const ServingOptions& o, const ModelConfig& m) {
  switch (o.quantization) {
    case WeightQuant::none: return dtype_bits(o.activation_dtype(m));
    case WeightQuant::fp8:
    case WeightQuant::int8: return 8;
    case WeightQuant::awq:
    case WeightQuant::gptq: return 4;
  }
  return 16;
}

// Bytes of `params` weights of a matrix with `rows` output rows under the quantization.
// fp8/int8: one fp32 scale per output channel; awq/gptq: per group of 128 weights an
// fp16 scale and a 4-bit zero point packed into int32 (AutoGPTQ/AutoAWQ layouts).
int64_t matrix_bytes(int64_t params, int64_t rows, const ServingOptions& o, const ModelConfig& m) {
  constexpr int64_t kGroup = 128, kScaleBits = 16, kZeroBits = 4, kChannelScaleBytes = 4;
  const int64_t bits = detail::checked_mul(params, bits_per_weight(o, m), "weights");
  int64_t bytes = detail::ceil_div(bits, 8);
  if (o.quantization == WeightQuant::fp8 || o.quantization == WeightQuant::int8)
    bytes = plus(bytes, mul(rows, kChannelScaleBytes));
  if (o.quantization == WeightQuant::awq || o.quantization == WeightQuant::gptq)
    bytes = plus(bytes, detail::ceil_div(mul(detail::ceil_div(params, kGroup), kScaleBits + kZeroBits), 8));
  return bytes;
}

// Layers come in two kinds (dense MLP, MoE MLP); [first, last) holds how many of each.
struct LayerMix {
  int64_t dense = 0, moe = 0;
};
LayerMix layer_mix(const ModelConfig& m, int64_t first, int64_t last) {
  LayerMix mix;
  const int64_t dense_end = m.is_moe() ? std::min(last, m.first_dense_layers) : last;
  mix.dense = std::max<int64_t>(0, dense_end - first);
  mix.moe = (last - first) - mix.dense;
  return mix;
}

}  // namespace

ParamCount count_params(const ModelConfig& m) {
  ParamCount c;
  c.embedding = mul(m.vocab_size, m.hidden_size);
  if (!m.tie_word_embeddings) c.lm_head = plus(c.embedding, m.linear_bias ? m.vocab_size : 0);
  const LayerMix mix = layer_mix(m, 0, m.num_layers);
  const auto add = [&](int64_t layer, int64_t count) {
    if (count == 0) return;
    const LayerParams p = layer_params(m, layer);
    c.attention = plus(c.attention, mul(count, p.attention));
    c.mlp = plus(c.mlp, mul(count, p.mlp));
    c.active_mlp = plus(c.active_mlp, mul(count, p.active_mlp));
    c.norms = plus(c.norms, mul(count, p.norms));
  };
  add(0, mix.dense);
  add(m.num_layers - 1, mix.moe);
  c.norms = plus(c.norms, m.linear_bias ? mul(2, m.hidden_size) : m.hidden_size);  // final norm
  (void)plus(plus(plus(c.embedding, c.lm_head), plus(c.attention, c.mlp)), c.norms);  // total() fits
  return c;
}

int64_t weight_bytes_per_gpu(const ModelConfig& m, const ServingOptions& o) {
  const int64_t tp = o.tp;
  const int64_t layers_per_stage = detail::ceil_div(m.num_layers, o.pp);
  const int64_t act_bytes = dtype_bits(o.activation_dtype(m)) / 8;
  int64_t worst = 0;
  for (int64_t s = 0; s < o.pp; ++s) {
    const int64_t first = s * layers_per_stage;
    const int64_t last = std::min(m.num_layers, first + layers_per_stage);
    int64_t bytes = 0;
    const LayerMix mix = layer_mix(m, first, last);
    const auto add = [&](int64_t layer, int64_t count) {
      if (count == 0) return;
      const LayerParams p = layer_params(m, layer);
      // K/V heads are replicated when there are fewer of them than TP ranks.
      int64_t attention = p.attention;
      if (!m.is_mla() && m.num_kv_heads < tp) {
        const int64_t kv = m.num_kv_heads * m.head_dim;
        attention = plus(attention, mul(mul3(2, m.hidden_size, kv), tp / m.num_kv_heads - 1));
      }
      const int64_t rows = plus(plus(q_dim(m), m.hidden_size), m.intermediate_size) / tp;
      const int64_t layer_bytes = plus(plus(matrix_bytes(attention / tp, rows, o, m), matrix_bytes(p.mlp / tp, rows, o, m)),
                                      mul(p.norms, act_bytes));
      bytes = plus(bytes, mul(count, layer_bytes));
    };
    add(first, mix.dense);
    add(last - 1, mix.moe);
    // Engines keep the vocabulary-parallel embedding and LM head in 16-bit.
    const int64_t vocab = mul3(detail::ceil_div(m.vocab_size, tp), m.hidden_size, act_bytes);
    if (s == 0) bytes = plus(bytes, vocab);
    if (s == o.pp - 1) {
      if (!m.tie_word_embeddings || o.pp > 1) bytes = plus(bytes, vocab);
      bytes = plus(bytes, mul(m.hidden_size, act_bytes));
    }
    worst = std::max(worst, bytes);
  }
  return worst;
}

}  // namespace kvplan
