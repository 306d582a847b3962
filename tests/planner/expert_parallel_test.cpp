// Expert parallelism (--ep) and data-parallel attention (--dp): weights, KV and capacity
// per GPU, the MoE token exchange in the step time, and the options refused
// (docs/parallelism.md). Every expected figure is worked by hand in the comments.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "io/config_io.h"
#include "planner/engine_common.h"
#include "planner/engine_detail.h"
#include "planner/planner.h"

using namespace kvplan;

namespace {

// DeepSeek-V3 in bf16 (its BF16 conversion): every weight 2 bytes, so the counts below
// are parameters x 2. Per layer (HF DeepseekV3 config: h 7168, 128 heads, q_lora 1536,
// kv_lora 512, rope 64, nope 128, v 128, expert width 2048, dense width 18432):
//   MLA attention = q_a 7168·1536 + q_a norm 1536 + q_b 1536·128·192 + kv_a 7168·576
//                   + kv_a norm 512 + kv_b 512·128·256 + o 128·128·7168 = 187,107,328
//   one expert    = 3·7168·2048 = 44,040,192
//   dense MLP     = 3·7168·18432 = 396,361,728
// 61 layers, the first 3 dense, 58 MoE (256 routed + 1 shared, router 7168·256).
constexpr int64_t kAttention = 187107328;
constexpr int64_t kExpert = 44040192;
ServingOptions bf16() {
  ServingOptions o;
  o.quantization = WeightQuant::none;
  o.quantization_given = true;
  return o;
}
// DeepSeek-V3's BF16 conversion: the catalog checkpoint with its fp8 quantization_config
// cleared (--quantization none loads a quantized checkpoint as stored, as vLLM does).
ModelConfig deepseek_v3_bf16() {
  ModelConfig m = io::load_model("deepseek-v3");
  m.weight_quant = QuantSpec{};
  return m;
}
ServingOptions layout(int64_t tp, int64_t dp, int64_t ep) {
  ServingOptions o = bf16();
  o.tp = tp;
  o.dp = dp;
  o.ep = ep;
  return o;
}

}  // namespace

TEST_CASE("DeepSeek-V3 weights per GPU: attention and shared parts per DP rank, routed experts over EP") {
  const ModelConfig m = deepseek_v3_bf16();
  // TP 1, DP 8, EP 8: each GPU holds the whole attention, dense MLPs, shared experts,
  // routers, norms, embedding and LM head, and 256 / 8 = 32 whole routed experts a layer:
  //   attention      61 · 187,107,328            = 11,413,547,008
  //   dense MLPs      3 · 396,361,728            =  1,189,085,184
  //   routed experts 58 · 32 · 44,040,192        = 81,738,596,352
  //   shared experts 58 · 44,040,192             =  2,554,331,136
  //   norms 61 · 2 · 7168 = 874,496; routers 58 · 7168 · 256 = 106,430,464
  //   embedding + LM head 2 · 129,280 · 7168 = 1,853,358,080; final norm 7,168
  //   total 98,856,229,888 parameters · 2 B  = 197,712,459,776 B
  CHECK(weight_bytes_per_gpu(m, layout(1, 8, 8)) == 197712459776LL);
  // EP 16 (TP 1, DP 16): 16 experts a layer, the routed term halves to 40,869,298,176:
  // 57,986,931,712 parameters · 2 B.
  CHECK(weight_bytes_per_gpu(m, layout(1, 16, 16)) == 115973863424LL);
  // EP across the TP group (TP 8, EP 8, DP 1): 32 whole experts a GPU hold the same
  // bytes as 256 experts split 8 ways (2048 / 8 = 256 rows each); attention, dense and
  // shared parts, embedding and LM head split 8 ways: 61 · 23,388,416 + 3 · 49,545,216 +
  // 81,738,596,352 + 58 · 5,505,024 + 106,430,464 + 874,496 + 2 · 16,160 · 7168 + 7168
  // = 83,972,198,656 parameters.
  CHECK(weight_bytes_per_gpu(m, layout(8, 1, 8)) == 167944397312LL);
  CHECK(weight_bytes_per_gpu(m, layout(8, 1, 1)) == 167944397312LL);
  // DP without EP (vLLM without --enable-expert-parallel): experts split over TP x DP =
  // 8 GPUs, the same routed bytes as EP 8.
  CHECK(weight_bytes_per_gpu(m, layout(1, 8, 1)) == 197712459776LL);
  // The routed share alone: 58 · 224 fewer experts than TP 1 holds.
  CHECK(weight_bytes_per_gpu(m, bf16()) - weight_bytes_per_gpu(m, layout(1, 8, 8)) == 58LL * 224 * kExpert * 2);
  CHECK(kAttention * 61 * 2 < weight_bytes_per_gpu(m, layout(1, 8, 8)));
}

TEST_CASE("EPLB's redundant experts: (256 + 32) / 8 = 36 experts a GPU instead of 32") {
  const ModelConfig m = deepseek_v3_bf16();
  ServingOptions o = layout(1, 8, 8);
  o.redundant_experts = 32;
  // 4 more experts in each of 58 layers: 58 · 4 · 44,040,192 · 2 B = 20,434,649,088 B over
  // the 197,712,459,776 B of EP 8 without them.
  CHECK(weight_bytes_per_gpu(m, o) == 197712459776LL + 20434649088LL);
  o.engine = Engine::vllm;
  ServingOptions plain = layout(1, 8, 8);
  plain.engine = Engine::vllm;
  const auto stage = detail::pp_stages(m, 1).front();
  CHECK(detail::engine_weight_bytes(m, o, stage) - detail::engine_weight_bytes(m, plain, stage) == 20434649088LL);
  // 256 + 30 = 286 physical experts do not split over 8 GPUs; without EP there is nowhere
  // to put them.
  o.redundant_experts = 30;
  CHECK_THROWS_WITH_AS(validate(m, o, "command line"), doctest::Contains("(256 + 30 = 286)"), InputError);
  ServingOptions no_ep = bf16();
  no_ep.redundant_experts = 32;
  CHECK_THROWS_WITH_AS(validate(m, no_ep, "command line"), doctest::Contains("'--num-redundant-experts'"), InputError);
}

TEST_CASE("vLLM's loader under EP: num_experts / ep whole experts, shared experts split over the TP group") {
  const ModelConfig m = deepseek_v3_bf16();
  ServingOptions o = layout(1, 1, 1);
  o.engine = Engine::vllm;
  const int64_t tp1 = detail::engine_weight_bytes(m, o, detail::pp_stages(m, 1).front());
  ServingOptions ep8 = layout(1, 8, 8);
  ep8.engine = Engine::vllm;
  const int64_t dp8 = detail::engine_weight_bytes(m, ep8, detail::pp_stages(m, 1).front());
  // FusedMoEParallelConfig.make (ep_size = tp x dp = 8): 32 of 256 experts per GPU, the
  // rest (embedding, MLA, rotary cache, shared expert) as at TP 1.
  CHECK(tp1 - dp8 == 58LL * (256 - 32) * kExpert * 2);
  // TP 2 x DP 4 with EP 8: the shared expert is split over TP 2 (its 2048 rows, 1024 each).
  ServingOptions t2 = layout(2, 4, 8);
  t2.engine = Engine::vllm;
  ServingOptions t2_noep = layout(2, 1, 1);
  t2_noep.engine = Engine::vllm;
  const int64_t a = detail::engine_weight_bytes(m, t2, detail::pp_stages(m, 1).front());
  const int64_t b = detail::engine_weight_bytes(m, t2_noep, detail::pp_stages(m, 1).front());
  // TP 2 alone holds 256 half experts (= 128 experts' bytes); EP 8 holds 32 whole ones.
  CHECK(b - a == 58LL * (128 - 32) * kExpert * 2);
}

TEST_CASE("Mixtral and Qwen3-MoE under EP: experts per GPU, attention per DP rank") {
  const ModelConfig mix = io::load_model("mixtral-8x7b");
  // Mixtral-8x7B, TP 2 x DP 4, EP 8: one whole expert (3 · 4096 · 14336 = 176,160,768) per
  // MoE layer per GPU, against 8 experts split over 2 (4 experts' bytes) at TP 2 alone:
  // 32 layers · 3 experts fewer.
  CHECK(weight_bytes_per_gpu(mix, layout(2, 1, 1)) - weight_bytes_per_gpu(mix, layout(2, 4, 8)) ==
        32LL * 3 * 176160768 * 2);
  // Qwen3-30B-A3B (128 experts of 3 · 2048 · 768 = 4,718,592), TP 1 x DP 4, EP 4: 32 experts
  // a GPU, 96 fewer in each of 48 layers than TP 1.
  const ModelConfig q = io::load_model("qwen3-30b-a3b");
  CHECK(weight_bytes_per_gpu(q, layout(1, 1, 1)) - weight_bytes_per_gpu(q, layout(1, 4, 4)) == 48LL * 96 * 4718592 * 2);
  // EP 2 inside TP 4 x DP 1 (SGLang's moe_ep_size 2, moe_tp_size 2): 64 experts a GPU, each
  // split in 2 = 32 experts' bytes, as TP 4 alone (128 / 4).
  CHECK(weight_bytes_per_gpu(q, layout(4, 1, 2)) == weight_bytes_per_gpu(q, layout(4, 1, 1)));
}

TEST_CASE("DP attention: each rank holds its own requests' KV: the MLA latent is whole on every GPU") {
  const ModelConfig m = io::load_model("deepseek-v3");
  // MLA caches kv_lora_rank + rope = 576 elements per layer per token, bf16: 61 · 576 · 2 =
  // 70,272 B on every GPU, whether TP 8 replicates it (vLLM's MLAAttentionSpec is not split
  // by TP) or a DP rank holds it for its own requests.
  CHECK(kv_bytes_per_token_per_gpu(m, layout(8, 1, 8)) == 70272);
  CHECK(kv_bytes_per_token_per_gpu(m, layout(1, 8, 8)) == 70272);
  // The replica holds dp pools: tokens and requests x 8, blocks per GPU unchanged.
  GpuSpec g = io::load_gpu("h200");
  ServingOptions one = layout(1, 8, 8);
  ServingOptions fp8 = one;
  fp8.quantization_given = false;  // the checkpoint's fp8 weights fit an H200
  const MemoryBudget b = memory_budget(m, g, fp8);
  REQUIRE(b.kv_budget_bytes > 0);
  const Capacity c = capacity(m, fp8, b, 4096);
  CHECK(c.num_blocks == b.kv_budget_bytes / (int64_t{70272} * 16));
  CHECK(c.max_kv_tokens == 8 * c.num_blocks * 16);
  // A 4,096-token request holds 256 blocks: requests = 8 · floor(blocks / 256).
  CHECK(c.max_concurrent_requests == 8 * (c.num_blocks / 256));
}

TEST_CASE("MoE token exchange: dispatch + combine per MoE layer, over NVLink within 8 GPUs and the NIC beyond") {
  const ModelConfig m = deepseek_v3_bf16();
  const GpuSpec g = io::load_gpu("h200");  // NVLink 450 GB/s per direction
  // TP 1, DP 8, EP 8, decode of 512 sequences (64 per DP rank): each GPU dispatches its
  // 512 / 8 = 64 tokens to 8 experts each, 7/8 of them on other GPUs, 7168 · 2 B a copy:
  // 64 · 8 · 7/8 · 14,336 = 6,422,528 B per direction per MoE layer;
  // 58 layers · 2 directions · (5 us + 6,422,528 / 450e9 s) = 116 · 19.2723 us = 2.2356 ms.
  // TP 1: no all-reduce.
  const StepTimeModel s8(m, g, layout(1, 8, 8));
  CHECK(s8.decode(512, 1000).communication_s == doctest::Approx(116 * (5e-6 + 6422528 / 450e9)));
  // EP 16 over two nodes: 32 tokens a GPU · 8 · 15/16 · 14,336 = 3,440,640 B over the
  // 50 GB/s NIC: 116 · (5 us + 68.8128 us).
  const StepTimeModel s16(m, g, layout(1, 16, 16));
  CHECK(s16.decode(512, 1000).communication_s == doctest::Approx(116 * (5e-6 + 3440640 / 50e9)));
  // DP 4 without EP: the experts are split over 4 GPUs, each all-gathers the other ranks'
  // tokens: 3/4 · 512 · 14,336 = 5,505,024 B, reduce-scattered back alike.
  const StepTimeModel s4(m, g, layout(1, 4, 1));
  CHECK(s4.decode(512, 1000).communication_s == doctest::Approx(116 * (5e-6 + 5505024 / 450e9)));
  // EP within the TP group (DP 1): vLLM's TP + EP all-reduces as plain TP does (no
  // all-to-all kernels without DP), so the step communicates as TP 8 without EP.
  const StepTimeModel tp8ep(m, g, layout(8, 1, 8));
  const StepTimeModel tp8(m, g, layout(8, 1, 1));
  CHECK(tp8ep.decode(512, 1000).communication_s == doctest::Approx(tp8.decode(512, 1000).communication_s));
}

TEST_CASE("DP attention steps: a rank reads its own sequences' KV, a GPU reads its own experts") {
  const ModelConfig m = deepseek_v3_bf16();
  const GpuSpec g = io::load_gpu("h200");
  const StepTimeModel s(m, g, layout(1, 8, 8));
  // Doubling the keys the step's sequences attend to adds their KV once, split over the 8
  // DP ranks: 80,000 keys · 70,272 B / 8 = 702,720,000 B per GPU.
  const double one = s.step(0, 0, 64, 80000).bytes, two = s.step(0, 0, 64, 160000).bytes;
  CHECK(two - one == doctest::Approx(702720000.0));
  // One decode token touches 8 of 256 experts in all, 8 / 8 = 1 on this GPU (uniform
  // routing): weights read = the GPU's 197,712,459,776 B less 31 of its 32 experts in each
  // of 58 layers (88,080,384 B each): 197,712,459,776 - 158,368,530,432 = 39,343,929,344 B.
  CHECK(s.step(0, 0, 1, 0).bytes == doctest::Approx(39343929344.0));
  // 512 sequences over 8 ranks: each GPU does a (TP x DP)-th of the FLOPs, as at TP 8.
  const StepTimeModel tp8(m, g, layout(8, 1, 1));
  CHECK(s.decode(512, 1000).compute_s == doctest::Approx(tp8.decode(512, 1000).compute_s));
  // One prompt alone runs on one DP rank: its attention, dense and shared-expert FLOPs
  // on that rank's one GPU, only the routed experts' spread over all 8. Routed FLOPs per
  // token: 2 · top-8 · 44,040,192 · 58 layers = 40,869,298,176; bf16 peak 989.4 TFLOP/s at
  // the 70 % prefill efficiency. The fused-MoE kernel pads each expert's tokens to 64 rows
  // (4,096 tokens > the GPU's 32 experts): an expert gets n ~ Binomial(4096, 8/256),
  // E[ceil(n / 64)] = P(n > 0) + P(n > 64) + P(n > 128) + P(n > 192) = 1 + 0.99999999983 +
  // 0.47651259 + 0.00000003 = 2.47651262 (exact binomial sums), so a GPU's 32 experts
  // compute 32 x 64 x 2.47651262 = 5,071.9 rows for 4,096 x 8 / 8 = 4,096 tokens' worth.
  const double all = prefill_flops(m, 4096).total(), routed = 4096 * 40869298176.0;
  const double padded = routed / 8 * (32 * 64 * 2.47651262) / 4096;
  CHECK(s.prefill(4096).compute_s == doctest::Approx((all - routed + padded) / (989.4e12 * 0.7)).epsilon(1e-3));
}

TEST_CASE("logged expert-parallel deployments (tests/data/engine_logs/expert_parallel.yaml)") {
  const YAML::Node root =
      YAML::LoadFile((std::filesystem::path(KVPLAN_TEST_DATA_DIR) / "engine_logs" / "expert_parallel.yaml").string());
  int checked = 0;
  for (const YAML::Node& e : root["entries"]) {
    const std::string id = e["id"].as<std::string>();
    INFO(id << " (" << e["source"].as<std::string>() << ")");
    REQUIRE(!e["log"].as<std::string>().empty());
    const ModelConfig m = io::load_model(e["model"].as<std::string>());
    ServingOptions o;
    o.engine = *parse_engine(e["engine"].as<std::string>());
    o.tp = e["tp"].as<int64_t>();
    o.dp = e["dp"] ? e["dp"].as<int64_t>() : 1;
    o.ep = e["ep"] ? e["ep"].as<int64_t>() : 1;
    validate(m, o, id);
    if (e["logged_kv_line"]) {
      // The per-rank KV line for the logged token count: the MLA cell of one DP rank.
      const std::string lines = detail::sglang_startup_lines(m, o, e["logged_tokens"].as<int64_t>());
      CHECK(lines.find(e["logged_kv_line"].as<std::string>()) != std::string::npos);
      ++checked;
    }
    if (e["logged_weights_gib"]) {
      const auto gib = [&](const ServingOptions& x) {
        return static_cast<double>(detail::engine_weight_bytes(m, x, detail::pp_stages(m, 1).front())) / 1073741824.0;
      };
      const double logged = e["logged_weights_gib"].as<double>();
      ServingOptions plain = o;
      plain.ep = 1;
      CHECK(std::fabs(gib(o) / logged - 1) <= 0.01);
      CHECK(std::fabs(gib(plain) / logged - 1) <= 0.01);
      ++checked;
    }
    if (e["logged_local_experts"]) {
      CHECK(o.ep == o.tp * o.dp);  // vLLM: EP = TP x DP
      CHECK(m.num_experts / o.ep == e["logged_local_experts"].as<int64_t>());
      ++checked;
    }
  }
  CHECK(checked >= 3);
}

TEST_CASE("--ep and --dp refused where they cannot apply") {
  const ModelConfig ds = io::load_model("deepseek-v3");
  const ModelConfig dense = io::load_model("llama-3-8b");
  const ModelConfig mix = io::load_model("mixtral-8x7b");
  CHECK_THROWS_WITH_AS(validate(dense, layout(2, 1, 2), "command line"),
                       doctest::Contains("'--expert-parallel-size'"), InputError);
  CHECK_THROWS_WITH_AS(validate(dense, layout(1, 2, 1), "command line"),
                       doctest::Contains("'--data-parallel-size'"), InputError);
  CHECK_THROWS_WITH_AS(validate(ds, layout(1, 8, 16), "command line"), doctest::Contains("at most the GPUs"),
                       InputError);
  CHECK_THROWS_WITH_AS(validate(ds, layout(1, 8, 3), "command line"), doctest::Contains("a divisor of --tp x --dp"),
                       InputError);
  CHECK_THROWS_WITH_AS(validate(mix, layout(1, 16, 16), "command line"),
                       doctest::Contains("a divisor of the routed experts (8"), InputError);
  ServingOptions v = layout(2, 4, 4);
  v.engine = Engine::vllm;
  CHECK_THROWS_WITH_AS(validate(ds, v, "command line"), doctest::Contains("--enable-expert-parallel sets EP = TP x DP"),
                       InputError);
  CHECK_NOTHROW(validate(ds, layout(2, 4, 8), "command line"));
}
