// KV-cache bytes. Per layer and token the cache stores K and V vectors of n_kv x d_h
// elements (MHA, GQA, MQA), or one compressed latent of kv_lora_rank + qk_rope_head_dim
// elements (MLA, DeepSeek-V2 §2.1: K and V are re-derived from it). Quantized caches add
// metadata, by scheme (all scales and zero-points fp16, i.e. 32 bits per group):
//  raw       b bits per element, nothing else (the seed's idealization).
//  per-token fp16 scale + zero per token per group of G channels (default G = 128).
//  kivi      K per channel in groups of G tokens, V per token in groups of G channels,
//            the newest R tokens (and any not yet filling a K group) in fp16
//            (KIVI, arXiv 2402.02750 §3.3: G = 32, R = 128).
//  kvquant   non-uniform b-bit levels; 1 % outliers kept sparse as a 16-bit value and a
//            16-bit channel index; a 32-bit row index per token vector (CSR); K per-channel
//            and V per-token fp16 scale + zero; the first token in fp16 (KVQuant, arXiv
//            2401.18079 §3.4-3.7 and App. on storage: nuq4-1% ≈ 4.32-4.35 bits).
// 16- and 32-bit caches store plain values: the scheme does not apply to them.
#include <algorithm>
#include <cmath>

#include "planner/checked.h"
#include "planner/planner.h"

namespace kvplan {

namespace {

constexpr int64_t kMetaBits = 32;          // fp16 scale + fp16 zero-point
constexpr int64_t kFp16Bits = 16;
constexpr int64_t kOutlierBits = 16 + 16;  // kvquant: fp16 value + 16-bit channel index
constexpr int64_t kRowIndexBits = 32;      // kvquant: CSR row pointer per token vector
constexpr double kOutlierFraction = 0.01;

struct Scheme {
  KvQuant quant = KvQuant::raw;
  int64_t bits = 16;
  int64_t group = 0;
  int64_t residual = 0;
};

Scheme scheme_of(const ModelConfig& m, const ServingOptions& o) {
  Scheme s;
  s.bits = dtype_bits(o.kv_dtype(m));
  s.quant = s.bits >= 16 ? KvQuant::raw : o.kv_quant;
  switch (s.quant) {
    case KvQuant::raw: break;
    case KvQuant::per_token: s.group = o.kv_group > 0 ? o.kv_group : 128; break;
    case KvQuant::kivi:
      s.group = o.kv_group > 0 ? o.kv_group : 32;
      s.residual = o.kv_residual >= 0 ? o.kv_residual : 128;
      break;
    case KvQuant::kvquant: s.residual = 1; break;  // the attention-sink token in fp16
  }
  return s;
}

// Channels of K and V in one layer for one token (per GPU when `heads` is the shard).
struct Channels {
  int64_t k = 0, v = 0;
};

Channels channels(const ModelConfig& m, int64_t kv_heads) {
  if (m.is_mla()) return {m.kv_lora_rank + m.qk_rope_head_dim, 0};
  return {kv_heads * m.head_dim, kv_heads * m.head_dim};
}

// Bits one layer stores for `tokens` tokens (exact integers, group rounding included).
// `paged`: the space a paged allocator must reserve, which never shrinks as tokens are
// appended. KIVI's exact size drops each time G residual tokens are quantized; a pool
// holds room for the largest fp16 window it passes through, R + G - 1 tokens.
double layer_bits(const Scheme& s, Channels c, int64_t tokens, bool paged = false) {
  const double elems = static_cast<double>(c.k + c.v);
  const auto t = static_cast<double>(tokens);
  switch (s.quant) {
    case KvQuant::raw: return t * elems * static_cast<double>(s.bits);
    case KvQuant::per_token: {
      const auto groups = static_cast<double>(detail::ceil_div(c.k, s.group) + detail::ceil_div(c.v, s.group));
      return t * (elems * static_cast<double>(s.bits) + groups * kMetaBits);
    }
    case KvQuant::kivi: {
      const int64_t quantized = paged ? std::max<int64_t>(0, tokens - (s.residual + s.group - 1))
                                      : std::max<int64_t>(0, tokens - s.residual) / s.group * s.group;
      const auto q = static_cast<double>(quantized);
      const auto v_groups = static_cast<double>(c.v > 0 ? detail::ceil_div(c.v, s.group) : 0);
      const double meta = q / static_cast<double>(s.group) * static_cast<double>(c.k) * kMetaBits +
                          q * v_groups * kMetaBits;
      return q * elems * static_cast<double>(s.bits) + meta + (t - q) * elems * kFp16Bits;
    }
    case KvQuant::kvquant: {
      const int64_t quantized = std::max<int64_t>(0, tokens - s.residual);
      const auto q = static_cast<double>(quantized);
      const double outliers = std::ceil(kOutlierFraction * q * elems) * kOutlierBits;
      const double rows = q * (c.v > 0 ? 2 : 1) * kRowIndexBits;
      const double scales = static_cast<double>(c.k) * kMetaBits + (c.v > 0 ? q * kMetaBits : 0);
      return q * elems * static_cast<double>(s.bits) + outliers + rows + scales +
             (t - q) * elems * kFp16Bits;
    }
  }
  return 0;
}

// Steady-state bits per token of one layer (no residual window, no per-request constants).
double layer_bits_per_token(const Scheme& s, Channels c) {
  const double elems = static_cast<double>(c.k + c.v);
  const auto b = static_cast<double>(s.bits);
  switch (s.quant) {
    case KvQuant::raw: return elems * b;
    case KvQuant::per_token:
      return elems * b + static_cast<double>(detail::ceil_div(c.k, s.group) + detail::ceil_div(c.v, s.group)) * kMetaBits;
    case KvQuant::kivi:
      return elems * b + static_cast<double>(c.k) * kMetaBits / static_cast<double>(s.group) +
             static_cast<double>(c.v > 0 ? detail::ceil_div(c.v, s.group) : 0) * kMetaBits;
    case KvQuant::kvquant:
      return elems * b + kOutlierFraction * elems * kOutlierBits +
             (c.v > 0 ? 2 : 1) * kRowIndexBits + (c.v > 0 ? kMetaBits : 0);
  }
  return 0;
}

int64_t kv_heads_per_gpu(const ModelConfig& m, int64_t tp) {
  if (m.is_mla()) return 1;
  return m.num_kv_heads >= tp ? m.num_kv_heads / tp : 1;
}

int64_t window_of(const ModelConfig& m, int64_t layer) {
  return m.layer_window.empty() ? 0 : m.layer_window[static_cast<size_t>(layer)];
}

// Tokens layer `layer` keeps for a request of `tokens` tokens, paged (block_size > 0)
// or exact (0). A sliding layer keeps its window, plus one block it is filling.
int64_t kept_tokens(const ModelConfig& m, int64_t layer, int64_t tokens, int64_t block_size) {
  const int64_t w = window_of(m, layer);
  if (block_size <= 0) return w > 0 ? std::min(tokens, w) : tokens;
  int64_t blocks = detail::ceil_div(tokens, block_size);
  if (w > 0) blocks = std::min(blocks, detail::ceil_div(w, block_size) + 1);
  return blocks * block_size;
}

// Sum over the layers of the heaviest PP stage (or all, whole = true) of per-layer bits.
template <typename PerLayer>
double over_layers(const ModelConfig& m, const ServingOptions& o, bool whole, PerLayer&& f) {
  const int64_t stages = whole ? 1 : o.pp;
  const int64_t per_stage = detail::ceil_div(m.num_layers, stages);
  double worst = 0;
  for (int64_t s = 0; s < stages; ++s) {
    const int64_t first = s * per_stage, last = std::min(m.num_layers, first + per_stage);
    double bits = 0;
    if (m.layer_window.empty()) {
      bits = static_cast<double>(last - first) * f(first);
    } else {
      for (int64_t l = first; l < last; ++l) bits += f(l);
    }
    worst = std::max(worst, bits);
  }
  return worst;
}

int64_t to_bytes(double bits) {
  const double bytes = std::ceil(bits / 8.0);
  if (!(bytes < 9.2e18)) throw InputError("KV cache", "", "a size below 2^63 bytes (9.2 EB)", "an overflow");
  return static_cast<int64_t>(bytes);
}

}  // namespace

KvLayout kv_layout(const ModelConfig& m, const ServingOptions& o) {
  const Scheme s = scheme_of(m, o);
  const Channels c = channels(m, kv_heads_per_gpu(m, o.tp));
  KvLayout k;
  k.elems_per_token_per_layer = c.k + c.v;
  k.replication = m.is_mla() ? o.tp : (m.num_kv_heads >= o.tp ? 1 : o.tp / m.num_kv_heads);
  k.group = s.group;
  k.residual_tokens = s.residual;
  k.bits_per_elem = layer_bits_per_token(s, c) / static_cast<double>(c.k + c.v);
  return k;
}

int64_t kv_bytes_per_token(const ModelConfig& m, const ServingOptions& o) {
  if (!o.kv_cache) return 0;
  const Scheme s = scheme_of(m, o);
  const Channels c = channels(m, m.is_mla() ? 1 : m.num_kv_heads);
  return to_bytes(static_cast<double>(m.num_layers) * layer_bits_per_token(s, c));
}

int64_t kv_bytes_per_token_per_gpu(const ModelConfig& m, const ServingOptions& o) {
  if (!o.kv_cache) return 0;
  const Scheme s = scheme_of(m, o);
  const Channels c = channels(m, kv_heads_per_gpu(m, o.tp));
  return to_bytes(over_layers(m, o, false, [&](int64_t) { return layer_bits_per_token(s, c); }));
}

int64_t kv_bytes_per_request(const ModelConfig& m, const ServingOptions& o, int64_t tokens) {
  if (!o.kv_cache) return 0;
  const Scheme s = scheme_of(m, o);
  const Channels c = channels(m, m.is_mla() ? 1 : m.num_kv_heads);
  return to_bytes(over_layers(m, o, true, [&](int64_t l) {
    return layer_bits(s, c, kept_tokens(m, l, tokens, 0));
  }));
}

int64_t kv_block_bytes_per_gpu(const ModelConfig& m, const ServingOptions& o) {
  return detail::checked_mul(kv_bytes_per_token_per_gpu(m, o), o.block_size, "KV block");
}

// Bytes a request of `tokens` tokens holds on one GPU, in whole blocks per layer.
int64_t kv_request_footprint_per_gpu(const ModelConfig& m, const ServingOptions& o, int64_t tokens) {
  const Scheme s = scheme_of(m, o);
  const Channels c = channels(m, kv_heads_per_gpu(m, o.tp));
  return to_bytes(over_layers(m, o, false, [&](int64_t l) {
    return layer_bits(s, c, kept_tokens(m, l, tokens, o.block_size), true);
  }));
}

int64_t kv_blocks_per_request(const ModelConfig& m, const ServingOptions& o, int64_t tokens) {
  const int64_t block = kv_block_bytes_per_gpu(m, o);
  if (block <= 0) return 0;
  return detail::ceil_div(kv_request_footprint_per_gpu(m, o, tokens), block);
}

}  // namespace kvplan
