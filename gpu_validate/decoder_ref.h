// Check 1 (CPU reference): a LLaMA-shaped decoder stack with random weights that
// generates T tokens either by re-running the whole prefix each step (the seed's naive
// decode) or by appending to a KV cache, and counts every multiply-add it performs.
//
// Per layer: RMSNorm -> Q,K,V projections -> causal attention (grouped: query head h
// reads KV head h / (n_h / n_kv)) -> output projection -> residual -> RMSNorm ->
// gated MLP (gate, up, SiLU(gate)*up, down) -> residual; final RMSNorm; LM head on the
// last position only. No RoPE, biases or MoE: rotations and norms are not matrix
// products and the planner does not count them (nor does this counter).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "planner/planner.h"

namespace kvplan::gv {

//! Multiply-adds actually executed, by the planner's FlopBreakdown categories.
struct MacCounts {
  uint64_t qkv = 0, attn_scores = 0, attn_values = 0, out_proj = 0, mlp = 0, lm_head = 0;
  uint64_t total() const { return qkv + attn_scores + attn_values + out_proj + mlp + lm_head; }
  //! FLOPs in the planner's convention: 2 per multiply-add.
  FlopBreakdown flops() const;
};

//! A dense decoder-only model (gated MLP, no biases) small enough for the CPU.
ModelConfig tiny_decoder_config(int64_t hidden, int64_t layers, int64_t heads, int64_t kv_heads,
                                int64_t intermediate, int64_t vocab);

class DecoderRef {
 public:
  //! Random weights (fixed seed), shapes from m (dense, gated MLP, full attention).
  DecoderRef(const ModelConfig& m, uint64_t seed);

  //! Forward over `tokens` new tokens appended after the cache's current length;
  //! writes the logits of the last position into `logits` ([V]).
  void forward(const std::vector<int32_t>& tokens, std::vector<float>& logits);
  //! Drops the cache (length 0).
  void reset_cache();
  //! Keeps the first `len` tokens of the cache (len <= cache_len()).
  void truncate_cache(int64_t len);
  int64_t cache_len() const { return static_cast<int64_t>(cache_len_); }

  //! Generates T tokens from `prompt_token` with the cache: step t feeds one token.
  //! Returns the greedy tokens; `step_logits` (optional) receives each step's logits.
  std::vector<int32_t> generate_cached(int32_t prompt_token, int64_t T,
                                       std::vector<std::vector<float>>* step_logits = nullptr);
  //! Same without a cache: step t re-runs the forward pass over all t tokens so far.
  std::vector<int32_t> generate_naive(int32_t prompt_token, int64_t T,
                                      std::vector<std::vector<float>>* step_logits = nullptr);

  //! Thread CPU seconds of T-token generation {naive, cached}. Each step is timed alone, the fastest
  //! of `reps` runs kept, and the naive and cached runs of step t alternate, so a burst of
  //! load on a shared machine slows both modes alike. Tokens of a fixed sequence
  //! (token i = i % vocab): both modes do the same work.
  std::pair<double, double> time_naive_and_cached_s(int64_t T, int reps);

  MacCounts counts;  //!< accumulated since construction or the last reset of this field

 private:
  void matmul(const float* x, const std::vector<float>& w, float* y, size_t rows, size_t in,
              size_t out, uint64_t& counter);
  void rmsnorm(const float* x, float* y, size_t rows) const;

  size_t h_, L_, nh_, nkv_, dh_, I_, V_;
  // Weights, row-major [out, in] like nn.Linear.
  std::vector<float> embed_;                    // [V, h]
  std::vector<std::vector<float>> wq_, wk_, wv_, wo_, wg_, wu_, wd_;  // per layer
  std::vector<float> lm_head_;                  // [V, h]
  struct Scratch {
    std::vector<float> x, xn, q, attn, k, v, tmp, g, u, scores;
  } scratch_;
  // KV cache, per layer: [max_len, n_kv * d_h], grown as tokens arrive.
  std::vector<std::vector<float>> k_cache_, v_cache_;
  size_t cache_len_ = 0;
};

}  // namespace kvplan::gv
