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
// Per layer: only attention layers that keep their own K/V cache hold bytes per token;
// sliding layers with their own geometry (MiMo-V2-Flash swa_*) use it; DeepSeek-V3.2's
// indexer adds its fp8 key + fp32 scale per 128 channels (vLLM DeepseekV32IndexerCache:
// head_size = index_head_dim + index_head_dim / 128 x 4 bytes, uint8).
// DeepSeek-V4 (vllm-project/vllm@0a291a2e layers/deepseek_v4_attention.py, @0de10a27
// layers/deepseek_compressor.py) caches one K=V latent per entry in vLLM's fp8_ds_mla
// layout, the only one it runs ("DeepseekV4 only supports fp8 kv-cache format"), whatever
// --kv-cache-dtype says: (head_dim - rope) fp8 + rope bf16 + a ue8m0 scale per 64 of the
// fp8 part + 1 pad byte (584 B at head_dim 512, rope 64). Each layer keeps its last
// sliding_window tokens so (DeepseekV4SWACache); a ratio-r layer adds one entry per r
// tokens, and at r = 4 the indexer's key per 4 tokens (index_head_dim fp8 + an fp32 scale
// per 128, DeepseekV4IndexerCache). Its compressors keep fp32 partial states (kv and
// score, coff head_dim each, coff = 2 at r = 4) of the last coff x r tokens
// (CompressorStateCache): a fixed state per request, as a Mamba conv window is.
// Mamba and linear-attention layers hold a fixed state per request instead (vLLM
// vllm/model_executor/layers/mamba/mamba_utils.py, MambaStateShapeCalculator at commit
// 02d710837549a368073552333f66d714477415d2), in the model dtype (mamba_cache_dtype auto):
//   mamba1:   conv (kernel-1) x d_inner/tp + ssm d_inner/tp x d_state
//   mamba2:   conv (kernel-1) x (d_inner + 2 groups' d_state)/tp + ssm heads/tp x
//             head_dim x d_state, groups padded to a multiple of tp when they do not divide
//   gated delta net: conv (kernel-1) x (2 key_heads key_dim + value_heads value_dim)/tp
//             + state value_heads/tp x value_dim x key_dim
//   short conv (LFM2): conv (kernel-1) x conv_dim/tp, no recurrent state
//             (short_conv_state_shape, called by vllm/model_executor/models/lfm2.py with
//             conv_dim and conv_L_cache)
//   cross attention (Mllama): K and V of the request's image tokens, 2 x kv_heads/tp x
//             head_dim x image tokens, in the KV cache dtype (MllamaTextCrossAttention
//             caches the vision states' K/V once, transformers models/mllama/modeling_mllama.py)
#include <algorithm>
#include <cmath>

#include "planner/checked.h"
#include "planner/planner.h"
#include "planner/speculative.h"
#include "planner/units.h"

namespace kvplan {

namespace {

constexpr int64_t kMetaBits = 32;          // fp16 scale + fp16 zero-point
constexpr int64_t kFp16Bits = 16;
constexpr int64_t kOutlierBits = 16 + 16;  // kvquant: fp16 value + 16-bit channel index
constexpr int64_t kRowIndexBits = 32;      // kvquant: CSR row pointer per token vector
constexpr double kOutlierFraction = 0.01;
constexpr int64_t kIndexerScaleBits = 32;    // DeepSeek-V3.2 indexer: fp32 scale per 128
constexpr int64_t kIndexerBlock = 128;

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
      s.residual = o.kv_residual.value_or(128);
      break;
    case KvQuant::kvquant: s.residual = 1; break;  // the attention-sink token in fp16
  }
  return s;
}

// Channels of K and V in one layer for one token on one GPU (tp = 1: the whole layer),
// and unquantized extra bits per token (the V3.2 indexer's keys).
struct Channels {
  int64_t k = 0, v = 0;
  int64_t extra_bits = 0;
};

int64_t window_of(const ModelConfig& m, int64_t layer) {
  return m.layer_window.empty() ? 0 : m.layer_window[static_cast<size_t>(layer)];
}

Channels channels(const ModelConfig& m, int64_t layer, int64_t tp) {
  if (!m.caches_kv(layer) || m.is_csa()) return {};
  if (m.is_mla()) {
    Channels c{m.kv_lora_rank + m.qk_rope_head_dim, 0, 0};
    if (m.index_head_dim > 0)
      c.extra_bits = m.index_head_dim * 8 + detail::ceil_div(m.index_head_dim, kIndexerBlock) * kIndexerScaleBits;
    return c;
  }
  const bool swa = m.swa_num_kv_heads > 0 && window_of(m, layer) > 0;
  const int64_t heads = swa ? m.swa_num_kv_heads : m.num_kv_heads;
  const int64_t kd = swa && m.swa_head_dim > 0 ? m.swa_head_dim : m.head_dim;
  const int64_t vd = swa ? (m.swa_v_head_dim > 0 ? m.swa_v_head_dim : kd)
                         : (m.attn_v_head_dim > 0 ? m.attn_v_head_dim : m.head_dim);
  const int64_t per_gpu = heads >= tp ? heads / tp : 1;
  return {per_gpu * kd, per_gpu * vd, 0};
}

// Whether every layer caches the same: then one layer stands for all.
bool uniform(const ModelConfig& m) {
  return m.layer_window.empty() && m.layer_mixer.empty() && m.layer_kv_shared.empty() && !m.is_csa();
}

// Bits one DeepSeek-V4 layer keeps for `tokens` tokens: its window, the compressed
// entries of the whole groups of r tokens and their indexer keys; `block_size` > 0 rounds
// each up to whole blocks of entries (the window plus the block it is filling).
double csa_bits(const ModelConfig& m, int64_t layer, int64_t tokens, int64_t block_size) {
  if (!m.is_csa()) return 0;
  const int64_t r = m.compress_ratio(layer);
  const auto paged = [&](int64_t entries, int64_t cap) {
    if (block_size <= 0) return cap > 0 ? std::min(entries, cap) : entries;
    int64_t blocks = detail::ceil_div(entries, block_size);
    if (cap > 0) blocks = std::min(blocks, detail::ceil_div(cap, block_size) + 1);
    return blocks * block_size;
  };
  int64_t bytes = paged(tokens, m.csa_window) * csa_entry_bytes(m);
  if (r > 1) bytes += paged(tokens / r, 0) * csa_entry_bytes(m);
  if (r == 4) bytes += paged(tokens / r, 0) * csa_index_bytes(m);
  return static_cast<double>(bytes) * 8;
}

// Its steady-state bits per token: the window's entry (as sliding layers count) and the
// compressed entries' share.
double csa_bits_per_token(const ModelConfig& m, int64_t layer) {
  if (!m.is_csa()) return 0;
  const int64_t r = m.compress_ratio(layer);
  double bytes = static_cast<double>(csa_entry_bytes(m));
  if (r > 1) bytes += static_cast<double>(csa_entry_bytes(m)) / static_cast<double>(r);
  if (r == 4) bytes += static_cast<double>(csa_index_bytes(m)) / static_cast<double>(r);
  return bytes * 8;
}

// The compressors' fp32 states of one DeepSeek-V4 layer (replicated on every TP rank).
double csa_state_bits(const ModelConfig& m, int64_t layer) {
  const int64_t r = m.is_csa() ? m.compress_ratio(layer) : 1;
  if (r <= 1) return 0;
  const int64_t coff = r == 4 ? 2 : 1;
  constexpr int64_t kFp32Bits = 32;
  int64_t elems = coff * r * 2 * coff * m.head_dim;
  if (r == 4) elems += coff * r * 2 * coff * m.index_head_dim;
  return static_cast<double>(elems * kFp32Bits);
}

// Elements of one state layer's fixed state on one GPU: the conv window and the
// recurrent (SSM / delta-rule) state.
struct StateElems {
  int64_t conv = 0, ssm = 0;
  int64_t kv = 0;  // cross-attention K/V, in the KV cache dtype
};
StateElems state_elems(const ModelConfig& m, int64_t layer, int64_t tp) {
  using detail::ceil_div;
  switch (m.mixer(layer)) {
    case Mixer::mamba1:
      return {ceil_div(m.mamba_inner, tp) * (m.mamba_conv_kernel - 1), ceil_div(m.mamba_inner, tp) * m.mamba_state};
    case Mixer::mamba2: {
      const int64_t groups = m.mamba_groups % tp == 0 ? m.mamba_groups : tp;  // extra_groups_for_head_shards
      const int64_t conv_dim = m.mamba_inner + 2 * groups * m.mamba_state;
      return {ceil_div(conv_dim, tp) * (m.mamba_conv_kernel - 1), ceil_div(m.mamba_heads, tp) * m.mamba_head_dim * m.mamba_state};
    }
    case Mixer::linear_attention: {
      const int64_t conv_dim = 2 * m.linear_key_heads * m.linear_key_head_dim + m.linear_value_heads * m.linear_value_head_dim;
      return {ceil_div(conv_dim, tp) * (m.linear_conv_kernel - 1),
              ceil_div(m.linear_value_heads, tp) * m.linear_value_head_dim * m.linear_key_head_dim};
    }
    case Mixer::short_conv: return {ceil_div(m.short_conv_dim, tp) * (m.short_conv_kernel - 1), 0};
    case Mixer::cross_attention: {
      const int64_t heads = m.num_kv_heads >= tp ? m.num_kv_heads / tp : 1;  // replicated below TP, as self-attention
      return {0, 0, 2 * heads * m.head_dim * m.cross_attention_tokens};
    }
    case Mixer::attention:
    case Mixer::none: return {};
  }
  return {};
}

// Bits of one state layer's state on one GPU: conv in the model dtype, the recurrent
// state in its own dtype where the checkpoint fixes one.
double state_bits(const ModelConfig& m, const ServingOptions& o, int64_t layer, int64_t tp) {
  const StateElems e = state_elems(m, layer, tp);
  const auto act = static_cast<double>(dtype_bits(o.activation_dtype(m)));
  const double ssm = m.ssm_state_dtype ? static_cast<double>(dtype_bits(*m.ssm_state_dtype)) : act;
  return static_cast<double>(e.conv) * act + static_cast<double>(e.ssm) * ssm +
         static_cast<double>(e.kv) * static_cast<double>(dtype_bits(o.kv_dtype(m))) + csa_state_bits(m, layer);
}

// Bits one layer stores for `tokens` tokens (exact integers, group rounding included).
// `paged`: the space a paged allocator must reserve, which never shrinks as tokens are
// appended. KIVI's exact size drops each time G residual tokens are quantized; a pool
// holds room for the largest fp16 window it passes through, R + G - 1 tokens.
double layer_bits(const Scheme& s, Channels c, int64_t tokens, bool paged = false) {
  const double elems = static_cast<double>(c.k + c.v);
  const auto t = static_cast<double>(tokens);
  if (elems == 0) return t * static_cast<double>(c.extra_bits);
  const double extra = t * static_cast<double>(c.extra_bits);
  return extra + [&]() -> double {
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
  }();
}

// Steady-state bits per token of one layer (no residual window, no per-request constants).
double layer_bits_per_token(const Scheme& s, Channels c) {
  const double elems = static_cast<double>(c.k + c.v);
  const auto b = static_cast<double>(s.bits);
  if (elems == 0) return static_cast<double>(c.extra_bits);
  return static_cast<double>(c.extra_bits) + [&]() -> double {
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
  }();
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
    if (uniform(m)) {
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

// DeepSeek-V4's fixed layouts (above), in bytes: one cached latent, one indexer key.
int64_t csa_entry_bytes(const ModelConfig& m) {
  const int64_t fp8 = m.head_dim - m.qk_rope_head_dim;
  return fp8 + 2 * m.qk_rope_head_dim + fp8 / 64 + 1;
}
int64_t csa_index_bytes(const ModelConfig& m) { return m.index_head_dim + m.index_head_dim / kIndexerBlock * 4; }

KvLayout kv_layout(const ModelConfig& m, const ServingOptions& o) {
  const Scheme s = scheme_of(m, o);
  int64_t layer = 0;
  while (layer + 1 < m.num_layers && !m.caches_kv(layer)) ++layer;
  const Channels c = channels(m, layer, o.tp);
  KvLayout k;
  k.elems_per_token_per_layer = c.k + c.v;
  // DCP (validate: dcp divides the copies) shards by position what TP would copy.
  k.replication = (m.is_mla() ? o.tp : (m.num_kv_heads >= o.tp ? 1 : o.tp / m.num_kv_heads)) / o.dcp;
  k.group = s.group;
  k.residual_tokens = s.residual;
  k.bits_per_elem = c.k + c.v > 0 ? layer_bits_per_token(s, c) / static_cast<double>(c.k + c.v) : 0;
  return k;
}

int64_t kv_bytes_per_token(const ModelConfig& m, const ServingOptions& o) {
  if (!o.kv_cache) return 0;
  const Scheme s = scheme_of(m, o);
  return to_bytes(over_layers(m, o, true, [&](int64_t l) {
    return layer_bits_per_token(s, channels(m, l, 1)) + csa_bits_per_token(m, l);
  }));
}

int64_t kv_bytes_per_token_per_gpu(const ModelConfig& m, const ServingOptions& o) {
  if (!o.kv_cache) return 0;
  const Scheme s = scheme_of(m, o);
  return to_bytes(over_layers(m, o, false, [&](int64_t l) {
    return layer_bits_per_token(s, channels(m, l, o.tp)) + csa_bits_per_token(m, l);
  }));
}

int64_t kv_bytes_per_request(const ModelConfig& m, const ServingOptions& o, int64_t tokens) {
  if (!o.kv_cache) return 0;
  const Scheme s = scheme_of(m, o);
  return to_bytes(over_layers(m, o, true, [&](int64_t l) {
    return layer_bits(s, channels(m, l, 1), kept_tokens(m, l, tokens, 0)) + csa_bits(m, l, tokens, 0);
  }));
}

int64_t state_bytes_per_request(const ModelConfig& m, const ServingOptions& o) {
  if (!m.has_state_layers() && !m.is_csa()) return 0;
  return to_bytes(over_layers(m, o, true, [&](int64_t l) { return state_bits(m, o, l, 1); }));
}

int64_t state_bytes_per_request_per_gpu(const ModelConfig& m, const ServingOptions& o) {
  if (!m.has_state_layers() && !m.is_csa()) return 0;
  return to_bytes(over_layers(m, o, false, [&](int64_t l) { return state_bits(m, o, l, o.tp); }));
}

int64_t kv_block_bytes_per_gpu(const ModelConfig& m, const ServingOptions& o) {
  return detail::checked_mul(kv_bytes_per_token_per_gpu(m, o), o.block_size, "KV block");
}

std::optional<HostKvTier> host_kv_tier(const ModelConfig& m, const ServingOptions& o, int64_t pool_blocks_per_gpu) {
  if (o.kv_offloading_bytes <= 0 && !o.hicache) return std::nullopt;
  HostKvTier t;
  // A drafter's KV layers live in the same blocks (detail::target_kv_budget), so each
  // offloaded block carries them too (vLLM; SGLang sizes its draft pool apart).
  const int64_t draft_per_token =
      o.spec && o.engine != Engine::sglang ? spec_memory(m, o).kv_bytes_per_token_per_gpu : 0;
  t.block_bytes_per_gpu = detail::checked_mul(kv_bytes_per_token_per_gpu(m, o) + draft_per_token, o.block_size, "KV block");
  if (o.hicache) {
    if (o.hicache->size_bytes_per_gpu > 0) {
      t.bytes_per_gpu = o.hicache->size_bytes_per_gpu;
      t.sized_by = "--hicache-size " + shortest(static_cast<double>(t.bytes_per_gpu) / 1e9) + " GB per GPU";
    } else {
      t.bytes_per_gpu = static_cast<int64_t>(std::floor(o.hicache->ratio * static_cast<double>(pool_blocks_per_gpu) *
                                                        static_cast<double>(t.block_bytes_per_gpu)));
      t.sized_by = "--hicache-ratio " + shortest(o.hicache->ratio) + " x the GPU pool";
    }
  } else {
    t.bytes_per_gpu = o.kv_offloading_bytes / (o.tp * o.pp);
    t.sized_by = "--kv-offloading-size " + shortest(static_cast<double>(o.kv_offloading_bytes) / kBytesPerGiB) + " GiB";
  }
  t.blocks = t.block_bytes_per_gpu > 0 ? t.bytes_per_gpu / t.block_bytes_per_gpu : 0;
  t.tokens = detail::checked_mul(t.blocks, o.block_size, "host KV tier");
  t.disk_bytes_per_gpu = o.kv_disk_bytes / (o.tp * o.pp);
  t.disk_blocks = t.block_bytes_per_gpu > 0 ? t.disk_bytes_per_gpu / t.block_bytes_per_gpu : 0;
  t.disk_tokens = detail::checked_mul(t.disk_blocks, o.block_size, "disk KV tier");
  const int64_t block_bytes_per_engine = t.block_bytes_per_gpu * o.tp * o.pp;
  t.remote_blocks = block_bytes_per_engine > 0 ? o.kv_remote_bytes / block_bytes_per_engine : 0;
  t.remote_tokens = detail::checked_mul(t.remote_blocks, o.block_size, "remote KV tier");
  if (o.hicache && t.blocks <= pool_blocks_per_gpu)
    throw InputError("command line", host_kv_tier_flag(o),
                     "a host pool larger than the GPU pool (" + std::to_string(pool_blocks_per_gpu * o.block_size) +
                         " tokens per GPU; SGLang asserts it)",
                     std::to_string(t.tokens) + " tokens per GPU");
  return t;
}

std::string host_kv_tier_flag(const ServingOptions& o) {
  if (!o.hicache) return "--kv-offloading-size";
  return o.hicache->size_bytes_per_gpu > 0 ? "--hicache-size" : "--hicache-ratio";
}

int64_t kv_block_tokens(const ServingOptions& o) { return detail::checked_mul(o.block_size, o.dcp, "KV block"); }

// Bytes a request of `tokens` tokens holds on one GPU, in whole blocks per layer, and
// the state of its state layers. Under DCP vLLM's scheduler hands out blocks of
// block_size x dcp tokens, one physical block of block_size slots on each GPU of the
// group (vllm/v1/kv_cache_interface.py FullAttentionSpec.max_memory_usage_bytes:
// cdiv(cdiv(max_model_len, dcp), block_size) pages per rank), so a GPU holds
// ceil(tokens / (block_size x dcp)) blocks.
int64_t kv_request_footprint_per_gpu(const ModelConfig& m, const ServingOptions& o, int64_t tokens) {
  if (o.dcp > 1) tokens = detail::checked_mul(detail::ceil_div(tokens, kv_block_tokens(o)), o.block_size, "KV tokens");
  const Scheme s = scheme_of(m, o);
  return to_bytes(over_layers(m, o, false, [&](int64_t l) {
    return layer_bits(s, channels(m, l, o.tp), kept_tokens(m, l, tokens, o.block_size), true) +
           csa_bits(m, l, tokens, o.block_size) + state_bits(m, o, l, o.tp);
  }));
}

int64_t kv_blocks_per_request(const ModelConfig& m, const ServingOptions& o, int64_t tokens) {
  const int64_t block = kv_block_bytes_per_gpu(m, o);
  if (block <= 0) return 0;
  return detail::ceil_div(kv_request_footprint_per_gpu(m, o, tokens), block);
}

}  // namespace kvplan
