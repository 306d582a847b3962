// The calibrated step-time model (roofline.cpp, Calibration gemm_* > 0): additive
// per-kernel costs, checked against a decode step worked by hand.
#include <doctest/doctest.h>

#include "io/config_io.h"
#include "planner/planner.h"
#include "tests/fixtures.h"

using namespace kvplan;
using test::tiny_gpu;
using test::tiny_model;
using test::tiny_moe;

namespace {
// Llama-2-7B-like dense model (h 4096, 32 layers, 32 heads of 128, MLP 11008, vocab
// 32000), bf16, and one GPU with a 1e15 FLOP/s peak and 2e12 B/s.
ModelConfig llama2_7b_like() {
  ModelConfig m;
  m.name = "t";
  m.model_type = "llama";
  m.hidden_size = 4096;
  m.num_layers = 32;
  m.num_heads = 32;
  m.num_kv_heads = 32;
  m.head_dim = 128;
  m.intermediate_size = 11008;
  m.vocab_size = 32000;
  m.torch_dtype = DType::bf16;
  return m;
}

GpuSpec gpu_2tb() {
  GpuSpec g;
  g.name = "g";
  g.memory_bytes = 80'000'000'000;
  g.memory_bandwidth_bytes_per_s = 2e12;
  g.peak_flops.bf16 = g.peak_flops.fp16 = 1e15;
  g.interconnect_bytes_per_s = 1e11;
  return g;
}

// Floor 2 us, GEMM FLOPs at 50 %, elementwise at 50 %, 1 ms per step (serial) + 0.1 ms of
// CPU per sequence; GEMM weight reads and KV reads at `bandwidth` of the datasheet.
ServingOptions hand_calibration(double bandwidth) {
  ServingOptions o;
  o.calibration.bandwidth_efficiency = bandwidth;
  o.calibration.kernel_floor_s = 2e-6;
  o.calibration.gemm_bandwidth_efficiency = bandwidth;
  o.calibration.gemm_flops_efficiency = 0.5;
  o.calibration.elementwise_bandwidth_efficiency = 0.5;
  o.calibration.step_overhead_s = 1e-3;
  o.calibration.step_overhead_per_seq_s = 1e-4;
  return o;
}
}  // namespace

TEST_CASE("a calibrated decode step is the sum of its kernel costs, worked by hand") {
  // One sequence at context 1000. Calibration: floor 2 us, GEMM bytes at 100 %, FLOPs at
  // 50 %, elementwise at 50 %, KV reads at 100 %, CPU 1 ms per step + 0.1 ms per sequence.
  const ModelConfig m = llama2_7b_like();
  const GpuSpec g = gpu_2tb();
  ServingOptions o = hand_calibration(1.0);
  const StepTimeModel stm(m, g, o);
  const StepTime t = stm.decode(1, 1000);
  // Weights: 6,738,415,616 params (Llama-2-7B, untied: 2 x 32000 x 4096 embeddings and
  // head + 32 x (4 x 4096^2 + 3 x 4096 x 11008) + norms 65 x 4096) x 2 B = 13,476,831,232 B,
  // of which the step reads the LM head whole but of the input embedding only its one
  // token's row: 13,476,831,232 - 32000 x 4096 x 2 + 4096 x 2 = 13,214,695,424 B -> 6.607 ms. FLOPs of one token: 2 x (32 x (4 x 4096^2 + 3 x 4096 x 11008) + 32000 x
  // 4096) = 12,952,010,752 linear + head, attention 2 x 2 x 4096 x 1000 x 32 = 524,288,000:
  // linear at 5e14 -> 25.9 us; attention charged at prefill_flops_efficiency 0.7 ->
  // 0.749 us. KV read: 1000 x 2 x 32 x 4096 x 2 B = 524,288,000 B -> 262.1 us.
  // Elementwise per token: 32 x 2 B x (8 x 4096 + 3 x 11008 + 2 x 8192) = 5,292,032 B at
  // 1e12 -> 5.29 us. Kernels: (10 x 32 + 3) x 2 us = 646 us. CPU: 1 ms + 0.1 ms x 1.
  const double weights_s = 13214695424.0 / 2e12;
  const double linear_s = (2.0 * (32 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008) + 32000.0 * 4096)) / 5e14;
  const double attn_s = 524288000.0 / 7e14;
  const double kv_s = 524288000.0 / 2e12;
  const double el_s = 5292032.0 / 1e12;
  const double expect = weights_s + linear_s + attn_s + kv_s + el_s + 323 * 2e-6 + 1e-3 + 1e-4;
  CHECK(t.time_s == doctest::Approx(expect).epsilon(2e-3).scale(0));
  CHECK(t.overhead_s == doctest::Approx(323 * 2e-6 + 1.1e-3).epsilon(1e-12).scale(0));

  SUBCASE("under async scheduling the host's 0.1 ms hide behind the GPU's side of the step") {
    // vLLM V1's async scheduling prepares the next step on the CPU while this one runs on
    // the GPU (EngineCore.step_with_batch_queue): a step takes max(GPU side, host). The
    // host is EngineCore's 0.1 ms per sequence; the GPU side is the rest, the serial
    // 1 ms included: expect - 0.1 ms (about 8.55 ms).
    o.async_scheduling = true;
    const StepTime a = StepTimeModel(m, g, o).decode(1, 1000);
    CHECK(a.time_s == doctest::Approx(expect - 1e-4).epsilon(2e-3).scale(0));
    CHECK(a.gpu_s == doctest::Approx(t.time_s - 1e-4).epsilon(1e-12).scale(0));
    CHECK(a.host_s == doctest::Approx(1e-4).epsilon(1e-12).scale(0));
    CHECK(a.overhead_s == doctest::Approx(323 * 2e-6 + 1e-3).epsilon(1e-12).scale(0));
    // 10 ms per sequence: the host's 10 ms are the longer, and the step.
    o.calibration.step_overhead_per_seq_s = 1e-2;
    const StepTime h = StepTimeModel(m, g, o).decode(1, 1000);
    CHECK(h.time_s == doctest::Approx(0.010).epsilon(1e-12).scale(0));
    CHECK(h.overhead_s == doctest::Approx(323 * 2e-6 + 1e-3 + 0.010 - a.gpu_s).epsilon(1e-12).scale(0));
  }
}

TEST_CASE("a profile fitted on another GPU streams at its efficiency x the target's measured bandwidth") {
  // The profile was fitted on GPU F (datasheet 3e12 B/s, measured 2.7e12: 90 %), with
  // GEMM weight reads and KV reads at 0.9 of F's datasheet, i.e. at the whole of what F
  // really streams, elementwise at 0.5. The target X (gpu_2tb: 2e12 B/s) measures 1.5e12
  // (75 %). Transfer factor (1.5 / 2) / (2.7 / 3) = 0.75 / 0.9 = 0.8333: weights and KV at
  // 2e12 x 0.9 x 0.8333 = 1.5e12 B/s (X's measured bandwidth x 0.9 / 0.9), elementwise at
  // 2e12 x 0.5 x 0.8333 = 8.333e11 B/s. The same decode step as above (one sequence at
  // context 1000): weights 13,214,695,424 B / 1.5e12 = 8.810 ms, KV 524,288,000 B /
  // 1.5e12 = 349.5 us, elementwise 5,292,032 B / 8.333e11 = 6.35 us; FLOPs, floors and
  // CPU unchanged (linear at 5e14, attention at 7e14, 323 x 2 us, 1.1 ms).
  const ModelConfig m = llama2_7b_like();
  GpuSpec g = gpu_2tb();
  g.measured_memory_bandwidth_bytes_per_s = 1.5e12;
  ServingOptions o = hand_calibration(0.9);
  o.calibration.gpu = "f";
  o.calibration.gpu_interconnect_bytes_per_s = g.interconnect_bytes_per_s;
  o.calibration.gpu_memory_bandwidth_bytes_per_s = 3e12;
  o.calibration.gpu_measured_memory_bandwidth_bytes_per_s = 2.7e12;
  const double linear_s = (2.0 * (32 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008) + 32000.0 * 4096)) / 5e14;
  const double fixed_s = linear_s + 524288000.0 / 7e14 + 323 * 2e-6 + 1.1e-3;
  const CeilingTransfer x = memory_bandwidth_transfer(o.calibration, g);
  CHECK(x.measured);
  CHECK(x.factor == doctest::Approx(0.75 / 0.9).epsilon(1e-12));
  CHECK(StepTimeModel(m, g, o).decode(1, 1000).time_s ==
        doctest::Approx(13214695424.0 / 1.5e12 + 524288000.0 / 1.5e12 + 5292032.0 / (1e12 * 0.75 / 0.9) + fixed_s)
            .epsilon(2e-3)
            .scale(0));
  SUBCASE("the target without a measured ceiling keeps the datasheet fraction: 2e12 x 0.9 = 1.8e12 B/s") {
    g.measured_memory_bandwidth_bytes_per_s.reset();
    CHECK_FALSE(memory_bandwidth_transfer(o.calibration, g).measured);
    CHECK(StepTimeModel(m, g, o).decode(1, 1000).time_s ==
          doctest::Approx(13214695424.0 / 1.8e12 + 524288000.0 / 1.8e12 + 5292032.0 / 1e12 + fixed_s).epsilon(2e-3).scale(0));
  }
  SUBCASE("the fitted GPU without a measured ceiling: the same datasheet fraction") {
    o.calibration.gpu_measured_memory_bandwidth_bytes_per_s = 0;
    CHECK(memory_bandwidth_transfer(o.calibration, g).factor == 1.0);
    CHECK_FALSE(memory_bandwidth_transfer(o.calibration, g).measured);
  }
  SUBCASE("on the GPU it was fitted on the factor is exactly 1") {
    o.calibration.gpu = g.name;
    o.calibration.gpu_memory_bandwidth_bytes_per_s = g.memory_bandwidth_bytes_per_s;
    o.calibration.gpu_measured_memory_bandwidth_bytes_per_s = 1.5e12;
    CHECK(memory_bandwidth_transfer(o.calibration, g).factor == 1.0);
  }
}

TEST_CASE("a profile fitted on another GPU computes its GEMMs at its efficiency x the measured GEMM fractions' ratio") {
  // The fitted GPU F reached 80 % of its FP8 peak in a measured GEMM; the target X
  // (gpu_2tb, bf16 peak 1e15, given an FP8 peak of 2e15) reaches 0.8e15 = 40 %. Factor
  // 0.4 / 0.8 = 0.5: the profile's 50 % of peak becomes 25 %, linear FLOPs at 2.5e14
  // instead of 5e14 (the bf16 GEMMs take the FP8 ratio: one factor per GPU). A decode
  // step of one sequence (linear + LM head 12,952,010,752 FLOPs, the first test) grows by
  // 12,952,010,752 x (1 / 2.5e14 - 1 / 5e14) = 25.90 us and nothing else moves.
  const ModelConfig m = llama2_7b_like();
  GpuSpec g = gpu_2tb();
  g.peak_flops.fp8 = 2e15;
  g.measured_gemm_flops_per_s = 0.8e15;
  g.measured_gemm_dtype = DType::fp8;
  ServingOptions o = hand_calibration(1.0);
  const double before_s = StepTimeModel(m, g, o).decode(1, 1000).time_s;
  o.calibration.gpu = "f";
  o.calibration.gpu_interconnect_bytes_per_s = g.interconnect_bytes_per_s;
  o.calibration.gpu_measured_gemm_flops_fraction = 0.8;
  o.calibration.gpu_measured_gemm_dtype = DType::fp8;
  const CeilingTransfer x = gemm_flops_transfer(o.calibration, g);
  CHECK(x.measured);
  CHECK(x.factor == doctest::Approx(0.5).epsilon(1e-12));
  const double linear_flops = 2.0 * (32 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008) + 32000.0 * 4096);
  CHECK(StepTimeModel(m, g, o).decode(1, 1000).time_s - before_s ==
        doctest::Approx(linear_flops / 2.5e14 - linear_flops / 5e14).epsilon(1e-9));
  SUBCASE("measured at different dtypes: no transfer, the datasheet fraction") {
    g.measured_gemm_dtype = DType::bf16;
    CHECK_FALSE(gemm_flops_transfer(o.calibration, g).measured);
    CHECK(StepTimeModel(m, g, o).decode(1, 1000).time_s == doctest::Approx(before_s).epsilon(1e-12));
  }
  SUBCASE("the target not measured: factor 1") {
    g.measured_gemm_flops_per_s.reset();
    CHECK(gemm_flops_transfer(o.calibration, g).factor == 1.0);
    CHECK_FALSE(gemm_flops_transfer(o.calibration, g).measured);
  }
  SUBCASE("the fitted GPU not measured: factor 1") {
    o.calibration.gpu_measured_gemm_flops_fraction = 0;
    CHECK_FALSE(gemm_flops_transfer(o.calibration, g).measured);
  }
}

namespace {
ServingOptions calibrated(int64_t tp) {
  ServingOptions o;
  o.tp = tp;
  o.calibration.kernel_floor_s = 2e-6;
  o.calibration.gemm_bandwidth_efficiency = 1.0;
  o.calibration.gemm_flops_efficiency = 0.5;
  o.calibration.allreduce_latency_s = 20e-6;
  o.calibration.allreduce_bus_bytes_per_s = 5e11;
  return o;
}
}  // namespace

TEST_CASE("decode-sized TP all-reduces cost vLLM's custom all-reduce, large ones NCCL's") {
  const ModelConfig m = tiny_model();
  const GpuSpec g = tiny_gpu();
  SUBCASE("TP 2, 10 decode tokens: 10 x 1024 x 2 B = 20,480 B < 8 MiB") {
    const StepTimeModel stm(m, g, calibrated(2));
    // sglang PR #2904's H100 row for vLLM's kernel at TP 2: 8.7 us + 20,480 B x
    // 13.7 us / 3,145,728 B = 8.8784 us; 2 layers x 2 all-reduces.
    CHECK(stm.decode(10, 100).communication_s == doctest::Approx(4 * (8.7e-6 + 20480 * 13.7e-6 / 3145728)).scale(0));
  }
  SUBCASE("TP 4, 64 decode tokens: 131,072 B") {
    const StepTimeModel stm(m, g, calibrated(4));
    CHECK(stm.decode(64, 100).communication_s == doctest::Approx(4 * (9.2e-6 + 131072 * 19.6e-6 / 3145728)).scale(0));
  }
  SUBCASE("TP 2, a 4,096-token prefill: 8,388,608 B is not under the 8 MiB cap -> NCCL") {
    const StepTimeModel stm(m, g, calibrated(2));
    // 20 us + 2 (2-1)/2 x 8,388,608 B / 5e11 B/s = 20 us + 16.777 us, 4 times.
    CHECK(stm.prefill(4096).communication_s == doctest::Approx(4 * (20e-6 + 8388608.0 / 5e11)).scale(0));
  }
  SUBCASE("TP 8 on Hopper caps the custom all-reduce at 256 KiB") {
    const StepTimeModel stm(m, g, calibrated(8));
    // 64 tokens: 131,072 B < 262,144 B -> custom, 11.8 us + 131,072 B x 20.9 us / 3,145,728 B.
    CHECK(stm.decode(64, 100).communication_s == doctest::Approx(4 * (11.8e-6 + 131072 * 20.9e-6 / 3145728)).scale(0));
    // 256 tokens: 524,288 B -> NCCL: 20 us + 2 x 7/8 x 524,288 B / 5e11 B/s.
    CHECK(stm.decode(256, 100).communication_s == doctest::Approx(4 * (20e-6 + 1.75 * 524288 / 5e11)).scale(0));
  }
  SUBCASE("TP 3 has no custom all-reduce (vLLM supports 2, 4, 6, 8) -> NCCL") {
    const StepTimeModel stm(m, g, calibrated(3));
    CHECK(stm.decode(10, 100).communication_s ==
          doctest::Approx(4 * (20e-6 + 2.0 * 2 / 3 * 20480 / 5e11)).scale(0));
  }
  SUBCASE("fitted on another GPU: the NCCL bandwidth scales with the datasheet link, no custom all-reduce") {
    ServingOptions o = calibrated(2);
    o.calibration.gpu = "fitted-elsewhere";
    o.calibration.gpu_interconnect_bytes_per_s = 4 * g.interconnect_bytes_per_s;
    const StepTimeModel stm(m, g, o);
    // Bus bandwidth 5e11 measured over a link 4x this GPU's -> 1.25e11 B/s here. TP 2,
    // 10 tokens: 20 us + 2 (2-1)/2 x 20,480 B / 1.25e11 B/s, 2 layers x 2 all-reduces.
    CHECK(stm.decode(10, 100).communication_s == doctest::Approx(4 * (20e-6 + 20480 / 1.25e11)).scale(0));
    // Same link figure (H100 -> H200: both NVLink 4): the fit and vLLM's custom
    // all-reduce carry over unchanged.
    o.calibration.gpu_interconnect_bytes_per_s = g.interconnect_bytes_per_s;
    const StepTimeModel same(m, g, o);
    CHECK(same.decode(10, 100).communication_s == doctest::Approx(4 * (8.7e-6 + 20480 * 13.7e-6 / 3145728)).scale(0));
  }
  SUBCASE("the uncalibrated roofline keeps its ring model with 5 us per collective") {
    ServingOptions o;
    o.tp = 2;
    const StepTimeModel stm(m, g, o);
    CHECK(stm.decode(10, 100).communication_s == doctest::Approx(4 * (5e-6 + 20480 / 1e11)).scale(0));
  }
}

// The tiny MoE below has experts of width 1024. One expert: 3 x 1024 x 1024 = 3,145,728
// parameters, 6,291,456 B in bf16, 6,291,456 FLOPs per token row.

TEST_CASE("an MoE layer pays a fixed number of launches, not one per expert it touches") {
  // vLLM's fused_experts_impl runs one grouped GEMM launch for gate-up and one for down
  // over all experts (in the dense MLP's places), plus the router GEMM, top-k and moe_sum
  // = 3 more a layer, and moe_align_block_size: 1 kernel under 1,024 token-expert ids with
  // at most 64 experts, else 2. Dense kernels 10 x 2 layers + 3 = 23.
  const StepTimeModel stm(tiny_moe(8, 2, 1024), tiny_gpu(), calibrated(1));
  // 1 and 4 decode tokens (2 and 8 ids): 23 + 2 layers x (3 + 1) = 31 floors, however many
  // of the 8 experts the tokens touch (2 and 5.47).
  CHECK(stm.decode(1, 100).overhead_s == doctest::Approx(31 * 2e-6).scale(0));
  CHECK(stm.decode(4, 100).overhead_s == doctest::Approx(31 * 2e-6).scale(0));
  // 512 tokens = 1,024 ids: the align runs two kernels, 23 + 2 x (3 + 2) = 33 floors.
  CHECK(stm.decode(512, 100).overhead_s == doctest::Approx(33 * 2e-6).scale(0));
  // A shared expert (Qwen-MoE style, width 1024) is a dense MLP of its own: gate-up,
  // activation, down, and its sigmoid gate's GEMM and scale: 5 more a layer = 41 floors.
  ModelConfig shared = tiny_moe(8, 2, 1024);
  shared.shared_expert_intermediate_size = 1024;
  shared.shared_expert_gate = true;
  CHECK(StepTimeModel(shared, tiny_gpu(), calibrated(1)).decode(1, 100).overhead_s == doctest::Approx(41 * 2e-6).scale(0));
}

TEST_CASE("an MoE step reads the weights of the experts its tokens touch") {
  // Uniform top-2 routing over 8 experts: 1 token touches 2, 4 tokens 8 x (1 - 0.75^4) =
  // 5.46875 in expectation. Without KV (0 keys) the 4-token step reads 3.46875 experts more
  // in each of 2 layers: 3.46875 x 6,291,456 B x 2 = 43,646,976 B.
  const StepTimeModel stm(tiny_moe(8, 2, 1024), tiny_gpu(), calibrated(1));
  CHECK(stm.step(0, 0, 4, 0).bytes - stm.step(0, 0, 1, 0).bytes == doctest::Approx(43646976.0));
}

TEST_CASE("each touched expert computes its tokens padded to BLOCK_SIZE_M rows") {
  // vLLM's moe_align_block_size rounds every expert's token count up to a multiple of
  // BLOCK_SIZE_M, which get_default_config (fused_moe.py) sets to 16 while M (tokens) <=
  // E (the GPU's experts) and 64 above (unquantized and per-tensor fp8). Decode step, TP 1,
  // GEMM FLOPs at 5e14 FLOP/s, the refined model charges no decode attention FLOPs.
  // Per token: attention projections 2 layers x 2 x (1024 x 3072 + 1024 x 1024) = 16,777,216,
  // router 2 layers x 2 x 1024 x E, LM head 2 x 1024 x 32,000 = 65,536,000.
  SUBCASE("2 experts, top-2: every token goes to both, so the counts are exact") {
    const StepTimeModel stm(tiny_moe(2, 2, 1024), tiny_gpu(), calibrated(1));
    // 100 tokens > 2 experts: BLOCK_SIZE_M 64, each expert's 100 tokens take 2 blocks =
    // 128 rows: 2 experts x 128 x 6,291,456 x 2 layers = 3,221,225,472 routed FLOPs (100
    // rows would be 2,516,582,400). Router 100 x 8,192; projections 1,677,721,600; LM
    // head 6,553,600,000: 11,453,366,272 FLOPs -> 22.906732544 us.
    CHECK(stm.decode(100, 100).compute_s == doctest::Approx(11453366272.0 / 5e14).epsilon(1e-9));
    // 2 tokens <= 2 experts: BLOCK_SIZE_M 16, each expert's 2 tokens take 16 rows:
    // 2 x 16 x 6,291,456 x 2 = 402,653,184 + router 16,384 + 33,554,432 + 131,072,000.
    CHECK(stm.decode(2, 100).compute_s == doctest::Approx(567296000.0 / 5e14).epsilon(1e-9));
  }
  SUBCASE("8 experts, top-2, 4 tokens: each touched expert is one 16-row block") {
    const StepTimeModel stm(tiny_moe(8, 2, 1024), tiny_gpu(), calibrated(1));
    // An expert receives n ~ Binomial(4, 1/4) <= 4 < 16 tokens: one block when touched,
    // P = 1 - 0.75^4 = 0.68359375: 8 x 16 x 0.68359375 = 87.5 rows a layer (8 real ones),
    // 87.5 x 6,291,456 x 2 = 1,101,004,800 routed FLOPs; router 4 x 2 x 2 x 1024 x 8 =
    // 131,072; projections 67,108,864; LM head 262,144,000: 1,430,388,736 FLOPs.
    CHECK(stm.decode(4, 100).compute_s == doctest::Approx(1430388736.0 / 5e14).epsilon(1e-9));
  }
  SUBCASE("fp8 with 128x128 block scales runs at BLOCK_SIZE_M 64 at any M") {
    GpuSpec g = tiny_gpu();
    g.peak_flops.fp8 = 2e15;
    ModelConfig block = tiny_moe(8, 2, 1024);
    block.weight_quant.method = block.weight_quant.engine_method = "fp8";
    block.weight_quant.bits = 8;
    block.weight_quant.block_rows = block.weight_quant.group = 128;
    block.weight_quant.scale_bits = 32;
    block.weight_quant.compute = DType::fp8;
    ServingOptions per_tensor = calibrated(1);
    per_tensor.quantization = WeightQuant::fp8;
    // One token: 2 experts touched in expectation (8 x 1/4), 64 rows each against 16 with
    // per-tensor scales: (128 - 32) rows x 6,291,456 x 2 layers = 1,207,959,552 FLOPs more
    // at 2e15 x 0.5 = 1e15 FLOP/s.
    const double diff = StepTimeModel(block, g, calibrated(1)).decode(1, 100).compute_s -
                        StepTimeModel(tiny_moe(8, 2, 1024), g, per_tensor).decode(1, 100).compute_s;
    CHECK(diff == doctest::Approx(1207959552.0 / 1e15).epsilon(1e-9));
  }
}

TEST_CASE("W8A8 FP8 adds one activation-quantization kernel per GEMM input") {
  // Tiny model (2 layers, h 1024, q 8 x 128 = 1024, MLP 4096), TP 1. Dense: QKV, O,
  // gate-up, down inputs = 4 kernels x 2 layers = 8 more floors of 2 us = 16 us; the
  // quantization bytes per token, (2 + 1) B x 2 layers x (2 x 1024 + 1024 + 4096) = 43,008 B,
  // go to the elementwise term, which this calibration leaves at 0 efficiency (off).
  // MoE (8 experts of 1024, top 2, every layer): 2 more per MoE layer = 12 kernels = 24 us.
  const GpuSpec g = tiny_gpu();
  ModelConfig m = tiny_model();
  ServingOptions bf16 = calibrated(1);
  ServingOptions fp8 = calibrated(1);
  fp8.quantization = WeightQuant::fp8;
  const double dense_extra = StepTimeModel(m, g, fp8).decode(1, 100).overhead_s -
                             StepTimeModel(m, g, bf16).decode(1, 100).overhead_s;
  CHECK(dense_extra == doctest::Approx(16e-6).scale(0));
  m.num_experts = 8;
  m.experts_per_token = 2;
  m.moe_intermediate_size = 1024;
  const double moe_extra = StepTimeModel(m, g, fp8).decode(1, 100).overhead_s -
                           StepTimeModel(m, g, bf16).decode(1, 100).overhead_s;
  CHECK(moe_extra == doctest::Approx(24e-6).scale(0));
}

TEST_CASE("an MLA prefill chunk pays the decompression of the context it follows") {
  // DeepSeek-V3: kv_b_proj over each cached latent, 2 x 512 x 128 heads x (128 + 128) x 61
  // layers = 2,046,820,352 FLOPs per cached token (flops.cpp); a 1,024-token chunk after
  // 31,744 cached tokens: 64,974,265,253,888 FLOPs more, GEMM FLOPs at 5e14 FLOP/s on one GPU.
  const ModelConfig m = io::load_model("deepseek-v3");
  const StepTimeModel stm(m, tiny_gpu(), calibrated(1));
  const double pairs = stm.kv_traffic().prefill_pairs(31744, 1024);
  const double diff = stm.step(1024, pairs, 0, 0, 1, 31744).compute_s - stm.step(1024, pairs, 0, 0, 1, 0).compute_s;
  CHECK(diff == doctest::Approx(64974265253888.0 / 5e14).epsilon(1e-9));
  // A decode step follows its context in the absorbed form: nothing to decompress.
  CHECK(stm.step(0, 0, 1, 32768, 1, 31744).compute_s == stm.step(0, 0, 1, 32768).compute_s);
}
