// Check 2 CPU reference; see paged_attention.h.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "gpu_validate/paged_attention.h"
#include "planner/types.h"

namespace kvplan::gv {

namespace {
inline size_t sz(int64_t v) { return static_cast<size_t>(v); }

// Four independent accumulators: the loop is not bound by the latency of one add chain.
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

// The attention of one sequence, given a function mapping (token, KV head) -> (K row,
// V row). Tokens are the outer loop, so a paged cache is read block by block in address
// order; each K/V row is loaded once and used by all `group` query heads that share it.
template <class RowFn>
void attend_one(int64_t len, int64_t n_heads, int64_t n_kv, int64_t head_dim, const float* q,
                float* out, RowFn rows, AttentionCounts* counts) {
  const size_t D = sz(head_dim), G = sz(n_heads / n_kv), N = sz(len), H = sz(n_heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  std::vector<float> s(N * H);  // [len, n_heads]: one token's scores are contiguous
  // Pass 1: scores.
  for (size_t j = 0; j < N; ++j)
    for (size_t hk = 0; hk < sz(n_kv); ++hk) {
      const float* krow = rows(static_cast<int64_t>(j), static_cast<int64_t>(hk)).first;
      for (size_t g = 0; g < G; ++g) {
        const size_t h = hk * G + g;
        s[j * H + h] = dot(q + h * D, krow, D) * scale;
      }
    }
  // Softmax per query head.
  std::vector<float> mx(H, -INFINITY), sum(H, 0.0f);
  for (size_t j = 0; j < N; ++j)
    for (size_t h = 0; h < H; ++h) mx[h] = std::max(mx[h], s[j * H + h]);
  for (size_t j = 0; j < N; ++j)
    for (size_t h = 0; h < H; ++h) sum[h] += (s[j * H + h] = std::exp(s[j * H + h] - mx[h]));
  for (size_t j = 0; j < N; ++j)
    for (size_t h = 0; h < H; ++h) s[j * H + h] /= sum[h];
  std::fill_n(out, H * D, 0.0f);
  // Pass 2: weighted values.
  for (size_t j = 0; j < N; ++j)
    for (size_t hk = 0; hk < sz(n_kv); ++hk) {
      const float* vrow = rows(static_cast<int64_t>(j), static_cast<int64_t>(hk)).second;
      for (size_t g = 0; g < G; ++g) {
        const size_t h = hk * G + g;
        float* o = out + h * D;
        const float p = s[j * H + h];
        for (size_t d = 0; d < D; ++d) o[d] += p * vrow[d];
      }
    }
  if (counts) {
    counts->kv_bytes_read += 2ull * N * sz(n_kv) * D * sizeof(float);
    counts->macs += 2ull * H * N * D;
  }
}
}  // namespace

void paged_decode_attention_ref(const PagedKvHost& kv, const DecodeBatch& db,
                                const std::vector<float>& q, std::vector<float>& out,
                                AttentionCounts* counts) {
  const PagedKvShape& s = kv.shape;
  if (db.n_heads % s.n_kv != 0) throw std::invalid_argument("n_heads must be a multiple of n_kv");
  const size_t D = sz(s.head_dim), H = sz(db.n_heads);
  out.assign(sz(db.batch) * H * D, 0.0f);
  for (size_t b = 0; b < sz(db.batch); ++b) {
    const int32_t* table = db.block_table.data() + b * sz(db.max_blocks_per_seq);
    auto rows = [&](int64_t token, int64_t hk) {
      const int64_t block = table[token / s.block_size];
      const size_t off = sz(((block * s.block_size + token % s.block_size) * s.n_kv + hk) * s.head_dim);
      return std::pair<const float*, const float*>(kv.k.data() + off, kv.v.data() + off);
    };
    attend_one(db.seq_lens[b], db.n_heads, s.n_kv, s.head_dim, q.data() + b * H * D,
               out.data() + b * H * D, rows, counts);
  }
}

void paged_decode_attention_split_ref(const PagedKvHost& kv, const DecodeBatch& db,
                                      const std::vector<float>& q, std::vector<float>& out,
                                      int64_t chunk) {
  const PagedKvShape& s = kv.shape;
  const size_t D = sz(s.head_dim), H = sz(db.n_heads), G = sz(db.n_heads / s.n_kv);
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  out.assign(sz(db.batch) * H * D, 0.0f);
  for (size_t b = 0; b < sz(db.batch); ++b) {
    const int32_t* table = db.block_table.data() + b * sz(db.max_blocks_per_seq);
    const int64_t len = db.seq_lens[b];
    const int64_t splits = (len + chunk - 1) / chunk;
    for (size_t h = 0; h < H; ++h) {
      const size_t hk = h / G;
      const float* qh = q.data() + (b * H + h) * D;
      std::vector<float> ms, ls, accs;  // per split: m, l, acc[D]
      for (int64_t sp = 0; sp < splits; ++sp) {
        float m = -INFINITY, l = 0;
        std::vector<float> acc(D, 0.0f);
        const int64_t start = sp * chunk, end = std::min(len, start + chunk);
        for (int64_t tile = start; tile < end; tile += 32) {
          const int64_t n = std::min<int64_t>(32, end - tile);
          std::vector<float> sc(sz(n)), rows_v(sz(n) * D);
          float tmax = -INFINITY;
          for (int64_t j = 0; j < n; ++j) {
            const int64_t t = tile + j;
            const auto off = sz(((table[t / s.block_size] * s.block_size + t % s.block_size) * s.n_kv +
                                 static_cast<int64_t>(hk)) * s.head_dim);
            sc[sz(j)] = dot(qh, kv.k.data() + off, D) * scale;
            std::copy_n(kv.v.data() + off, D, rows_v.begin() + static_cast<long>(sz(j) * D));
            tmax = std::max(tmax, sc[sz(j)]);
          }
          const float m_new = std::max(m, tmax), corr = std::exp(m - m_new);
          float psum = 0;
          for (float& x : sc) psum += (x = std::exp(x - m_new));
          l = l * corr + psum;
          for (size_t d = 0; d < D; ++d) {
            acc[d] *= corr;
            for (int64_t j = 0; j < n; ++j) acc[d] += sc[sz(j)] * rows_v[sz(j) * D + d];
          }
          m = m_new;
        }
        ms.push_back(m);
        ls.push_back(l);
        accs.insert(accs.end(), acc.begin(), acc.end());
      }
      const float M = *std::max_element(ms.begin(), ms.end());
      float L = 0;
      float* o = out.data() + (b * H + h) * D;
      for (size_t sp = 0; sp < ms.size(); ++sp) {
        const float w = ls[sp] > 0 ? std::exp(ms[sp] - M) : 0.0f;
        L += ls[sp] * w;
        for (size_t d = 0; d < D; ++d) o[d] += accs[sp * D + d] * w;
      }
      for (size_t d = 0; d < D; ++d) o[d] /= L;
    }
  }
}

void contiguous_decode_attention_ref(const std::vector<float>& k, const std::vector<float>& v,
                                     int64_t max_len, int64_t n_kv, int64_t head_dim,
                                     const DecodeBatch& db, const std::vector<float>& q,
                                     std::vector<float>& out) {
  const size_t D = sz(head_dim), H = sz(db.n_heads);
  out.assign(sz(db.batch) * H * D, 0.0f);
  for (size_t b = 0; b < sz(db.batch); ++b) {
    auto rows = [&](int64_t token, int64_t hk) {
      const size_t off = sz(((static_cast<int64_t>(b) * max_len + token) * n_kv + hk) * head_dim);
      return std::pair<const float*, const float*>(k.data() + off, v.data() + off);
    };
    attend_one(db.seq_lens[b], db.n_heads, n_kv, head_dim, q.data() + b * H * D,
               out.data() + b * H * D, rows, nullptr);
  }
}

void make_random_paged_problem(int64_t batch, int64_t seq_len, int64_t n_heads, int64_t n_kv,
                               int64_t head_dim, int64_t block_size, uint64_t seed,
                               PagedKvHost& kv, DecodeBatch& db, std::vector<float>& q) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t blocks_per_seq = (seq_len + block_size - 1) / block_size;
  kv.shape = {batch * blocks_per_seq, block_size, n_kv, head_dim};
  kv.k.resize(sz(kv.shape.num_blocks * kv.shape.elems_per_block()));
  kv.v.resize(kv.k.size());
  for (float& x : kv.k) x = nd(rng);
  for (float& x : kv.v) x = nd(rng);
  db.batch = batch;
  db.n_heads = n_heads;
  db.max_blocks_per_seq = blocks_per_seq;
  std::vector<int32_t> ids(sz(batch * blocks_per_seq));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  db.block_table = ids;
  db.seq_lens.assign(sz(batch), static_cast<int32_t>(seq_len));
  q.resize(sz(batch * n_heads * head_dim));
  for (float& x : q) x = nd(rng);
}

AttentionTraffic attention_traffic(const AttentionShape& s) {
  AttentionTraffic t;
  const auto B = static_cast<uint64_t>(s.batch), ctx = static_cast<uint64_t>(s.context);
  const auto H = static_cast<uint64_t>(s.n_heads), nkv = static_cast<uint64_t>(s.n_kv);
  const auto D = static_cast<uint64_t>(kAttentionHeadDim);
  const auto bf16_bytes = static_cast<uint64_t>(dtype_bits(DType::bf16) / 8);
  const auto fp32_bytes = static_cast<uint64_t>(dtype_bits(DType::fp32) / 8);
  const uint64_t int32_bytes = sizeof(int32_t);
  t.splits = (s.context + kAttentionChunk - 1) / kAttentionChunk;
  const auto splits = static_cast<uint64_t>(t.splits);
  const uint64_t blocks_per_seq = (ctx + kAttentionBlock - 1) / kAttentionBlock;
  t.kv_bytes = B * ctx * nkv * D * bf16_bytes * 2;
  // Each split writes its unnormalized output (D floats) and its running (max, sum) per
  // query head; the merge kernel reads them back.
  t.partial_bytes = B * H * splits * (D + 2) * fp32_bytes;
  t.total_bytes = t.kv_bytes + B * H * D * fp32_bytes /* queries */ + B * blocks_per_seq * int32_bytes /* table */ +
                  2 * t.partial_bytes + B * H * D * fp32_bytes /* outputs */;
  t.macs = B * ctx * H * D * 2;
  return t;
}

}  // namespace kvplan::gv
