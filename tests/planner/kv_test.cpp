// KV-cache bytes (planner.h: kv_layout, kv_bytes_per_token, kv_bytes_per_request, blocks).
// Hand formula: 2 (K and V) · layers · kv heads · head_dim · bytes per element.
#include <doctest/doctest.h>

#include "io/config_io.h"
#include "planner/planner.h"

using namespace kvplan;

namespace {
ServingOptions kv(DType d, KvQuant q = KvQuant::raw) {
  ServingOptions o;
  o.kv_cache_dtype = d;
  o.kv_quant = q;
  return o;
}
}  // namespace

TEST_CASE("fp16 KV per token: 32 layers · 2 · 32 heads · 128 · 2 B = 524,288 B for LLaMA-7B") {
  CHECK(kv_bytes_per_token(io::load_model("llama-7b"), kv(DType::fp16)) == 2 * 32 * 32 * 128 * 2);
  CHECK(kv_bytes_per_token(io::load_model("llama-7b"), kv(DType::fp16)) == 524288);
}

TEST_CASE("fp16 KV per token matches docs/references.md for GQA and MLA models") {
  CHECK(kv_bytes_per_token(io::load_model("llama-2-70b"), kv(DType::fp16)) == 2 * 80 * 8 * 128 * 2);  // 327,680
  CHECK(kv_bytes_per_token(io::load_model("llama-3-8b"), kv(DType::fp16)) == 131072);
  // MLA stores one latent of kv_lora_rank + rope dims per layer: (512 + 64) · 2 B · 61.
  CHECK(kv_bytes_per_token(io::load_model("deepseek-v3"), kv(DType::fp16)) == 70272);
  // DeepSeek-V2-Lite: (512 + 64) · 2 B · 27 layers.
  CHECK(kv_bytes_per_token(io::load_model("deepseek-v2-lite"), kv(DType::fp16)) == 576 * 2 * 27);
}

TEST_CASE("a quantized cache's metadata follows its scheme, for Llama-2-70B at 2,048 tokens") {
  // docs/references.md: 335,544,320 K+V elements per request; fp16 = 671,088,640 B.
  const ModelConfig m = io::load_model("llama-2-70b");
  CHECK(kv_bytes_per_request(m, kv(DType::fp16), 2048) == 671088640);
  CHECK(kv_bytes_per_request(m, kv(DType::int4), 2048) == 167772160);  // raw: 4.00 bits
  ServingOptions per128 = kv(DType::int4, KvQuant::per_token);
  per128.kv_group = 128;
  CHECK(kv_bytes_per_request(m, per128, 2048) == 178257920);  // 4.25 bits, 3.76×
  ServingOptions per32 = kv(DType::int4, KvQuant::per_token);
  per32.kv_group = 32;
  CHECK(kv_bytes_per_request(m, per32, 2048) == 209715200);  // 5.00 bits, 3.20×
  // KIVI G = 32, R = 128: 1,920 tokens at 5 bits, 128 at 16: 238,551,040 B (2.81×).
  CHECK(kv_bytes_per_request(m, kv(DType::int4, KvQuant::kivi), 2048) == 238551040);
}

TEST_CASE("KVQuant nuq4 with 1 % outliers averages 4.32-4.35 bits per element (paper's figure)") {
  const KvLayout l = kv_layout(io::load_model("llama-7b"), kv(DType::int4, KvQuant::kvquant));
  CHECK(l.bits_per_elem > 4.32);
  CHECK(l.bits_per_elem < 4.35);
}

TEST_CASE("quantization schemes do not apply to 16-bit caches") {
  const ModelConfig m = io::load_model("llama-2-70b");
  CHECK(kv_bytes_per_request(m, kv(DType::fp16, KvQuant::kivi), 2048) == 671088640);
}

TEST_CASE("sliding-window layers keep at most their window") {
  // Mistral-7B v0.1: every layer slides over 4,096 tokens; 131,072 B per token.
  const ModelConfig mistral = io::load_model("mistral-7b");
  CHECK(kv_bytes_per_request(mistral, kv(DType::fp16), 8192) == 4096LL * 131072);
  CHECK(kv_bytes_per_request(mistral, kv(DType::fp16), 1000) == 1000LL * 131072);
  // Gemma-2-27B: 23 sliding layers (4,096) and 23 global; 2 · 16 · 128 · 2 = 8,192 B per layer-token.
  const ModelConfig gemma = io::load_model("gemma-2-27b");
  CHECK(kv_bytes_per_request(gemma, kv(DType::fp16), 8192) == 23LL * 8192 * (4096 + 8192));
}

TEST_CASE("TP shards KV heads, and replicates them when there are fewer heads than GPUs") {
  const ModelConfig m = io::load_model("llama-3-8b");  // 8 KV heads
  ServingOptions o = kv(DType::fp16);
  o.tp = 4;
  CHECK(kv_bytes_per_token_per_gpu(m, o) == 32 * 2 * 2 * 128 * 2);  // 2 heads per GPU
  o.tp = 16;
  CHECK(kv_bytes_per_token_per_gpu(m, o) == 32 * 2 * 1 * 128 * 2);  // 1 head, held twice
  CHECK(kv_layout(m, o).replication == 2);
  CHECK(kv_bytes_per_token(m, o) == 131072);  // the model's own KV is unchanged
}

TEST_CASE("MLA's latent is replicated on every TP rank") {
  ServingOptions o = kv(DType::fp16);
  o.tp = 8;
  CHECK(kv_bytes_per_token_per_gpu(io::load_model("deepseek-v3"), o) == 70272);
}

TEST_CASE("PP splits layers: Llama-2-70B over 2 stages keeps 40 layers per GPU") {
  ServingOptions o = kv(DType::fp16);
  o.pp = 2;
  CHECK(kv_bytes_per_token_per_gpu(io::load_model("llama-2-70b"), o) == 40 * 2 * 8 * 128 * 2);
}

TEST_CASE("a paged request holds ceil(tokens / block_size) blocks") {
  const ModelConfig m = io::load_model("llama-3-8b");
  ServingOptions o = kv(DType::fp16);
  CHECK(kv_blocks_per_request(m, o, 16) == 1);
  CHECK(kv_blocks_per_request(m, o, 17) == 2);
  CHECK(kv_blocks_per_request(m, o, 2049) == 129);
  o.block_size = 32;
  CHECK(kv_blocks_per_request(m, o, 2049) == 65);
  CHECK(kv_block_bytes_per_gpu(m, o) == 32 * 131072);
}

TEST_CASE("the --kv-heads what-if turns Llama-2-70B back into MHA: 8× the KV") {
  ServingOptions o = kv(DType::fp16);
  o.kv_heads = 64;
  const ModelConfig mha = apply_what_if(io::load_model("llama-2-70b"), o);
  CHECK(kv_bytes_per_request(mha, o, 2048) == 5368709120LL);  // the seed's 5.37 GB
}

TEST_CASE("a KIVI request's paged footprint never shrinks as tokens are appended") {
  // Exact KIVI bytes drop when 32 residual tokens are quantized (at 160 tokens: 32 at
  // 5 bits, 128 at 16); a pool must hold the largest fp16 window it passes, 128 + 31.
  const ModelConfig m = io::load_model("llama-2-70b");
  ServingOptions o = kv(DType::int4, KvQuant::kivi);
  CHECK(kv_bytes_per_request(m, o, 160) < kv_bytes_per_request(m, o, 159));
  int64_t prev = 0;
  for (int64_t t = 1; t <= 600; ++t) {
    const int64_t blocks = kv_blocks_per_request(m, o, t);
    REQUIRE(blocks >= prev);
    prev = blocks;
  }
  // 2,048 tokens: 1,889 quantized (5 bits each, K and V per token 2 · 8 · 128 elements,
  // 80 layers) and 159 fp16, paged in 16-token blocks of 5 bits (steady state).
  o.block_size = 1;
  const double bits = 80.0 * 2048 * (1889 * 5 + 159 * 16);
  CHECK(kv_request_footprint_per_gpu(m, o, 2048) == static_cast<int64_t>(bits / 8));
}

TEST_CASE("the host KV tier: --kv-offloading-size GiB split over the tp x pp ranks, cut into each rank's blocks") {
  // vLLM: cpu_bytes_to_use = 64 x 2^30 for the engine; TP 2 gives each rank 32 GiB =
  // 34,359,738,368 bytes. Llama-3-8B at TP 2 keeps 4 of its 8 KV heads per GPU:
  // 2 x 32 layers x 4 x 128 x 2 B = 65,536 B per token, 1 MiB per 16-token block, so
  // 32,768 blocks = 524,288 tokens of prefix.
  const ModelConfig m = io::load_model("llama-3-8b");
  ServingOptions o;
  o.tp = 2;
  o.kv_offloading_bytes = int64_t{64} << 30;
  const auto t = host_kv_tier(m, o, 0);
  REQUIRE(t.has_value());
  CHECK(t->bytes_per_gpu == 34359738368);
  CHECK(t->block_bytes_per_gpu == 1048576);
  CHECK(t->blocks == 32768);
  CHECK(t->tokens == 524288);
  CHECK_FALSE(host_kv_tier(m, ServingOptions{}, 0).has_value());
  // Refused where the flag does not run: SGLang (HiCache is its own flag), a vLLM before
  // 0.14 (the flag's first release), prefix caching off, a model with recurrent state.
  ServingOptions sglang = o;
  sglang.engine = Engine::sglang;
  CHECK_THROWS_AS(validate(m, sglang, "test"), InputError);
  ServingOptions v010 = o;
  v010.engine = Engine::vllm;
  v010.engine_version = "0.13";
  CHECK_THROWS_AS(validate(m, v010, "test"), InputError);
  ServingOptions v011 = v010;
  v011.engine_version = "0.14";
  CHECK_NOTHROW(validate(m, v011, "test"));
  ServingOptions nocache = o;
  nocache.enable_prefix_caching = false;
  CHECK_THROWS_AS(validate(m, nocache, "test"), InputError);
  ServingOptions tiny = o;
  tiny.kv_offloading_bytes = 1 << 20;  // 0.5 MiB per GPU: not one 1 MiB block
  CHECK_THROWS_AS(validate(m, tiny, "test"), InputError);
}

TEST_CASE("the disk KV tier: --kv-disk-size GiB for the engine, split over tp x pp, in the host tier's blocks") {
  // 512 GiB on TP 2: 256 GiB = 274,877,906,944 bytes per GPU, in Llama-3-8B's 1 MiB blocks
  // at TP 2 (test above): 262,144 blocks = 4,194,304 tokens below the host tier's 524,288.
  const ModelConfig m = io::load_model("llama-3-8b");
  ServingOptions o;
  o.tp = 2;
  o.kv_offloading_bytes = int64_t{64} << 30;
  o.kv_disk_bytes = int64_t{512} << 30;
  const auto t = host_kv_tier(m, o, 0);
  REQUIRE(t.has_value());
  CHECK(t->disk_bytes_per_gpu == 274877906944);
  CHECK(t->disk_blocks == 262144);
  CHECK(t->disk_tokens == 4194304);
  CHECK_NOTHROW(validate(m, o, "test"));
  // Every engine stages disk blocks through host memory: a disk alone is refused.
  ServingOptions alone;
  alone.kv_disk_bytes = o.kv_disk_bytes;
  CHECK_THROWS_AS(validate(m, alone, "test"), InputError);
}

TEST_CASE("SGLang's HiCache: --hicache-ratio GPU pools, or --hicache-size GB per GPU, and larger than the pool") {
  // memory_pool_host.py: size = hicache_size x 1e9 / bytes per token when given, else
  // ratio x the device pool. Llama-3-8B at TP 1: 2 MiB per 16-token block, so 100 GB is
  // floor(1e11 / 2,097,152) = 47,683 blocks = 762,928 tokens.
  const ModelConfig m = io::load_model("llama-3-8b");
  ServingOptions o;
  o.engine = Engine::sglang;
  o.hicache = ServingOptions::HiCache{};
  const auto by_ratio = host_kv_tier(m, o, 25000);
  REQUIRE(by_ratio.has_value());
  CHECK(by_ratio->blocks == 50000);  // the default ratio 2.0
  CHECK(by_ratio->sized_by == "--hicache-ratio 2 x the GPU pool");
  o.hicache->size_bytes_per_gpu = 100'000'000'000;
  const auto by_size = host_kv_tier(m, o, 25000);
  CHECK(by_size->blocks == 47683);
  CHECK(by_size->tokens == 762928);
  CHECK_THROWS_AS(host_kv_tier(m, o, 47683), InputError);  // not larger than the pool
  ServingOptions one = o;
  one.hicache = ServingOptions::HiCache{1.0, 0};
  CHECK_THROWS_AS(validate(m, one, "test"), InputError);  // SGLang asserts host > device
  ServingOptions vllm = o;
  vllm.engine = Engine::vllm;
  CHECK_THROWS_AS(validate(m, vllm, "test"), InputError);  // HiCache is SGLang's
  ServingOptions both = o;
  both.kv_offloading_bytes = int64_t{64} << 30;
  CHECK_THROWS_AS(validate(m, both, "test"), InputError);
}
