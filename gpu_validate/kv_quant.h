// Check 3: KV-cache quantization. Asymmetric round-to-nearest (KIVI, arXiv 2402.02750
// §3.1): zero z = min X, scale s = (max X - min X) / (2^b - 1), both stored as fp16;
// code = clamp(round((x - z) / s), 0, 2^b - 1); x' = code * s + z. Grouping by axis:
//   tensor   one (s, z) for the whole tensor
//   token    one (s, z) per token per group of G channels        (V in KIVI, "per-token")
//   channel  one (s, z) per channel per group of G tokens        (K in KIVI)
// KVQuant-style (arXiv 2401.18079): K per channel over the whole context, V per token,
// 1 % outliers kept sparse in fp16 (dense-and-sparse), first token in fp16. The levels
// here are uniform, not KVQuant's non-uniform nuqX (which needs offline calibration):
// the storage cost is the same, the error is an upper bound on KVQuant's.
// Every bit stored is counted from the buffers the scheme fills.
#pragma once

#include <cstdint>
#include <vector>

namespace kvplan::gv {

enum class QuantAxis { tensor, token, channel };

struct QuantResult {
  std::vector<float> deq;      // [T, C] dequantized (fp16 values where kept in fp16)
  int64_t quantized_elems = 0; // elements stored as b-bit codes
  int64_t code_bits = 0;       // b per quantized element (outlier slots included)
  int64_t meta_bits = 0;       // scales/zeros that grow with tokens, outliers, row indices
  int64_t const_bits = 0;      // per-request constants: whole-context scales (-> 0 per element)
  int64_t fp16_elems = 0;      // elements kept in fp16 (residual window, sink token)
  double max_err_over_half_step = 0;  // max |x - x'| / (s / 2) over non-outlier codes
  //! Steady-state bits per quantized element, metadata included (the planner's figure).
  double bits_per_elem() const;
};

//! x: [T, C] row-major. group = 0 means the whole axis. outlier_fraction of the elements
//! (largest deviation from their group's mean, in group standard deviations) are kept in
//! fp16 as (16-bit value, 16-bit channel index) with a 32-bit row index per token.
QuantResult quantize_dequantize(const std::vector<float>& x, int64_t T, int64_t C, int bits,
                                QuantAxis axis, int64_t group, double outlier_fraction = 0);

//! A K/V pair quantized by one of the planner's schemes.
struct KvQuantResult {
  QuantResult k, v;
  double bits_per_elem() const;  //!< steady state over K and V together
};
//! KIVI: K per channel in groups of G tokens, V per token in groups of G channels; the
//! last tokens (R newest, plus those not filling a K group) stay fp16.
KvQuantResult quantize_kivi(const std::vector<float>& k, const std::vector<float>& v, int64_t T,
                            int64_t C, int bits, int64_t group, int64_t residual);
//! KVQuant-style: see the file comment.
KvQuantResult quantize_kvquant(const std::vector<float>& k, const std::vector<float>& v,
                               int64_t T, int64_t C, int bits);

//! Synthetic keys: [T, C] standard normal, with `outlier_channels` channels (spread
//! evenly) shifted by +-offset and scaled by `scale` (KIVI Fig. 2: a few channels of K
//! carry large magnitudes through every token).
std::vector<float> synthetic_keys(int64_t T, int64_t C, int64_t outlier_channels, float offset,
                                  float scale, uint64_t seed);
std::vector<float> synthetic_values(int64_t T, int64_t C, uint64_t seed);

struct AttentionError {
  double score_mse = 0;       //!< mean squared error of q·k / sqrt(d) over queries, heads, keys
  double output_rel_err = 0;  //!< ||o' - o|| / ||o|| of softmax(scores) V
};
//! Attention of `n_queries` random queries per head (seeded) over K/V [T, n_kv * d],
//! reference (k, v) against quantized (k2, v2).
AttentionError attention_error(const std::vector<float>& k, const std::vector<float>& v,
                               const std::vector<float>& k2, const std::vector<float>& v2,
                               int64_t T, int64_t n_kv, int64_t head_dim, int64_t n_queries,
                               uint64_t seed);

double mse(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace kvplan::gv
