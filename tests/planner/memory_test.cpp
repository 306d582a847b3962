// Memory budget and capacity (planner.h: memory_budget, capacity), engine ideal.
#include <doctest/doctest.h>

#include "io/config_io.h"
#include "planner/planner.h"

using namespace kvplan;

namespace {
GpuSpec gpu_80gib() {
  GpuSpec g;
  g.name = "test-80gib";
  g.memory_bytes = 80LL << 30;
  g.memory_bandwidth_bytes_per_s = 2e12;
  g.peak_flops.fp16 = g.peak_flops.bf16 = 300e12;
  g.interconnect_bytes_per_s = 300e9;
  return g;
}
}  // namespace

TEST_CASE("the ideal engine leaves usable - weights - activation - reserve for the KV pool") {
  // Llama-3-8B bf16, TP 1, defaults: utilization 0.9, 8,192 batched tokens, 256 sequences.
  const ModelConfig m = io::load_model("llama-3-8b");
  ServingOptions o;
  const MemoryBudget b = memory_budget(m, gpu_80gib(), o);
  CHECK(b.usable_bytes == 77309411328LL);  // floor(0.9 · 80 · 2^30)
  // Weights: 8,030,261,248 parameters · 2 B.
  CHECK(b.weights_bytes == 16060522496LL);
  // Activation per token, bf16: 2 B · (2·4096 residual + (4096 + 2·1024) QKV + 4096 attention
  // output + 3·14336 MLP) = 2 · 61,440 = 122,880 B; · 8,192 tokens = 1,006,632,960 B, more than
  // 256 rows of 128,256 fp32 logits (131,334,144 B).
  CHECK(b.activation_bytes == 1006632960LL);
  CHECK(b.reserve_bytes == 512LL << 20);
  CHECK(b.kv_budget_bytes == 77309411328LL - 16060522496LL - 1006632960LL - (512LL << 20));
}

TEST_CASE("capacity counts whole blocks: pool / (16 tokens · 131,072 B), and whole requests") {
  const ModelConfig m = io::load_model("llama-3-8b");
  ServingOptions o;
  MemoryBudget b;
  b.gpu_bytes = b.usable_bytes = 100LL << 30;
  b.kv_budget_bytes = 10LL << 30;  // 10 GiB = 5,120 blocks of 2 MiB
  const Capacity c = capacity(m, o, b, 1000);
  CHECK(c.num_blocks == 5120);
  CHECK(c.max_kv_tokens == 5120 * 16);
  CHECK(c.max_concurrent_requests == 5120 / 63);  // a 1,000-token request holds 63 blocks
}

TEST_CASE("Llama-2-70B over TP 2 on A100-80GB: int4 KV holds about 4× the fp16 requests, KIVI under 3.3×") {
  const ModelConfig m = io::load_model("llama-2-70b");
  const GpuSpec g = io::load_gpu("a100-80gb");
  ServingOptions o;
  o.tp = 2;
  o.kv_cache_dtype = DType::fp16;
  const Plan fp = make_plan(m, g, o, 2048, 1);
  o.kv_cache_dtype = DType::int4;
  const Plan raw = make_plan(m, g, o, 2048, 1);
  o.kv_quant = KvQuant::kivi;
  const Plan kivi = make_plan(m, g, o, 2048, 1);
  REQUIRE(fp.capacity.max_concurrent_requests > 0);
  const auto ratio = [&](const Plan& p) {
    return static_cast<double>(p.capacity.max_concurrent_requests) / static_cast<double>(fp.capacity.max_concurrent_requests);
  };
  // Whole requests round down, so the ratios sit just around the byte ratios (4.00, 2.81).
  CHECK(ratio(raw) > 3.7);
  CHECK(ratio(raw) < 4.3);
  CHECK(ratio(kivi) < 3.3);
  CHECK(ratio(kivi) > 2.5);
}

TEST_CASE("a model whose weights exceed memory gets capacity 0 and a reason") {
  ServingOptions o;
  const Plan p = make_plan(io::load_model("llama-3.1-405b"), io::load_gpu("h100-sxm"), o, 4096, 1);
  CHECK(p.capacity.max_kv_tokens == 0);
  CHECK(p.capacity.max_concurrent_requests == 0);
  CHECK(p.memory.kv_budget_bytes == 0);
  CHECK_FALSE(p.memory.note.empty());
}

TEST_CASE("a calibration's measured reserve replaces the default") {
  ServingOptions o;
  o.calibration.runtime_reserve_bytes = 3LL << 30;
  const MemoryBudget b = memory_budget(io::load_model("llama-3-8b"), gpu_80gib(), o);
  CHECK(b.reserve_bytes == 3LL << 30);
}

TEST_CASE("validate rejects TP that does not divide the heads, naming the option") {
  ServingOptions o;
  o.tp = 3;
  CHECK_THROWS_WITH_AS(validate(io::load_model("llama-3-8b"), o, "command line"),
                       "command line: key '--tensor-parallel-size': expected a divisor of num_attention_heads (32 "
                       "for llama-3-8b), got 3",
                       InputError);
}

TEST_CASE("validate rejects a KIVI residual that is not a multiple of its group") {
  ServingOptions o;
  o.kv_cache_dtype = DType::int4;
  o.kv_quant = KvQuant::kivi;
  o.kv_residual = 100;
  CHECK_THROWS_AS(validate(io::load_model("llama-3-8b"), o, "command line"), InputError);
}
