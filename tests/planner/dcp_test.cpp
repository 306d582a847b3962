// Decode context parallelism (--dcp, vLLM's --decode-context-parallel-size): KV capacity
// per GPU, the blocks a request holds, the KV each GPU reads, the merge traffic of the
// step, and the layouts refused (docs/long-context.md). Every expected figure is worked
// by hand in the comments.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "io/config_io.h"
#include "planner/planner.h"

using namespace kvplan;

namespace {

// DeepSeek-V3 as served: its fp8 checkpoint, a bf16 cache. MLA caches one latent "head"
// per token and layer: (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 B x 61 layers
// = 70,272 B, whole on every TP rank (vLLM's MLAAttentionSpec is not split by TP).
constexpr int64_t kLatentBytesPerToken = 61 * 576 * 2;

ServingOptions tp_dcp(int64_t tp, int64_t dcp, Engine e = Engine::ideal) {
  ServingOptions o;
  o.tp = tp;
  o.dcp = dcp;
  o.engine = e;
  return o;
}

}  // namespace

TEST_CASE("DeepSeek-V3 TP 8 DCP 8: a GPU holds one token in 8, so its pool holds 8x the tokens") {
  const ModelConfig m = io::load_model("deepseek-v3");
  const GpuSpec g = io::load_gpu("h200");
  const ServingOptions one = tp_dcp(8, 1), eight = tp_dcp(8, 8);
  // The bytes of a token a GPU holds do not change (the latent stays whole), nor does
  // the page of 16 tokens; the scheduler's block becomes 16 x 8 = 128 tokens.
  CHECK(kv_bytes_per_token_per_gpu(m, eight) == kLatentBytesPerToken);
  CHECK(kv_block_bytes_per_gpu(m, eight) == 16 * kLatentBytesPerToken);
  CHECK(kv_block_tokens(eight) == 128);
  // TP 8 keeps 8 copies of the latent; DCP 8 none.
  CHECK(kv_layout(m, one).replication == 8);
  CHECK(kv_layout(m, eight).replication == 1);
  // A 131,072-token request: 131,072 / 16 = 8,192 blocks at DCP 1; 131,072 / 128 = 1,024
  // at DCP 8, each 16 x 70,272 B = 1,124,352 B on every GPU: 1,151,336,448 B per GPU.
  CHECK(kv_blocks_per_request(m, one, 131072) == 8192);
  CHECK(kv_blocks_per_request(m, eight, 131072) == 1024);
  CHECK(kv_request_footprint_per_gpu(m, eight, 131072) == 1024 * 16 * kLatentBytesPerToken);
  // 1,000 tokens: ceil(1,000 / 128) = 8 blocks (the last one partly filled on every GPU).
  CHECK(kv_blocks_per_request(m, eight, 1000) == 8);
  // Same memory budget (DCP adds no weights, no GPU): the same blocks per GPU, each
  // holding 8x the tokens.
  for (const Engine e : {Engine::ideal, Engine::vllm}) {
    const ServingOptions a = tp_dcp(8, 1, e), b = tp_dcp(8, 8, e);
    const Capacity c1 = capacity(m, a, memory_budget(m, g, a), 131072);
    const Capacity c8 = capacity(m, b, memory_budget(m, g, b), 131072);
    CHECK(c8.num_blocks == c1.num_blocks);
    CHECK(c8.max_kv_tokens == 8 * c1.max_kv_tokens);
    CHECK(c8.max_concurrent_requests == c8.num_blocks / 1024);
    CHECK(c1.max_concurrent_requests == c1.num_blocks / 8192);
  }
}

TEST_CASE("vLLM's start-up lines under DCP: the multiplied size and the concurrency of one rank's blocks") {
  const ModelConfig m = io::load_model("deepseek-v3");
  const GpuSpec g = io::load_gpu("h200");
  ServingOptions o = tp_dcp(8, 8, Engine::vllm);
  o.max_model_len = 131072;
  const MemoryBudget b = memory_budget(m, g, o);
  const Capacity c = capacity(m, o, b, 131072);
  const std::string log = engine_startup_lines(m, g, o, b, c);
  // _report_kv_cache_config (vllm/v1/core/kv_cache_utils.py): "Multiplying the GPU KV
  // cache size by the dcp_world_size 8." before the size; the concurrency divides the
  // rank's blocks by cdiv(cdiv(131,072, 8), 16) = 1,024 blocks per request.
  CHECK(log.find("Multiplying the GPU KV cache size by the dcp_world_size 8.\nGPU KV cache size: ") != std::string::npos);
  char want[64];
  std::snprintf(want, sizeof want, "%.2fx", static_cast<double>(c.num_blocks) / 1024.0);
  CHECK(log.find(std::string("Maximum concurrency for 131,072 tokens per request: ") + want) != std::string::npos);
}

TEST_CASE("DCP step: each GPU reads one token in dcp of the KV, and merges the heads' partial outputs") {
  const ModelConfig m = io::load_model("deepseek-v3");
  const GpuSpec g = io::load_gpu("h200");  // NVLink 450 GB/s per direction, 8-GPU domain
  const StepTimeModel one(m, g, tp_dcp(8, 1)), eight(m, g, tp_dcp(8, 8));
  // Doubling the keys of 64 decoding sequences from 64 x 131,072 to 2 x that adds
  // 8,388,608 keys: 8,388,608 x 70,272 B = 589,488,209,920 B per GPU at DCP 1 (every GPU
  // reads every latent), an eighth at DCP 8: 73,686,026,240 B.
  const double keys = 64.0 * 131072;
  CHECK(one.step(0, 0, 64, 2 * keys).bytes - one.step(0, 0, 64, keys).bytes == doctest::Approx(589488209920.0));
  CHECK(eight.step(0, 0, 64, 2 * keys).bytes - eight.step(0, 0, 64, keys).bytes == doctest::Approx(73686026240.0));
  // The merge, per attention layer, for 64 decode tokens (vLLM's cp_lse_ag_out_rs and the
  // all-gather of the absorbed query): 128 heads / TP 8 = 16 local, x 8 = 128 gathered;
  // per token 128 x (576 query + 512 output) x 2 B + 128 x 4 B LSE = 279,040 B; a ring
  // moves 7/8 of the 64 tokens' 17,858,560 B: 15,626,240 B per GPU per layer.
  CHECK(eight.dcp_bytes_per_layer(64) == doctest::Approx(15626240.0));
  CHECK(one.dcp_bytes_per_layer(64) == 0);
  // 61 layers x (3 collectives x 5 us + 15,626,240 B / 450e9 B/s = 34.725 us) = 3.0332 ms,
  // added to the TP all-reduces DCP 1 has too.
  const double merge = 61 * (3 * 5e-6 + 15626240 / 450e9);
  CHECK(eight.decode(64, 131072).dcp_communication_s == doctest::Approx(merge));
  CHECK(eight.decode(64, 131072).communication_s - one.decode(64, 131072).communication_s == doctest::Approx(merge));
  // A prefill-only step has no decode tokens to merge.
  CHECK(eight.prefill(4096).dcp_communication_s == 0);
}

TEST_CASE("GQA under DCP: the copies TP makes of each KV head become shards") {
  // Qwen3-235B-A22B: 4 KV heads, head_dim 128, 94 layers. TP 8 gives each GPU 1 head,
  // two GPUs per head: 94 x 2 x 128 x 2 B = 48,128 B per token per GPU at DCP 1 or 2.
  const ModelConfig q = io::load_model("qwen3-235b-a22b");
  CHECK(kv_bytes_per_token_per_gpu(q, tp_dcp(8, 2)) == 94 * 2 * 128 * 2);
  CHECK(kv_layout(q, tp_dcp(8, 1)).replication == 2);
  CHECK(kv_layout(q, tp_dcp(8, 2)).replication == 1);
  CHECK(kv_blocks_per_request(q, tp_dcp(8, 2), 32768) == 32768 / 32);
  // The merge for GQA gathers query heads of head_dim 128 and values of 128: 64 heads /
  // 8 x 2 = 16 gathered, per token 16 x (256 x 2 + 4) = 8,256 B; 1/2 of 10 tokens' moves.
  const GpuSpec g = io::load_gpu("h200");
  CHECK(StepTimeModel(q, g, tp_dcp(8, 2)).dcp_bytes_per_layer(10) == doctest::Approx(0.5 * 10 * 8256));
}

TEST_CASE("--decode-context-parallel-size refused where vLLM does not run it") {
  const ModelConfig ds = io::load_model("deepseek-v3");
  const ModelConfig qwen = io::load_model("qwen3-235b-a22b");
  const ModelConfig llama = io::load_model("llama-3.1-70b");
  const auto refused = [](const ModelConfig& m, const ServingOptions& o, const char* why) {
    CHECK_THROWS_WITH_AS(validate(m, o, "command line"),
                         doctest::Contains("'--decode-context-parallel-size'"), InputError);
    CHECK_THROWS_WITH_AS(validate(m, o, "command line"), doctest::Contains(why), InputError);
  };
  refused(ds, tp_dcp(8, 3), "a divisor of --tensor-parallel-size (8)");
  refused(ds, tp_dcp(8, 16), "a divisor of --tensor-parallel-size (8)");
  refused(ds, tp_dcp(8, 0), "an integer >= 1");
  // Qwen3: TP 8 makes 2 copies of each of its 4 heads; Llama-3.1-70B at TP 8 none.
  refused(qwen, tp_dcp(8, 4), "--tp / num_key_value_heads = 8 / 4 = 2");
  refused(llama, tp_dcp(8, 2), "--tp / num_key_value_heads = 8 / 8 = 1");
  refused(ds, tp_dcp(8, 8, Engine::sglang), "--engine vllm or ideal");
  ServingOptions old = tp_dcp(8, 8, Engine::vllm);
  old.engine_version = "0.9";
  refused(ds, old, "vLLM 0.10 or later");
  ServingOptions gqa_early = tp_dcp(8, 2, Engine::vllm);
  gqa_early.engine_version = "0.11";
  refused(qwen, gqa_early, "vLLM 0.12 or later for a GQA model");
  CHECK_NOTHROW(validate(ds, tp_dcp(8, 8, Engine::vllm), "command line"));
  ServingOptions mla_first = tp_dcp(8, 4, Engine::vllm);
  mla_first.engine_version = "0.10";
  CHECK_NOTHROW(validate(ds, mla_first, "command line"));
  CHECK_NOTHROW(validate(qwen, tp_dcp(8, 2, Engine::vllm), "command line"));
}

TEST_CASE("dcp_sizes: the sizes vLLM runs, the ones --dcp accepts") {
  const ModelConfig ds = io::load_model("deepseek-v3");
  const ModelConfig qwen = io::load_model("qwen3-235b-a22b");
  const ModelConfig llama = io::load_model("llama-3.1-70b");
  // MLA: the latent is one head, so every divisor of the TP.
  CHECK(dcp_sizes(ds, tp_dcp(8, 1, Engine::vllm)) == std::vector<int64_t>{1, 2, 4, 8});
  CHECK(dcp_sizes(ds, tp_dcp(1, 1, Engine::vllm)) == std::vector<int64_t>{1});
  // GQA: the divisors of tp / num_key_value_heads (Qwen3 at TP 8: 8 / 4 = 2; Llama-3.1-70B: 1),
  // from vLLM 0.12 (MLA from 0.10); SGLang's releases modelled run none.
  CHECK(dcp_sizes(qwen, tp_dcp(8, 1, Engine::vllm)) == std::vector<int64_t>{1, 2});
  CHECK(dcp_sizes(llama, tp_dcp(8, 1, Engine::vllm)) == std::vector<int64_t>{1});
  ServingOptions gqa_early = tp_dcp(8, 1, Engine::vllm);
  gqa_early.engine_version = "0.11";
  CHECK(dcp_sizes(qwen, gqa_early) == std::vector<int64_t>{1});
  ServingOptions mla_first = tp_dcp(8, 1, Engine::vllm);
  mla_first.engine_version = "0.10";
  CHECK(dcp_sizes(ds, mla_first) == std::vector<int64_t>{1, 2, 4, 8});
  CHECK(dcp_sizes(ds, tp_dcp(8, 1, Engine::sglang)) == std::vector<int64_t>{1});
}
