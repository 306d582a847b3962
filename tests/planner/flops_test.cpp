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

// DeepSeek-V3 (configs/models/deepseek-v3.yaml: 61 layers, 128 heads, qk_nope 128, rope
// 64, v_head 128, kv_lora_rank 512). vLLM runs MLA prefill decompressed (FlashAttention
// with a qk head of 128 + 64 = 192 and a v head of 128) and decode absorbed (a 576-wide
// latent for scores, 512 for values): vllm/model_executor/layers/attention/mla_attention.py
// (formerly vllm/v1/attention/backends/mla/common.py), _forward_prefill / _forward_decode.
TEST_CASE("MLA prefill is counted decompressed: DeepSeek-V3 at 32k") {
  const ModelConfig m = io::load_model("deepseek-v3");
  const FlopBreakdown f = prefill_flops(m, 32768);
  // Causal pairs per layer: 32,768 x 32,769 / 2 = 536,887,296; 61 layers.
  // Scores 2 x 128 heads x 192 x 61 x 536,887,296 = 1,609,734,146,752,512 (1.61 PFLOP),
  // values 2 x 128 x 128 x 61 x 536,887,296 = 1,073,156,097,835,008 (1.07 PFLOP), against
  // the absorbed form's 2 x 128 x 576 x ... = 4.83 PFLOP and 2 x 128 x 512 x ... = 4.29 PFLOP.
  CHECK(f.attn_scores == doctest::Approx(1609734146752512.0).epsilon(1e-12));
  CHECK(f.attn_values == doctest::Approx(1073156097835008.0).epsilon(1e-12));
  // The new tokens' own kv_b_proj (k_nope and v) costs what absorbing W_UK into the query
  // and W_UV into the output costs them: the projections per token are the decode's.
  const FlopBreakdown one = decode_step_flops(m, 1);
  CHECK(f.qkv + f.out_proj == doctest::Approx(32768 * (one.qkv + one.out_proj)).epsilon(1e-12));
}

TEST_CASE("MLA decode stays absorbed: it reads the latent cache") {
  const ModelConfig m = io::load_model("deepseek-v3");
  // One token at context 32,768: 32,768 pairs per layer, scores 2 x 128 x (512 + 64) x 61 x
  // 32,768 = 294,742,130,688, values 2 x 128 x 512 x 61 x 32,768 = 261,993,005,056.
  const FlopBreakdown f = decode_step_flops(m, 32768);
  CHECK(f.attn_scores == 294742130688.0);
  CHECK(f.attn_values == 261993005056.0);
}

TEST_CASE("an MLA prefill chunk after a cached context decompresses the whole context again") {
  const ModelConfig m = io::load_model("deepseek-v3");
  // vLLM's _compute_prefill_context gathers the cached latents and runs kv_b_proj over
  // them: 2 x 512 x 128 heads x (128 + 128) x 61 layers per cached token; the last 1,024
  // tokens of a 32,768-token prompt follow 31,744 cached ones: 64,974,265,253,888 FLOPs.
  const FlopBreakdown tail = forward_flops(m, 1024, 31744), alone = forward_flops(m, 1024, 0);
  CHECK(tail.qkv - alone.qkv == doctest::Approx(64974265253888.0).epsilon(1e-12));
  // Its attention: 1,024 x 31,744 + 1,024 x 1,025 / 2 = 33,030,656 pairs a layer, decompressed.
  CHECK(tail.attn_scores == doctest::Approx(2.0 * 128 * 192 * 61 * 33030656).epsilon(1e-12));
}

TEST_CASE("MLA naive generation: the one-token prefill runs absorbed, the longer ones decompressed") {
  const ModelConfig m = io::load_model("deepseek-v2-lite");
  double sum = 0;
  for (int64_t t = 1; t <= 40; ++t) sum += prefill_flops(m, t).total();
  CHECK(generate_naive_flops(m, 40).total() == doctest::Approx(sum).epsilon(1e-12));
}
