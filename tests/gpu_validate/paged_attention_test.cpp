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
