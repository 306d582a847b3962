// The decoder reference counts the multiply-adds it executes; a forward pass of T tokens
// over an empty cache must count exactly what the formulas give, by hand.
#include <doctest/doctest.h>

#include "gpu_validate/decoder_ref.h"

using namespace kvplan;
using namespace kvplan::gv;

TEST_CASE("forward over 3 tokens counts the hand-computed multiply-adds") {
  // h 64, 2 layers, 4 query heads of 16 (q 64), 2 KV heads (kv 32), MLP 160, vocab 128.
  const ModelConfig m = tiny_decoder_config(64, 2, 4, 2, 160, 128);
  DecoderRef ref(m, 7);
  std::vector<float> logits;
  ref.forward({1, 2, 3}, logits);
  CHECK(ref.counts.qkv == 3u * 64 * (64 + 2 * 32) * 2);       // 49,152
  CHECK(ref.counts.attn_scores == (1u + 2 + 3) * 64 * 2);     // causal pairs x q_dim x layers = 768
  CHECK(ref.counts.attn_values == 768u);
  CHECK(ref.counts.out_proj == 3u * 64 * 64 * 2);             // 24,576
  CHECK(ref.counts.mlp == 3u * 3 * 64 * 160 * 2);             // 184,320
  CHECK(ref.counts.lm_head == 64u * 128);                     // last position only
  CHECK(logits.size() == 128);
  CHECK(ref.cache_len() == 3);
}

TEST_CASE("counted FLOPs equal the planner's forward_flops, field by field") {
  const ModelConfig m = tiny_decoder_config(64, 2, 4, 2, 160, 128);
  DecoderRef ref(m, 7);
  std::vector<float> logits;
  ref.forward({1, 2, 3, 4}, logits);       // prefill of 4
  ref.counts = {};
  ref.forward({5, 6}, logits);             // 2 more tokens after 4 cached
  const FlopBreakdown got = ref.counts.flops(), want = forward_flops(m, 2, 4);
  CHECK(got.qkv == want.qkv);
  CHECK(got.attn_scores == want.attn_scores);
  CHECK(got.attn_values == want.attn_values);
  CHECK(got.out_proj == want.out_proj);
  CHECK(got.mlp == want.mlp);
  CHECK(got.lm_head == want.lm_head);
}

TEST_CASE("naive and cached generation count the planner's generate FLOPs and agree on tokens") {
  const ModelConfig m = tiny_decoder_config(64, 2, 4, 2, 160, 128);
  DecoderRef ref(m, 9);
  std::vector<std::vector<float>> lc, ln;
  ref.counts = {};
  const auto cached = ref.generate_cached(5, 12, &lc);
  CHECK(ref.counts.flops().total() == generate_cached_flops(m, 12).total());
  ref.counts = {};
  const auto naive = ref.generate_naive(5, 12, &ln);
  CHECK(ref.counts.flops().total() == generate_naive_flops(m, 12).total());
  CHECK(cached == naive);
  for (size_t s = 0; s < lc.size(); ++s)
    for (size_t i = 0; i < lc[s].size(); ++i) CHECK(lc[s][i] == doctest::Approx(ln[s][i]).epsilon(1e-4));
}
