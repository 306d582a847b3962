// FLOPs (planner.h: forward/prefill/decode/generate), 2 per multiply-add.
// A tiny model worked by hand: h = 8, 2 layers, 2 query heads and 1 KV head of 4, MLP 16,
// vocabulary 10. Per token and layer: QKV 2·8·(8 + 2·4) = 256, output 2·8·8 = 128,
// gated MLP 2·3·8·16 = 768, so 2 · 1,152 = 2,304 over both layers; LM head 2·8·10 = 160;
// each query-key pair costs 2·8 (scores) + 2·8 (values) per layer = 64 over both layers.
#include <doctest/doctest.h>

#include "io/config_io.h"
#include "planner/planner.h"

using namespace kvplan;

namespace {
ModelConfig tiny() {
  ModelConfig m;
  m.name = "tiny";
  m.hidden_size = 8;
  m.num_layers = 2;
  m.num_heads = 2;
  m.num_kv_heads = 1;
  m.head_dim = 4;
  m.intermediate_size = 16;
  m.vocab_size = 10;
  return m;
}
}  // namespace

TEST_CASE("one decode step at context 3 costs 2,304 linear + 3 pairs · 64 + 160 LM head") {
  const FlopBreakdown f = decode_step_flops(tiny(), 3);
  CHECK(f.qkv == 2 * 256.0);
  CHECK(f.out_proj == 2 * 128.0);
  CHECK(f.mlp == 2 * 768.0);
  CHECK(f.attn_scores == 3 * 32.0);
  CHECK(f.attn_values == 3 * 32.0);
  CHECK(f.lm_head == 160.0);
  CHECK(f.total() == 2656.0);
}

TEST_CASE("a 3-token prefill counts 1+2+3 causal pairs and one LM head") {
  CHECK(prefill_flops(tiny(), 3).total() == 3 * 2304.0 + 6 * 64.0 + 160.0);  // 7,456
}

TEST_CASE("generating 3 tokens with the cache is 3 single-token steps") {
  CHECK(generate_cached_flops(tiny(), 3).total() == 3 * 2304.0 + 6 * 64.0 + 3 * 160.0);  // 7,776
}

TEST_CASE("generating 3 tokens without a cache re-runs prefills of 1, 2 and 3 tokens") {
  const double p1 = 2304 + 64 + 160, p2 = 2 * 2304 + 3 * 64 + 160, p3 = 3 * 2304 + 6 * 64 + 160;
  CHECK(generate_naive_flops(tiny(), 3).total() == p1 + p2 + p3);  // 14,944
}

TEST_CASE("naive generation's closed form equals the sum of prefills for a long run") {
  const ModelConfig m = io::load_model("llama-2-7b");
  double sum = 0;
  for (int64_t t = 1; t <= 300; ++t) sum += prefill_flops(m, t).total();
  CHECK(generate_naive_flops(m, 300).total() == doctest::Approx(sum).epsilon(1e-12));
}

TEST_CASE("a sliding window of 2 caps the pairs of a 4-token prefill at 1+2+2+2") {
  ModelConfig m = tiny();
  m.layer_window = {2, 2};
  CHECK(prefill_flops(m, 4).attn_scores == 7 * 32.0);
  double sum = 0;
  for (int64_t t = 1; t <= 9; ++t) sum += prefill_flops(m, t).total();
  CHECK(generate_naive_flops(m, 9).total() == doctest::Approx(sum).epsilon(1e-12));
}

TEST_CASE("a dense model's per-token linear FLOPs are twice its non-embedding matrix parameters") {
  const ModelConfig m = io::load_model("llama-3-8b");
  const ParamCount p = count_params(m);
  const FlopBreakdown f = decode_step_flops(m, 1);
  const double matrices = static_cast<double>(p.attention + p.mlp);
  CHECK(f.qkv + f.out_proj + f.mlp == doctest::Approx(2 * matrices).epsilon(1e-12));
  CHECK(f.lm_head == 2.0 * 4096 * 128256);
}

TEST_CASE("the cache's advantage grows with T: naive / cached is about (T + 1) / 2 for short T") {
  const ModelConfig m = io::load_model("llama-2-7b");
  const double r128 = generate_naive_flops(m, 128).total() / generate_cached_flops(m, 128).total();
  const double r2048 = generate_naive_flops(m, 2048).total() / generate_cached_flops(m, 2048).total();
  // Linear work dominates: naive does T(T+1)/2 token-passes against T, the LM head T against T.
  CHECK(r128 > 50);
  CHECK(r128 < 64.5);
  CHECK(r2048 > r128 * 10);
}
