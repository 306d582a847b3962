#include <doctest/doctest.h>

#include <cmath>

#include "gpu_validate/paged_attention.h"

using namespace kvplan::gv;

TEST_CASE("a 2x2 attention worked by hand") {
  // One head of dimension 2, two cached tokens, in physical block 1 of a 2-block pool.
  // q = [1, 0]; K = [[1, 0], [0, 1]]; V = [[1, 2], [3, 4]]; scale 1/sqrt(2).
  // scores [0.7071, 0] -> p0 = 1 / (1 + e^-0.7071) = 0.669761, p1 = 0.330239
  // out = p0 [1, 2] + p1 [3, 4] = [1.660478, 2.660478]
  PagedKvHost kv;
  kv.shape = {2, 2, 1, 2};
  kv.k = {9, 9, 9, 9, /* block 1: */ 1, 0, 0, 1};
  kv.v = {9, 9, 9, 9, /* block 1: */ 1, 2, 3, 4};
  DecodeBatch db;
  db.batch = 1;
  db.n_heads = 1;
  db.max_blocks_per_seq = 1;
  db.block_table = {1};
  db.seq_lens = {2};
  std::vector<float> out;
  AttentionCounts c;
  paged_decode_attention_ref(kv, db, {1, 0}, out, &c);
  REQUIRE(out.size() == 2);
  CHECK(out[0] == doctest::Approx(1.660478).epsilon(1e-5));
  CHECK(out[1] == doctest::Approx(2.660478).epsilon(1e-5));
  CHECK(c.kv_bytes_read == 2u * 2 * 2 * sizeof(float));  // 2 tokens x (K + V) x 2 dims
  CHECK(c.macs == 8u);
}

TEST_CASE("grouped heads read each K/V row once: GQA bytes are MHA bytes / group") {
  PagedKvHost kv1, kv4;
  DecodeBatch d1, d4;
  std::vector<float> q1, q4, o;
  make_random_paged_problem(2, 40, 8, 8, 16, 16, 1, kv1, d1, q1);
  make_random_paged_problem(2, 40, 8, 2, 16, 16, 1, kv4, d4, q4);
  AttentionCounts c1, c4;
  paged_decode_attention_ref(kv1, d1, q1, o, &c1);
  paged_decode_attention_ref(kv4, d4, q4, o, &c4);
  CHECK(c1.kv_bytes_read == 4 * c4.kv_bytes_read);
  CHECK(c1.macs == c4.macs);  // every query head still does its own multiply-adds
}

TEST_CASE("the paged attention equals the contiguous one for MHA, GQA and MQA") {
  for (int64_t n_kv : {8, 2, 1}) {
    CAPTURE(n_kv);
    PagedKvHost kv;
    DecodeBatch db;
    std::vector<float> q, paged, contiguous;
    const int64_t B = 3, L = 45, D = 8, bs = 4;
    make_random_paged_problem(B, L, 8, n_kv, D, bs, 3, kv, db, q);
    db.seq_lens = {45, 17, 1};
    paged_decode_attention_ref(kv, db, q, paged);
    std::vector<float> k(static_cast<size_t>(B * L * n_kv * D)), v(k.size());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < L; ++t)
        for (int64_t i = 0; i < n_kv * D; ++i) {
          const int64_t blk = db.block_table[static_cast<size_t>(b * db.max_blocks_per_seq + t / bs)];
          const auto src = static_cast<size_t>((blk * bs + t % bs) * n_kv * D + i);
          const auto dst = static_cast<size_t>((b * L + t) * n_kv * D + i);
          k[dst] = kv.k[src];
          v[dst] = kv.v[src];
        }
    contiguous_decode_attention_ref(k, v, L, n_kv, D, db, q, contiguous);
    REQUIRE(paged.size() == contiguous.size());
    for (size_t i = 0; i < paged.size(); ++i) CHECK(paged[i] == contiguous[i]);
  }
}

TEST_CASE("the split (FlashDecoding) attention equals the one-pass attention") {
  for (int64_t n_kv : {8, 2, 1}) {
    CAPTURE(n_kv);
    PagedKvHost kv;
    DecodeBatch db;
    std::vector<float> q, plain, split;
    make_random_paged_problem(3, 300, 8, n_kv, 16, 16, 9, kv, db, q);
    db.seq_lens = {300, 171, 1};
    paged_decode_attention_ref(kv, db, q, plain);
    paged_decode_attention_split_ref(kv, db, q, split, 64);  // 5 splits, partial tiles
    REQUIRE(plain.size() == split.size());
    for (size_t i = 0; i < plain.size(); ++i) CHECK(split[i] == doctest::Approx(plain[i]).epsilon(1e-5));
  }
}

TEST_CASE("the CUDA kernel's traffic counts split-K partials: +25 % on MQA at 32 x 16k tokens") {
  // Worked by hand: 32 sequences of 16,384 tokens, 32 query heads, 1 KV head of 128, bf16.
  //   K+V: 32 x 16384 x 1 x 128 x 2 B x 2 = 268,435,456 B
  //   splits of 256 tokens: 64; partials 32 x 32 x 64 x (128 + 2) fp32 = 34,078,720 B,
  //   written once and read once: 68,157,440 B (25.4 % of K+V)
  //   queries and outputs 32 x 32 x 128 x 4 B = 524,288 B each; block table 32 x 1024 x 4 B
  //   MACs: 32 x 16384 x 32 x 128 x 2 = 4,294,967,296 (8.6 GFLOP against 268 MB)
  const AttentionTraffic t = attention_traffic({32, 16384, 32, 1});
  CHECK(t.splits == 64);
  CHECK(t.kv_bytes == 268435456u);
  CHECK(t.partial_bytes == 34078720u);
  CHECK(t.total_bytes == 268435456u + 2u * 34078720u + 2u * 524288u + 131072u);
  CHECK(t.macs == 4294967296u);
  // MHA: 32 KV heads, 32x the K+V bytes, the same partials.
  const AttentionTraffic mha = attention_traffic({32, 16384, 32, 32});
  CHECK(mha.kv_bytes == 8589934592ull);  // 32 x 268,435,456
  CHECK(mha.partial_bytes == t.partial_bytes);
  // A partial last split: 300 tokens are 2 splits and 19 blocks of 16.
  const AttentionTraffic small = attention_traffic({1, 300, 8, 2});
  CHECK(small.splits == 2);
  CHECK(small.total_bytes == 300u * 2 * 128 * 2 * 2 + 8u * 128 * 4 + 19u * 4 + 2u * 8 * 2 * 130 * 4 + 8u * 128 * 4);
}
