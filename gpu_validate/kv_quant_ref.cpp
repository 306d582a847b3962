// Check 3 CPU reference; see kv_quant.h.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "gpu_validate/kv_quant.h"
#include "gpu_validate/npy.h"

namespace kvplan::gv {

namespace {
inline size_t sz(int64_t v) { return static_cast<size_t>(v); }
constexpr int64_t kMetaBits = 32, kOutlierBits = 16 + 16, kRowIndexBits = 32;
}  // namespace

double QuantResult::bits_per_elem() const {
  return quantized_elems > 0 ? static_cast<double>(code_bits + meta_bits) / static_cast<double>(quantized_elems) : 0;
}

double KvQuantResult::bits_per_elem() const {
  const auto n = static_cast<double>(k.quantized_elems + v.quantized_elems);
  return n > 0 ? static_cast<double>(k.code_bits + k.meta_bits + v.code_bits + v.meta_bits) / n : 0;
}

QuantResult quantize_dequantize(const std::vector<float>& x, int64_t T, int64_t C, int bits,
                                QuantAxis axis, int64_t group, double outlier_fraction) {
  if (bits < 1 || bits > 16) throw std::invalid_argument("bits must be in 1..16");
  if (static_cast<int64_t>(x.size()) != T * C) throw std::invalid_argument("x is not [T, C]");
  const int64_t N = T * C;
  // Group id of every element and the number of groups.
  int64_t g_len = 0, n_groups = 0;
  switch (axis) {
    case QuantAxis::tensor: g_len = N; n_groups = 1; break;
    case QuantAxis::token: g_len = group > 0 ? group : C; n_groups = T * ((C + g_len - 1) / g_len); break;
    case QuantAxis::channel: g_len = group > 0 ? group : T; n_groups = C * ((T + g_len - 1) / g_len); break;
  }
  auto group_of = [&](int64_t t, int64_t c) -> int64_t {
    switch (axis) {
      case QuantAxis::tensor: return 0;
      case QuantAxis::token: return t * ((C + g_len - 1) / g_len) + c / g_len;
      case QuantAxis::channel: return c * ((T + g_len - 1) / g_len) + t / g_len;
    }
    return 0;
  };
  std::vector<int64_t> gid(sz(N));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < C; ++c) gid[sz(t * C + c)] = group_of(t, c);

  // Outliers: the largest deviations from the group mean, in group standard deviations.
  std::vector<char> is_out(sz(N), 0);
  int64_t n_out = 0;
  if (outlier_fraction > 0) {
    std::vector<double> sum(sz(n_groups), 0), sq(sz(n_groups), 0), cnt(sz(n_groups), 0);
    for (size_t i = 0; i < sz(N); ++i) {
      const auto g = sz(gid[i]);
      sum[g] += x[i];
      sq[g] += static_cast<double>(x[i]) * x[i];
      cnt[g] += 1;
    }
    std::vector<double> dev(sz(N));
    for (size_t i = 0; i < sz(N); ++i) {
      const auto g = sz(gid[i]);
      const double mean = sum[g] / cnt[g];
      const double sd = std::sqrt(std::max(1e-30, sq[g] / cnt[g] - mean * mean));
      dev[i] = std::fabs(x[i] - mean) / sd;
    }
    n_out = std::llround(outlier_fraction * static_cast<double>(N));
    std::vector<size_t> idx(sz(N));
    std::iota(idx.begin(), idx.end(), size_t{0});
    std::nth_element(idx.begin(), idx.begin() + n_out, idx.end(),
                     [&](size_t a, size_t b) { return dev[a] > dev[b]; });
    for (int64_t i = 0; i < n_out; ++i) is_out[idx[sz(i)]] = 1;
  }

  // Range of each group over its non-outliers; scale and zero rounded to fp16.
  std::vector<float> lo(sz(n_groups), INFINITY), hi(sz(n_groups), -INFINITY);
  for (size_t i = 0; i < sz(N); ++i) {
    if (is_out[i]) continue;
    const auto g = sz(gid[i]);
    lo[g] = std::min(lo[g], x[i]);
    hi[g] = std::max(hi[g], x[i]);
  }
  const auto levels = static_cast<float>((1 << bits) - 1);
  std::vector<float> scale(sz(n_groups)), zero(sz(n_groups));
  for (size_t g = 0; g < sz(n_groups); ++g) {
    if (!(lo[g] <= hi[g])) lo[g] = hi[g] = 0;  // a group of outliers only
    zero[g] = round_to_half(lo[g]);
    scale[g] = round_to_half((hi[g] - lo[g]) / levels);
  }

  QuantResult r;
  r.deq.resize(sz(N));
  for (size_t i = 0; i < sz(N); ++i) {
    if (is_out[i]) {
      r.deq[i] = round_to_half(x[i]);
      continue;
    }
    const auto g = sz(gid[i]);
    const float s = scale[g], z = zero[g];
    float code = s > 0 ? std::nearbyint((x[i] - z) / s) : 0.0f;
    code = std::clamp(code, 0.0f, levels);
    r.deq[i] = code * s + z;
    if (s > 0) r.max_err_over_half_step = std::max(r.max_err_over_half_step,
                                                   std::fabs(static_cast<double>(x[i]) - r.deq[i]) / (0.5 * s));
  }
  r.quantized_elems = N;
  r.code_bits = N * bits;
  const bool whole_context = axis == QuantAxis::tensor || (axis == QuantAxis::channel && g_len >= T);
  (whole_context ? r.const_bits : r.meta_bits) += n_groups * kMetaBits;
  if (outlier_fraction > 0) r.meta_bits += n_out * kOutlierBits + T * kRowIndexBits;
  return r;
}

namespace {
std::vector<float> rows(const std::vector<float>& x, int64_t C, int64_t from, int64_t to) {
  return {x.begin() + from * C, x.begin() + to * C};
}
// Appends fp16-rounded rows [from, to) of src to the dequantized result.
void append_fp16(QuantResult& r, const std::vector<float>& src, int64_t C, int64_t from, int64_t to) {
  for (int64_t i = from * C; i < to * C; ++i) r.deq.push_back(round_to_half(src[sz(i)]));
  r.fp16_elems += (to - from) * C;
}
void prepend_fp16(QuantResult& r, const std::vector<float>& src, int64_t C, int64_t rows_n) {
  std::vector<float> head;
  for (int64_t i = 0; i < rows_n * C; ++i) head.push_back(round_to_half(src[sz(i)]));
  r.deq.insert(r.deq.begin(), head.begin(), head.end());
  r.fp16_elems += rows_n * C;
}
}  // namespace

KvQuantResult quantize_kivi(const std::vector<float>& k, const std::vector<float>& v, int64_t T,
                            int64_t C, int bits, int64_t group, int64_t residual) {
  const int64_t Tq = std::max<int64_t>(0, T - residual) / group * group;
  KvQuantResult r;
  if (Tq > 0) {
    r.k = quantize_dequantize(rows(k, C, 0, Tq), Tq, C, bits, QuantAxis::channel, group);
    r.v = quantize_dequantize(rows(v, C, 0, Tq), Tq, C, bits, QuantAxis::token, group);
  }
  append_fp16(r.k, k, C, Tq, T);
  append_fp16(r.v, v, C, Tq, T);
  return r;
}

KvQuantResult quantize_kvquant(const std::vector<float>& k, const std::vector<float>& v,
                               int64_t T, int64_t C, int bits) {
  constexpr double kOutlierFraction = 0.01;
  constexpr int64_t kSinkTokens = 1;  // the first token stays fp16 (KVQuant §3.7)
  KvQuantResult r;
  if (T > kSinkTokens) {
    r.k = quantize_dequantize(rows(k, C, kSinkTokens, T), T - kSinkTokens, C, bits,
                              QuantAxis::channel, 0, kOutlierFraction);
    r.v = quantize_dequantize(rows(v, C, kSinkTokens, T), T - kSinkTokens, C, bits,
                              QuantAxis::token, 0, kOutlierFraction);
  }
  prepend_fp16(r.k, k, C, std::min(T, kSinkTokens));
  prepend_fp16(r.v, v, C, std::min(T, kSinkTokens));
  return r;
}

std::vector<float> synthetic_keys(int64_t T, int64_t C, int64_t outlier_channels, float offset,
                                  float scale, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> k(sz(T * C));
  for (float& x : k) x = nd(rng);
  for (int64_t j = 0; j < outlier_channels; ++j) {
    const int64_t c = (2 * j + 1) * C / (2 * outlier_channels);
    const float sign = (j % 2 == 0) ? 1.0f : -1.0f;
    for (int64_t t = 0; t < T; ++t) k[sz(t * C + c)] = sign * offset + scale * k[sz(t * C + c)];
  }
  return k;
}

std::vector<float> synthetic_values(int64_t T, int64_t C, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(sz(T * C));
  for (float& x : v) x = nd(rng);
  return v;
}

double mse(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) throw std::invalid_argument("mse: sizes differ");
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
  return s / static_cast<double>(a.size());
}

AttentionError attention_error(const std::vector<float>& k, const std::vector<float>& v,
                               const std::vector<float>& k2, const std::vector<float>& v2,
                               int64_t T, int64_t n_kv, int64_t head_dim, int64_t n_queries,
                               uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const size_t D = sz(head_dim), C = sz(n_kv * head_dim), N = sz(T);
  const double inv = 1.0 / std::sqrt(static_cast<double>(head_dim));
  double se = 0, num = 0, den = 0;
  std::vector<double> s1(N), s2(N);
  std::vector<float> q(D);
  for (size_t h = 0; h < sz(n_kv); ++h) {
    for (int64_t iq = 0; iq < n_queries; ++iq) {
      for (float& x : q) x = nd(rng);
      for (size_t j = 0; j < N; ++j) {
        double a = 0, b = 0;
        for (size_t d = 0; d < D; ++d) {
          a += static_cast<double>(q[d]) * k[j * C + h * D + d];
          b += static_cast<double>(q[d]) * k2[j * C + h * D + d];
        }
        s1[j] = a * inv;
        s2[j] = b * inv;
        se += (s1[j] - s2[j]) * (s1[j] - s2[j]);
      }
      auto softmax = [](std::vector<double>& s) {
        const double mx = *std::max_element(s.begin(), s.end());
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (double& x : s) x /= sum;
      };
      softmax(s1);
      softmax(s2);
      for (size_t d = 0; d < D; ++d) {
        double o1 = 0, o2 = 0;
        for (size_t j = 0; j < N; ++j) {
          o1 += s1[j] * v[j * C + h * D + d];
          o2 += s2[j] * v2[j * C + h * D + d];
        }
        num += (o1 - o2) * (o1 - o2);
        den += o1 * o1;
      }
    }
  }
  AttentionError e;
  e.score_mse = se / static_cast<double>(sz(n_kv) * sz(n_queries) * N);
  e.output_rel_err = den > 0 ? std::sqrt(num / den) : 0;
  return e;
}

}  // namespace kvplan::gv
