// Overflow safety at the extremes (planner.h; checked arithmetic of planner/checked.h):
// a 1.23-trillion-parameter model, a 10-million-token context, TP 1,024, batches of 2^40.
// Byte and token counts are int64; every result here is either finite and equal to a
// number worked out by hand below, or a clean InputError, never a wrapped value (the
// sanitizer build of scripts/gates.sh turns any signed overflow here into a failure).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "io/config_io.h"
#include "planner/planner.h"
#include "tests/fixtures.h"

using namespace kvplan;

namespace {

// A dense trillion-parameter model, Llama-shaped, chosen so every count is exact:
// h = 32,768, L = 80, 1,024 query heads of 32 (q = 32,768), 64 K/V heads (kv = 2,048),
// MLP 131,072 (gated), vocabulary 256,000, untied.
ModelConfig trillion() {
  ModelConfig m;
  m.name = "trillion";
  m.model_type = "llama";
  m.hidden_size = 32768;
  m.num_layers = 80;
  m.num_heads = 1024;
  m.num_kv_heads = 64;
  m.head_dim = 32;
  m.intermediate_size = 131072;
  m.vocab_size = 256000;
  return m;
}

using kvplan::test::h100;  // tests/fixtures.h

ServingOptions tp(int64_t n) {
  ServingOptions o;
  o.tp = n;
  return o;
}

constexpr int64_t kTenMillion = 10'000'000;

}  // namespace

TEST_CASE("a 1.23-trillion-parameter model is counted exactly in 64 bits") {
  // Per layer: attention h·q + 2·h·kv + q·h = 2·32,768² + 2·32,768·2,048 = 2,281,701,376;
  // MLP 3·32,768·131,072 = 12,884,901,888; two RMSNorms 65,536: 15,166,668,800 · 80 layers
  // = 1,213,333,504,000. Embedding and LM head 2 · 256,000 · 32,768 = 16,777,216,000;
  // final norm 32,768.
  const ParamCount c = count_params(trillion());
  CHECK(c.attention == 80LL * 2281701376LL);
  CHECK(c.mlp == 80LL * 12884901888LL);
  CHECK(c.total() == 1230110752768LL);
}

TEST_CASE("a trillion-parameter model's weights do not fit one H100, and the plan says so") {
  const ModelConfig m = trillion();
  const ServingOptions o = tp(1);
  validate(m, o, "test");
  // bf16: 2 B per parameter, 2,460,221,505,536 B (2.46 TB) on one GPU.
  CHECK(weight_bytes_per_gpu(m, o) == 2460221505536LL);
  const Plan p = make_plan(m, h100(), o, 4096, 1);
  CHECK(p.memory.kv_budget_bytes == 0);
  CHECK(p.capacity.limited_by == "weights do not fit");
  CHECK(p.capacity.max_concurrent_requests == 0);
  CHECK_FALSE(p.fits);
  CHECK(std::isfinite(p.decode_time.time_s));
}

TEST_CASE("TP 1,024 divides 1,024 heads: per-GPU weights and KV are exact") {
  const ModelConfig m = trillion();
  const ServingOptions o = tp(1024);
  validate(m, o, "test");  // 1,024 heads; 64 K/V heads divide 1,024 (each replicated 16x)
  // Attention per layer with K/V replicated to 1,024 ranks: 2,281,701,376
  // + 2·32,768·2,048·(1,024/64 - 1) = 4,294,967,296; / 1,024 = 4,194,304 parameters.
  // MLP 12,884,901,888 / 1,024 = 12,582,912. Layer bytes 2·(4,194,304 + 12,582,912)
  // + 2·65,536 norms = 33,685,504; · 80 = 2,694,840,320. Vocabulary ceil(256,000/1,024)
  // = 250 rows · 32,768 · 2 B = 16,384,000, twice (untied), + final norm 65,536.
  CHECK(weight_bytes_per_gpu(m, o) == 2727673856LL);
  // KV per token: whole model 80 · 2 · 64 · 32 · 2 B = 655,360 B; per GPU one K/V head.
  CHECK(kv_bytes_per_token(m, o) == 655360);
  CHECK(kv_bytes_per_token_per_gpu(m, o) == 80 * 2 * 1 * 32 * 2);
  CHECK(kv_layout(m, o).replication == 16);
}

TEST_CASE("a 10-million-token context gives exact KV bytes and finite FLOPs and times") {
  const ModelConfig m = trillion();
  const ServingOptions o = tp(1024);
  // 655,360 B · 10^7 tokens = 6,553,600,000,000 B (6.55 TB) for the whole model.
  CHECK(kv_bytes_per_request(m, o, kTenMillion) == 6553600000000LL);
  const Plan p = make_plan(m, h100(), o, kTenMillion, 1);
  CHECK(p.kv_bytes_per_request == 6553600000000LL);
  // Per GPU: ceil(10^7 / 16) = 625,000 blocks of 16 · 10,240 B = 163,840 B.
  CHECK(kv_blocks_per_request(m, o, kTenMillion) == 625000);
  // Pool: floor(0.9 · 85,029,158,912) = 76,526,243,020 - weights 2,727,673,856
  // - activation 8,192 tokens · 131,976 B = 1,081,147,392 - reserve 512 + 256 MiB
  // = 71,912,115,404 B: 438,916 blocks, 7,022,656 tokens; one request does not fit.
  CHECK(p.memory.activation_bytes == 1081147392LL);
  CHECK(p.memory.kv_budget_bytes == 71912115404LL);
  CHECK(p.capacity.num_blocks == 438916);
  CHECK(p.capacity.max_kv_tokens == 438916LL * 16);
  CHECK(p.capacity.max_concurrent_requests == 0);
  for (const double f : {p.prefill.total(), p.decode_step.total(), p.generate_cached.total(),
                         p.generate_naive.total(), p.seed_naive_projection_flops, p.prefill_time.time_s,
                         p.decode_time.time_s})
    CHECK((std::isfinite(f) && f > 0));
  CHECK(p.generate_naive.total() > p.generate_cached.total());
}

TEST_CASE("Llama-3-8B at 10 million tokens: 1,310,720,000,000 B of KV and the seed's FLOPs") {
  const ModelConfig m = io::load_model("llama-3-8b");
  const ServingOptions o;
  CHECK(kv_bytes_per_request(m, o, kTenMillion) == 131072LL * kTenMillion);
  // Theorem 1: 3 d² T(T+1)/2 L = 3 · 4,096² · 10^7 · (10^7 + 1) / 2 · 32 ≈ 8.0531e22.
  const double seed = 3.0 * 4096 * 4096 * 1e7 * (1e7 + 1) / 2 * 32;
  CHECK(seed_naive_projection_flops(m, kTenMillion) == doctest::Approx(seed).epsilon(1e-12));
  const Plan p = make_plan(m, h100(), o, kTenMillion, 1);
  CHECK(p.capacity.max_concurrent_requests == 0);
  CHECK(p.capacity.limited_by == "KV memory: not one request fits");
}

TEST_CASE("a batch of 2^40 sequences gives finite times, and batch x context beyond 2^63 is an InputError") {
  const ModelConfig m = io::load_model("llama-3-8b");
  const ServingOptions o;
  const int64_t batch = int64_t{1} << 40;
  const Plan p = make_plan(m, h100(), o, 4096, batch);
  CHECK_FALSE(p.fits);
  CHECK(std::isfinite(p.decode_time.time_s));
  // 2^40 · 2^12 KV tokens of 131,072 B each = 2^69 B: the step reads them all.
  CHECK(p.decode_time.bytes == doctest::Approx(131072.0 * 4096 * static_cast<double>(batch) + 16060522496.0));
  CHECK_THROWS_WITH_AS(make_plan(m, h100(), o, int64_t{1} << 24, batch),
                       "command line: key '--batch': expected at most 2^63 - 1 tokens in a batch "
                       "(--batch x --context), got 1099511627776 x 16777216",
                       InputError);
  ServingOptions naive = o;
  naive.kv_cache = false;
  CHECK_THROWS_AS(make_plan(m, h100(), naive, int64_t{1} << 24, batch), InputError);
}

TEST_CASE("a context of 2^63 - 1 tokens is an InputError, not a wrapped byte count") {
  const ModelConfig m = io::load_model("llama-3-8b");
  const int64_t max = std::numeric_limits<int64_t>::max();
  CHECK_THROWS_WITH_AS(kv_bytes_per_request(m, ServingOptions{}, max),
                       "KV cache: expected a size below 2^63 bytes (9.2 EB), got an overflow", InputError);
  CHECK_THROWS_AS(make_plan(m, h100(), ServingOptions{}, max, 1), InputError);
}

TEST_CASE("a model whose parameter count exceeds 2^63 is an InputError") {
  // 3 · 3e9 · 3e9 = 2.7e19 MLP parameters in one layer.
  ModelConfig m = trillion();
  m.hidden_size = 3'000'000'000;
  m.intermediate_size = 3'000'000'000;
  m.num_heads = m.num_kv_heads = 1;
  m.head_dim = 128;
  CHECK_THROWS_WITH_AS(count_params(m), "model size: expected a size below 2^63 bytes (9.2 EB), got an overflow",
                       InputError);
  CHECK_THROWS_AS(make_plan(m, h100(), ServingOptions{}, 1, 1), InputError);
}

TEST_CASE("a GPU with 2^63 - 1 bytes gives finite, exact capacities") {
  const ModelConfig m = io::load_model("llama-3-8b");
  GpuSpec g = h100();
  g.memory_bytes = std::numeric_limits<int64_t>::max();
  const Plan p = make_plan(m, g, ServingOptions{}, 4096, 1);
  CHECK(p.memory.kv_budget_bytes > 0);
  // Blocks of 16 tokens · 131,072 B = 2 MiB; a 4,096-token request holds 256 of them.
  CHECK(p.capacity.num_blocks == p.memory.kv_budget_bytes / 2097152);
  CHECK(p.capacity.max_kv_tokens == p.capacity.num_blocks * 16);
  CHECK(p.capacity.max_concurrent_requests == p.capacity.num_blocks / 256);
  CHECK(p.fits);
}
