// The seed document's numbers (docs/references.md "The seed document"), pinned to their correct values.
#include <doctest/doctest.h>

#include "io/config_io.h"
#include "planner/planner.h"

using namespace kvplan;

namespace {
ServingOptions fp16() {
  ServingOptions o;
  o.kv_cache_dtype = DType::fp16;
  return o;
}
}  // namespace

TEST_CASE("seed: LLaMA-7B MHA fp16 KV at 2,048 tokens is 1,073,741,824 B (1.07 GB = 1.00 GiB)") {
  CHECK(kv_bytes_per_request(io::load_model("llama-7b"), fp16(), 2048) == 2LL * 32 * 2048 * 4096 * 2);
  CHECK(kv_bytes_per_request(io::load_model("llama-7b"), fp16(), 2048) == 1073741824LL);
}

TEST_CASE("seed: the 70B MHA shape (LLaMA-65B, L = 80, d = 8192) holds 5,368,709,120 B per request") {
  const int64_t one = kv_bytes_per_request(io::load_model("llama-65b"), fp16(), 2048);
  CHECK(one == 5368709120LL);
  CHECK(100 * one == 536870912000LL);  // 537 GB for 100 requests
}

TEST_CASE("seed: 70B weights in fp16 are about 138 GB, not 140") {
  ServingOptions o;
  o.dtype = DType::fp16;
  const int64_t w = weight_bytes_per_gpu(io::load_model("llama-2-70b"), o);
  CHECK(static_cast<double>(w) == doctest::Approx(137.95e9).epsilon(0.001));
}

TEST_CASE("seed: Llama-2-70B GQA-8 is 671,088,640 B per request (0.67 GB, the seed rounds to 0.66)") {
  CHECK(kv_bytes_per_request(io::load_model("llama-2-70b"), fp16(), 2048) == 671088640LL);
}

TEST_CASE("seed: GQA-8 + INT4 is 167,772,160 B before metadata, 100 requests 16.8 GB, not 16.5") {
  ServingOptions o;
  o.kv_cache_dtype = DType::int4;
  const int64_t one = kv_bytes_per_request(io::load_model("llama-2-70b"), o, 2048);
  CHECK(one == 167772160LL);
  CHECK(100 * one == 16777216000LL);
}

TEST_CASE("seed: 70B with fp16 weights does not fit one A100-80GB, whatever the KV") {
  const Plan p = make_plan(io::load_model("llama-2-70b"), io::load_gpu("a100-80gb"), fp16(), 2048, 100);
  CHECK(p.capacity.max_concurrent_requests == 0);
  CHECK(p.capacity.limited_by == "weights do not fit");
  CHECK_FALSE(p.fits);
  CHECK(p.memory.note.find("exceed usable memory") != std::string::npos);
}

TEST_CASE("seed: naive projection recompute for LLaMA-7B at T = 2,048 is 3.38e15 (1 FLOP/MAC), not 1.6e15") {
  // 3 · 4096² · 2048 · 2049 / 2 · 32 = 3,379,348,987,969,536.
  CHECK(seed_naive_projection_flops(io::load_model("llama-7b"), 2048) == 3379348987969536.0);
}

TEST_CASE("seed: 1.6 PFLOP at A100's 312 TFLOP/s is 5.1 s, not 5,000 s, the right count takes 21.7 s") {
  CHECK(1.6e15 / 312e12 == doctest::Approx(5.128).epsilon(0.001));
  const double two_per_mac = 2 * seed_naive_projection_flops(io::load_model("llama-7b"), 2048);
  CHECK(two_per_mac / 312e12 == doctest::Approx(21.66).epsilon(0.001));
}

TEST_CASE("seed: fp16 → int4 is 4× the KV only without metadata") {
  const ModelConfig m = io::load_model("llama-2-70b");
  const double fp = static_cast<double>(kv_bytes_per_request(m, fp16(), 2048));
  ServingOptions kivi;
  kivi.kv_cache_dtype = DType::int4;
  kivi.kv_quant = KvQuant::kivi;
  CHECK(fp / static_cast<double>(kv_bytes_per_request(m, kivi, 2048)) == doctest::Approx(2.813).epsilon(0.001));
}
