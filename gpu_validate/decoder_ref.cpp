// Check 1 CPU reference; see decoder_ref.h.
#include "gpu_validate/decoder_ref.h"

#include <algorithm>
#include <ctime>
#include <cmath>
#include <random>

namespace kvplan::gv {

FlopBreakdown MacCounts::flops() const {
  FlopBreakdown f;
  f.qkv = 2.0 * static_cast<double>(qkv);
  f.attn_scores = 2.0 * static_cast<double>(attn_scores);
  f.attn_values = 2.0 * static_cast<double>(attn_values);
  f.out_proj = 2.0 * static_cast<double>(out_proj);
  f.mlp = 2.0 * static_cast<double>(mlp);
  f.lm_head = 2.0 * static_cast<double>(lm_head);
  return f;
}

ModelConfig tiny_decoder_config(int64_t hidden, int64_t layers, int64_t heads, int64_t kv_heads,
                                int64_t intermediate, int64_t vocab) {
  ModelConfig m;
  m.name = "gv-tiny-h" + std::to_string(hidden) + "-l" + std::to_string(layers) + "-nh" +
           std::to_string(heads) + "-nkv" + std::to_string(kv_heads);
  m.model_type = "llama";
  m.hidden_size = hidden;
  m.num_layers = layers;
  m.num_heads = heads;
  m.num_kv_heads = kv_heads;
  m.head_dim = hidden / heads;
  m.intermediate_size = intermediate;
  m.vocab_size = vocab;
  m.gated_mlp = true;
  m.tie_word_embeddings = false;
  m.max_position_embeddings = 1 << 16;
  m.torch_dtype = DType::fp32;
  m.layer_window.assign(static_cast<size_t>(layers), 0);
  m.source = "gpu_validate (random weights)";
  return m;
}

namespace {
std::vector<float> random_matrix(std::mt19937_64& rng, size_t rows, size_t cols) {
  // Scaled like a trained layer's init (1/sqrt(fan_in)) so activations stay O(1).
  std::normal_distribution<float> d(0.0f, 1.0f / std::sqrt(static_cast<float>(cols)));
  std::vector<float> w(rows * cols);
  for (float& x : w) x = d(rng);
  return w;
}

// Dot product with four independent accumulators (the compiler keeps it scalar-exact
// per lane without -ffast-math; the same routine serves every shape, so the time per
// multiply-add is the same for one token and for many).
inline float dot(const float* a, const float* b, size_t n) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}
}  // namespace

DecoderRef::DecoderRef(const ModelConfig& m, uint64_t seed)
    : h_(static_cast<size_t>(m.hidden_size)),
      L_(static_cast<size_t>(m.num_layers)),
      nh_(static_cast<size_t>(m.num_heads)),
      nkv_(static_cast<size_t>(m.num_kv_heads)),
      dh_(static_cast<size_t>(m.head_dim)),
      I_(static_cast<size_t>(m.intermediate_size)),
      V_(static_cast<size_t>(m.vocab_size)) {
  std::mt19937_64 rng(seed);
  embed_ = random_matrix(rng, V_, h_);
  for (float& x : embed_) x *= std::sqrt(static_cast<float>(h_));  // unit-variance embeddings
  const size_t q = nh_ * dh_, kv = nkv_ * dh_;
  for (size_t l = 0; l < L_; ++l) {
    wq_.push_back(random_matrix(rng, q, h_));
    wk_.push_back(random_matrix(rng, kv, h_));
    wv_.push_back(random_matrix(rng, kv, h_));
    wo_.push_back(random_matrix(rng, h_, q));
    wg_.push_back(random_matrix(rng, I_, h_));
    wu_.push_back(random_matrix(rng, I_, h_));
    wd_.push_back(random_matrix(rng, h_, I_));
  }
  lm_head_ = random_matrix(rng, V_, h_);
  k_cache_.resize(L_);
  v_cache_.resize(L_);
}

void DecoderRef::reset_cache() {
  for (auto& k : k_cache_) k.clear();
  for (auto& v : v_cache_) v.clear();
  cache_len_ = 0;
}

void DecoderRef::truncate_cache(int64_t len) {
  const size_t n = static_cast<size_t>(len) * nkv_ * dh_;
  for (auto& k : k_cache_) k.resize(n);
  for (auto& v : v_cache_) v.resize(n);
  cache_len_ = static_cast<size_t>(len);
}

namespace {
// Thread CPU time (not wall time): preemption on a shared machine is not counted.
double cpu_now_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
template <class F>
double elapsed_s(F&& f) {
  const double t0 = cpu_now_s();
  f();
  return cpu_now_s() - t0;
}
}  // namespace

std::pair<double, double> DecoderRef::time_naive_and_cached_s(int64_t T, int reps) {
  std::vector<float> logits;
  std::vector<int32_t> seq;
  double naive = 0, cached = 0;
  for (int64_t t = 1; t <= T; ++t) {
    seq.push_back(static_cast<int32_t>((t - 1) % static_cast<int64_t>(V_)));
    const std::vector<int32_t> last{seq.back()};
    double best_naive = 1e30, best_cached = 1e30;
    for (int r = 0; r < reps; ++r) {
      best_naive = std::min(best_naive, elapsed_s([&] {
        reset_cache();
        forward(seq, logits);  // leaves the K/V of positions 0..t-1 in the cache
      }));
      best_cached = std::min(best_cached, elapsed_s([&] {
        truncate_cache(t - 1);  // the cache of a cached run after step t - 1
        forward(last, logits);
      }));
    }
    naive += best_naive;
    cached += best_cached;
  }
  reset_cache();
  return {naive, cached};
}

void DecoderRef::matmul(const float* x, const std::vector<float>& w, float* y, size_t rows,
                        size_t in, size_t out, uint64_t& counter) {
  // y [rows, out] = x [rows, in] · w^T, w [out, in]
  for (size_t r = 0; r < rows; ++r)
    for (size_t o = 0; o < out; ++o) y[r * out + o] = dot(x + r * in, w.data() + o * in, in);
  counter += static_cast<uint64_t>(rows) * in * out;
}

void DecoderRef::rmsnorm(const float* x, float* y, size_t rows) const {
  for (size_t r = 0; r < rows; ++r) {
    float ss = 0;
    for (size_t i = 0; i < h_; ++i) ss += x[r * h_ + i] * x[r * h_ + i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(h_) + 1e-6f);
    for (size_t i = 0; i < h_; ++i) y[r * h_ + i] = x[r * h_ + i] * inv;
  }
}

void DecoderRef::forward(const std::vector<int32_t>& tokens, std::vector<float>& logits) {
  const size_t T = tokens.size();
  const size_t q_dim = nh_ * dh_, kv_dim = nkv_ * dh_, group = nh_ / nkv_;
  const size_t past = cache_len_, total = past + T;
  // Scratch buffers live in the object: a one-token step allocates nothing.
  Scratch& S = scratch_;
  S.x.resize(T * h_);            // [T, h]
  S.xn.resize(T * h_);           // [T, h]
  S.q.resize(T * q_dim);         // [T, n_h * d_h]
  S.attn.resize(T * q_dim);      // [T, n_h * d_h]
  S.k.resize(T * kv_dim);        // [T, n_kv * d_h]
  S.v.resize(T * kv_dim);        // [T, n_kv * d_h]
  S.tmp.resize(T * h_);          // [T, h]
  S.g.resize(T * I_);            // [T, I]
  S.u.resize(T * I_);            // [T, I]
  S.scores.resize(total);        // [keys]
  std::vector<float>&x = S.x, &xn = S.xn, &q = S.q, &attn = S.attn, &k = S.k, &v = S.v, &tmp = S.tmp,
                    &g = S.g, &u = S.u, &scores = S.scores;
  for (size_t t = 0; t < T; ++t)
    std::copy_n(embed_.data() + static_cast<size_t>(tokens[t]) * h_, h_, x.data() + t * h_);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh_));

  for (size_t l = 0; l < L_; ++l) {
    rmsnorm(x.data(), xn.data(), T);
    matmul(xn.data(), wq_[l], q.data(), T, h_, q_dim, counts.qkv);
    matmul(xn.data(), wk_[l], k.data(), T, h_, kv_dim, counts.qkv);
    matmul(xn.data(), wv_[l], v.data(), T, h_, kv_dim, counts.qkv);
    // Append this step's K and V to the cache: [total, n_kv * d_h].
    k_cache_[l].insert(k_cache_[l].end(), k.begin(), k.end());
    v_cache_[l].insert(v_cache_[l].end(), v.begin(), v.end());
    const float* K = k_cache_[l].data();
    const float* V = v_cache_[l].data();
    for (size_t t = 0; t < T; ++t) {
      const size_t keys = past + t + 1;  // causal: itself and everything before
      for (size_t hq = 0; hq < nh_; ++hq) {
        const size_t hk = hq / group;
        const float* qv = q.data() + t * q_dim + hq * dh_;
        float mx = -INFINITY;
        for (size_t j = 0; j < keys; ++j) {
          scores[j] = dot(qv, K + j * kv_dim + hk * dh_, dh_) * scale;
          mx = std::max(mx, scores[j]);
        }
        counts.attn_scores += static_cast<uint64_t>(keys) * dh_;
        float sum = 0;
        for (size_t j = 0; j < keys; ++j) {
          scores[j] = std::exp(scores[j] - mx);
          sum += scores[j];
        }
        float* o = attn.data() + t * q_dim + hq * dh_;
        std::fill_n(o, dh_, 0.0f);
        for (size_t j = 0; j < keys; ++j) {
          const float p = scores[j] / sum;
          const float* vv = V + j * kv_dim + hk * dh_;
          for (size_t d = 0; d < dh_; ++d) o[d] += p * vv[d];
        }
        counts.attn_values += static_cast<uint64_t>(keys) * dh_;
      }
    }
    matmul(attn.data(), wo_[l], tmp.data(), T, q_dim, h_, counts.out_proj);
    for (size_t i = 0; i < T * h_; ++i) x[i] += tmp[i];
    rmsnorm(x.data(), xn.data(), T);
    matmul(xn.data(), wg_[l], g.data(), T, h_, I_, counts.mlp);
    matmul(xn.data(), wu_[l], u.data(), T, h_, I_, counts.mlp);
    for (size_t i = 0; i < T * I_; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];  // SiLU(gate)*up
    matmul(g.data(), wd_[l], tmp.data(), T, I_, h_, counts.mlp);
    for (size_t i = 0; i < T * h_; ++i) x[i] += tmp[i];
  }
  cache_len_ = total;
  // Logits for the last position only (the one that is sampled).
  rmsnorm(x.data() + (T - 1) * h_, xn.data(), 1);
  logits.resize(V_);
  matmul(xn.data(), lm_head_, logits.data(), 1, h_, V_, counts.lm_head);
}

namespace {
int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}
}  // namespace

std::vector<int32_t> DecoderRef::generate_cached(int32_t prompt_token, int64_t T,
                                                 std::vector<std::vector<float>>* step_logits) {
  reset_cache();
  std::vector<int32_t> seq{prompt_token};
  std::vector<float> logits;
  for (int64_t t = 0; t < T; ++t) {
    forward({seq.back()}, logits);
    if (step_logits) step_logits->push_back(logits);
    seq.push_back(argmax(logits));
  }
  return {seq.begin() + 1, seq.end()};
}

std::vector<int32_t> DecoderRef::generate_naive(int32_t prompt_token, int64_t T,
                                                std::vector<std::vector<float>>* step_logits) {
  std::vector<int32_t> seq{prompt_token};
  std::vector<float> logits;
  for (int64_t t = 0; t < T; ++t) {
    reset_cache();  // no cache: every step starts from nothing
    forward(seq, logits);
    if (step_logits) step_logits->push_back(logits);
    seq.push_back(argmax(logits));
  }
  reset_cache();
  return {seq.begin() + 1, seq.end()};
}

}  // namespace kvplan::gv
