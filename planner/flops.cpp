// FLOPs, 2 per multiply-add (the convention of Kaplan et al. 2020 §2.1 and of most
// serving papers). Counted: every weight matrix a token passes through (2 x parameters,
// biases and norms left out: they add < 0.1 %), the attention scores Q·K^T and the
// weighted sum softmax·V (2 x heads x head_dim per query-key pair), and the LM head for
// the positions that are sampled (the last of a forward pass). MLA is counted in the form
// the engines run it (vLLM vllm/model_executor/layers/attention/mla_attention.py, formerly
// vllm/v1/attention/backends/mla/common.py, module docstring and _forward_prefill /
// _compute_prefill_context / _forward_decode; SGLang deepseek_v2.py forward_normal vs
// forward_absorb):
//  - decode (one new token of a sequence) weight-absorbed (DeepSeek-V2 §2.1.2): W_UK is
//    folded into the query and W_UV into the output, attention reads the latent cache:
//    per pair 2·n_h·(kv_lora_rank + rope) for scores and 2·n_h·kv_lora_rank for values;
//  - prefill (a chunk of more than one token) decompressed: kv_b_proj expands every key's
//    latent into n_h heads of k_nope and v, and FlashAttention runs with a qk head of
//    qk_nope + rope (192 for DeepSeek-V3) and a v head of v_head_dim (128): per pair
//    2·n_h·(qk_nope + rope) and 2·n_h·v_head_dim. The new tokens' kv_b_proj costs what
//    absorption costs them (2·kv_lora_rank·n_h·(qk_nope + v) per token either way); a chunk
//    that follows cached tokens decompresses the whole cached context again
//    (_compute_prefill_context gathers the cache and runs kv_b_proj over it), counted in
//    the QKV bucket. DeepSeek-V3.2's sparse MLA (index_head_dim > 0) runs prefill on the
//    latent too (vllm/v1/attention/backends/mla/flashmla_sparse.py), so it stays absorbed.
// DeepSeek-V4's compressed sparse attention (vllm-project/vllm@0a291a2e
// layers/deepseek_v4_attention.py, @0de10a27 layers/deepseek_compressor.py, @03dc5649
// v1/attention/backends/mla/sparse_swa.py) is counted layer by layer by compress ratio r:
// a query at position p (1-based) attends, with all heads over the head_dim K=V latent
// (head_dim_v = head_dim: 2·n_h·head_dim per pair for scores and for values), to its
// window, min(p, sliding_window) tokens (swa_len = min(position + 1, window); prefill
// gather_len = query_len + min(prefix_len, window - 1)), and to the compressed entries of
// its complete groups of r tokens, floor(p / r) (seq_len // compress_ratio): at r = 128
// to all of them (C128A), at r = 4 to the top index_topk the indexer selects (C4A),
// min(index_topk, floor(p / 4)). The indexer (DeepseekV4Indexer, vLLM's
// SparseAttnIndexer as DeepSeek-V3.2's) scores every one of the floor(p / 4) entries
// with index_n_heads heads of index_head_dim and sums the heads by weights_proj's
// weights: 2·n_idx·(index_head_dim + 1) per pair, counted with the attention scores.
// A compressor pools each complete group's coff·r partial states (coff = 2 at r = 4,
// where windows overlap; 1 at 128) per channel into one entry: 2·coff·r·head_dim per
// entry, and the indexer's compressor 2·coff·r·index_head_dim, in the QKV bucket with
// their projections (fused_wkv_wgate, counted from the parameters). vLLM pads the heads
// one GPU runs to 64 or 128 for FlashMLA; these are the model's FLOPs, not the padding's.
// MoE: the top-k routed and shared experts of each token, and the router. Hybrid models
// (per-layer mixers and feed-forward kinds) are summed layer by layer: Mamba and
// linear-attention layers count 2 x their projection parameters per token (their scan
// adds ~d_inner x d_state per token, under 1 % of it) and no attention pairs.
#include <algorithm>
#include <cmath>

#include "planner/planner.h"

namespace kvplan {

namespace {

struct PerToken {
  double qkv = 0, out_proj = 0, mlp = 0;  // per token, all layers
  double scores_per_pair = 0, values_per_pair = 0;  // per query-key pair, one layer
  double lm_head = 0;
  double context_per_token = 0;  // per cached token a prefill chunk follows, all layers
};

// How a forward pass runs MLA: absorbed for decode, decompressed for prefill (above).
enum class Form : uint8_t { decode, prefill };

bool decompresses(const ModelConfig& m, Form f) { return f == Form::prefill && m.is_mla() && m.index_head_dim == 0; }

// MLA attention per pair and the context decompression per cached token in one layer.
void mla_attention(const ModelConfig& m, Form f, PerToken& p, double mla_layers) {
  const auto heads = static_cast<double>(m.num_heads);
  const auto lora = static_cast<double>(m.kv_lora_rank), rope = static_cast<double>(m.qk_rope_head_dim);
  if (decompresses(m, f)) {
    p.scores_per_pair = 2 * heads * static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim);
    p.values_per_pair = 2 * heads * static_cast<double>(m.v_head_dim);
    p.context_per_token = 2 * mla_layers * lora * heads * static_cast<double>(m.qk_nope_head_dim + m.v_head_dim);
  } else {
    p.scores_per_pair = 2 * heads * (lora + rope);
    p.values_per_pair = 2 * heads * lora;
  }
}

bool per_layer(const ModelConfig& m) {
  return !m.layer_mixer.empty() || !m.layer_ffn.empty() || !m.layer_intermediate.empty() || m.attn_output_gate || m.attn_v_head_dim > 0 ||
         m.shared_expert_intermediate_size > 0 || m.index_head_dim > 0;
}

// Hybrid and per-layer models: linear FLOPs from each layer's parameters (the mixer's
// in the qkv bucket), attention pairs priced by the full-attention geometry.
PerToken per_token_layers(const ModelConfig& m, Form f) {
  PerToken p;
  double attention_layers = 0;
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const LayerParamCount c = layer_param_count(m, l);
    p.qkv += 2 * static_cast<double>(c.mixer);
    p.mlp += 2 * static_cast<double>(c.active_ffn);
    attention_layers += m.mixer(l) == Mixer::attention ? 1 : 0;
  }
  if (m.is_mla()) {
    mla_attention(m, f, p, attention_layers);
  } else {
    p.scores_per_pair = 2 * static_cast<double>(m.num_heads * m.head_dim);
    p.values_per_pair = 2 * static_cast<double>(m.num_heads * (m.attn_v_head_dim > 0 ? m.attn_v_head_dim : m.head_dim));
  }
  p.lm_head = 2 * static_cast<double>(m.hidden_size) * static_cast<double>(m.vocab_size);
  return p;
}

PerToken per_token(const ModelConfig& m, Form f) {
  if (per_layer(m)) return per_token_layers(m, f);
  PerToken p;
  const auto h = static_cast<double>(m.hidden_size);
  const auto heads = static_cast<double>(m.num_heads);
  const auto layers = static_cast<double>(m.num_layers);
  if (m.is_mla()) {
    const auto qk = static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim);
    const auto lora = static_cast<double>(m.kv_lora_rank), rope = static_cast<double>(m.qk_rope_head_dim);
    const auto ql = static_cast<double>(m.q_lora_rank);
    const auto nope = static_cast<double>(m.qk_nope_head_dim), v = static_cast<double>(m.v_head_dim);
    double q = m.q_lora_rank > 0 ? h * ql + ql * heads * qk : h * heads * qk;
    q += h * (lora + rope);
    // kv_b_proj: absorbed, W_UK goes with the query and W_UV with the output; decompressed,
    // both expand the token's own latent. The same multiply-adds either way.
    const bool expand = decompresses(m, f);
    p.qkv = 2 * layers * (q + lora * heads * (expand ? nope + v : nope));
    p.out_proj = 2 * layers * ((expand ? 0 : lora * heads * v) + heads * v * h);
    mla_attention(m, f, p, layers);
  } else {
    const auto q = static_cast<double>(m.q_dim());
    const auto kv = static_cast<double>(m.num_kv_heads * m.head_dim);
    p.qkv = 2 * layers * h * (q + 2 * kv);
    p.out_proj = 2 * layers * q * h;
    p.scores_per_pair = 2 * q;
    p.values_per_pair = 2 * q;
  }
  const double mats = m.gated_mlp ? 3 : 2;
  const auto dense_layers = static_cast<double>(m.is_moe() ? std::min(m.first_dense_layers, m.num_layers) : m.num_layers);
  p.mlp = 2 * dense_layers * mats * h * static_cast<double>(m.intermediate_size);
  if (m.is_moe()) {
    const auto width = static_cast<double>(m.moe_intermediate_size > 0 ? m.moe_intermediate_size : m.intermediate_size);
    const double active = static_cast<double>(m.experts_per_token + m.num_shared_experts);
    const double per_layer = mats * h * width * active + h * static_cast<double>(m.num_experts);
    p.mlp += 2 * (layers - dense_layers) * per_layer;
  }
  p.lm_head = 2 * h * static_cast<double>(m.vocab_size);
  return p;
}

// Sum over query positions p = a..b (1-based) of min(p, w); w = 0 means no window.
double pairs(double a, double b, double w) {
  if (b < a) return 0;
  const auto sum = [](double x, double y) { return (x + y) * (y - x + 1) / 2; };
  if (w <= 0 || b <= w) return sum(a, b);
  if (a >= w) return (b - a + 1) * w;
  return sum(a, w) + (b - w) * w;
}

// Sum over t = 1..T of pairs(1, t, w): the attention pairs of prefilling every prefix.
double nested_pairs(double T, double w) {
  if (w <= 0 || T <= w) return T * (T + 1) * (T + 2) / 6;
  const double head = w * (w + 1) * (w + 2) / 6;  // t = 1..w
  const double base = w * (w + 1) / 2;             // pairs(1, w, w)
  const double n = T - w;                          // t = w+1..T: base + (t - w) w
  return head + n * base + w * n * (n + 1) / 2;
}

// Attention pair total over all layers, given a per-window pair function.
template <typename F>
double layer_pairs(const ModelConfig& m, F&& f) {
  if (m.layer_window.empty() && m.layer_mixer.empty()) return static_cast<double>(m.num_layers) * f(0.0);
  double total = 0;
  for (int64_t l = 0; l < m.num_layers; ++l) {
    if (m.mixer(l) != Mixer::attention) continue;
    total += f(static_cast<double>(m.layer_window.empty() ? 0 : m.layer_window[static_cast<size_t>(l)]));
  }
  return total;
}

// Sum over p = 1..n of min(cap, floor(p / r)) (cap = 0: no cap). Without a cap, with
// q = floor(n / r): groups 1..q-1 add r·k each, the last n - q·r + 1 positions q each.
double group_prefix(double n, double r, double cap) {
  if (n <= 0) return 0;
  const auto uncapped = [r](double x) {
    const double q = std::floor(x / r);
    return r * q * (q - 1) / 2 + q * (x - q * r + 1);
  };
  if (cap <= 0 || n < cap * r) return uncapped(n);
  return uncapped(cap * r - 1) + cap * (n - cap * r + 1);  // from p = cap·r on, cap each
}

// Sum over t = 1..T of group_prefix(t): every prefix's prefill. Position p of value
// v = min(cap, floor(p / r)) is in T - p + 1 prefixes; summed a group (one v) at a time.
double group_nested(double T, double r, double cap) {
  double total = 0;
  for (double q = 1; q * r <= T; ++q) {
    const double lo = q * r, hi = std::min(T, q * r + r - 1);
    const double v = cap > 0 ? std::min(q, cap) : q;
    total += v * ((hi - lo + 1) * (T + 1) - (lo + hi) * (hi - lo + 1) / 2);
  }
  return total;
}

// DeepSeek-V4 (above): attention keys, indexer keys and compressed entries of one layer,
// given a function of (window, ratio, cap) returning the matching position sums.
struct CsaCounts {
  double attention = 0, indexer = 0, entries = 0, index_entries = 0;
};

template <typename Window, typename Groups>
CsaCounts csa_counts(const ModelConfig& m, int64_t layer, Window&& window, Groups&& groups) {
  const int64_t r = m.compress_ratio(layer);
  CsaCounts c;
  c.attention = window(static_cast<double>(m.csa_window));
  if (r == 1) return c;
  const auto rd = static_cast<double>(r);
  c.attention += groups(rd, r == 4 ? static_cast<double>(m.index_topk) : 0.0);
  c.entries = groups(rd, -1.0);  // cap < 0: the complete groups formed, not attended
  if (r == 4) c.indexer = groups(rd, 0.0), c.index_entries = c.entries;
  return c;
}

// FLOPs of the attention, indexer and compressors over all layers from per-layer counts.
template <typename Count>
FlopBreakdown csa_flops(const ModelConfig& m, Count&& count) {
  FlopBreakdown f;
  const auto heads = static_cast<double>(m.num_heads), hd = static_cast<double>(m.head_dim);
  const auto idx = static_cast<double>(m.index_heads) * static_cast<double>(m.index_head_dim + 1);
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const CsaCounts c = count(l);
    const int64_t r = m.compress_ratio(l);
    const double coff_r = static_cast<double>((r == 4 ? 2 : 1) * r);
    f.attn_scores += 2 * heads * hd * c.attention + 2 * idx * c.indexer;
    f.attn_values += 2 * heads * hd * c.attention;
    f.qkv += 2 * coff_r * (hd * c.entries + static_cast<double>(m.index_head_dim) * c.index_entries);
  }
  return f;
}

// Queries at positions a..b, each once.
FlopBreakdown csa_attention(const ModelConfig& m, double a, double b) {
  return csa_flops(m, [&](int64_t l) {
    return csa_counts(m, l, [&](double w) { return pairs(a, b, w); },
                      [&](double r, double cap) {
                        if (cap < 0) return std::floor(b / r) - std::floor((a - 1) / r);
                        return group_prefix(b, r, cap) - group_prefix(a - 1, r, cap);
                      });
  });
}

// Every prefix 1..t of t = 1..T prefilled from scratch.
FlopBreakdown csa_attention_nested(const ModelConfig& m, double T) {
  return csa_flops(m, [&](int64_t l) {
    return csa_counts(m, l, [&](double w) { return nested_pairs(T, w); },
                      [&](double r, double cap) { return cap < 0 ? group_prefix(T, r, 0) : group_nested(T, r, cap); });
  });
}

FlopBreakdown assemble(const PerToken& p, double tokens, double pair_total, double logits, double context = 0) {
  FlopBreakdown f;
  f.qkv = p.qkv * tokens + p.context_per_token * context;
  f.out_proj = p.out_proj * tokens;
  f.mlp = p.mlp * tokens;
  f.attn_scores = p.scores_per_pair * pair_total;
  f.attn_values = p.values_per_pair * pair_total;
  f.lm_head = p.lm_head * logits;
  return f;
}

}  // namespace

FlopBreakdown& FlopBreakdown::operator+=(const FlopBreakdown& b) {
  qkv += b.qkv;
  attn_scores += b.attn_scores;
  attn_values += b.attn_values;
  out_proj += b.out_proj;
  mlp += b.mlp;
  lm_head += b.lm_head;
  return *this;
}

FlopBreakdown forward_flops(const ModelConfig& m, int64_t tokens, int64_t cached) {
  if (tokens <= 0) return {};
  const auto a = static_cast<double>(cached + 1), b = static_cast<double>(cached + tokens);
  if (m.is_csa()) {
    FlopBreakdown f = assemble(per_token(m, Form::decode), static_cast<double>(tokens), 0, 1);
    return f += csa_attention(m, a, b);
  }
  const double pair_total = layer_pairs(m, [&](double w) { return pairs(a, b, w); });
  return assemble(per_token(m, tokens > 1 ? Form::prefill : Form::decode), static_cast<double>(tokens), pair_total, 1,
                  static_cast<double>(cached));
}

FlopBreakdown prefill_flops(const ModelConfig& m, int64_t tokens) { return forward_flops(m, tokens, 0); }

FlopBreakdown decode_step_flops(const ModelConfig& m, int64_t context) {
  return forward_flops(m, 1, std::max<int64_t>(0, context - 1));
}

FlopBreakdown generate_cached_flops(const ModelConfig& m, int64_t tokens) {
  // Step t is one token at position t: the same pairs as one prefill of T tokens, and
  // one LM head per step.
  if (tokens <= 0) return {};
  const auto T = static_cast<double>(tokens);
  if (m.is_csa()) {
    FlopBreakdown f = assemble(per_token(m, Form::decode), T, 0, T);
    return f += csa_attention(m, 1, T);
  }
  const double pair_total = layer_pairs(m, [&](double w) { return pairs(1, T, w); });
  return assemble(per_token(m, Form::decode), T, pair_total, T);
}

FlopBreakdown generate_naive_flops(const ModelConfig& m, int64_t tokens) {
  if (tokens <= 0) return {};
  const auto T = static_cast<double>(tokens);
  if (m.is_csa()) {
    FlopBreakdown f = assemble(per_token(m, Form::decode), T * (T + 1) / 2, 0, T);
    return f += csa_attention_nested(m, T);
  }
  const double pair_total = layer_pairs(m, [&](double w) { return nested_pairs(T, w); });
  if (!decompresses(m, Form::prefill)) return assemble(per_token(m, Form::decode), T * (T + 1) / 2, pair_total, T);
  // The one-token prefill (t = 1, one pair a layer) runs as a decode; t = 2..T decompressed.
  const double first = layer_pairs(m, [](double) { return 1.0; });
  FlopBreakdown f = assemble(per_token(m, Form::decode), 1, first, 1);
  f += assemble(per_token(m, Form::prefill), T * (T + 1) / 2 - 1, pair_total - first, T - 1);
  return f;
}

CsaAttentionFlops csa_attention_flops(const ModelConfig& m, int64_t tokens, int64_t cached) {
  if (tokens <= 0 || !m.is_csa()) return {};
  const FlopBreakdown f = csa_attention(m, static_cast<double>(cached + 1), static_cast<double>(cached + tokens));
  // K = V (one latent): the heads' scores equal their values; the rest of the scores is
  // the indexer's, and the qkv part the pooling.
  return {2 * f.attn_values, f.attn_scores - f.attn_values + f.qkv};
}

PairFlops pair_flops(const ModelConfig& m) {
  const double layers = layer_pairs(m, [](double) { return 1.0; });
  const PerToken d = per_token(m, Form::decode), p = per_token(m, Form::prefill);
  return {(d.scores_per_pair + d.values_per_pair) * layers, (p.scores_per_pair + p.values_per_pair) * layers,
          p.context_per_token};
}

double seed_naive_projection_flops(const ModelConfig& m, int64_t tokens) {
  const auto d = static_cast<double>(m.hidden_size), T = static_cast<double>(tokens);
  return 3 * d * d * T * (T + 1) / 2 * static_cast<double>(m.num_layers);
}

}  // namespace kvplan
