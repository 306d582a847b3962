// The calibrated step-time model (roofline.cpp, Calibration gemm_* > 0): additive
// per-kernel costs, checked against a decode step worked by hand.
#include <doctest/doctest.h>

#include "planner/planner.h"

using namespace kvplan;

TEST_CASE("a calibrated decode step is the sum of its kernel costs, worked by hand") {
  // Llama-2-7B-like dense model (h 4096, 32 layers, 32 heads of 128, MLP 11008, vocab
  // 32000), bf16, one GPU with a 1e15 FLOP/s peak and 2e12 B/s. One sequence at context
  // 1000. Calibration: floor 2 us, GEMM bytes at 100 %, FLOPs at 50 %, elementwise at
  // 50 %, KV reads at 100 %, CPU 1 ms per step + 0.1 ms per sequence.
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
  GpuSpec g;
  g.name = "g";
  g.memory_bytes = 80'000'000'000;
  g.memory_bandwidth_bytes_per_s = 2e12;
  g.peak_flops.bf16 = g.peak_flops.fp16 = 1e15;
  g.interconnect_bytes_per_s = 1e11;
  ServingOptions o;
  o.calibration.bandwidth_efficiency = 1.0;
  o.calibration.kernel_floor_s = 2e-6;
  o.calibration.gemm_bandwidth_efficiency = 1.0;
  o.calibration.gemm_flops_efficiency = 0.5;
  o.calibration.elementwise_bandwidth_efficiency = 0.5;
  o.calibration.step_overhead_s = 1e-3;
  o.calibration.step_overhead_per_seq_s = 1e-4;
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
}

namespace {
// A dense model small enough to work by hand: h 1024, 2 layers, 8 heads of 128, MLP 4096.
ModelConfig tiny_model() {
  ModelConfig m;
  m.name = "tiny";
  m.model_type = "llama";
  m.hidden_size = 1024;
  m.num_layers = 2;
  m.num_heads = 8;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.intermediate_size = 4096;
  m.vocab_size = 32000;
  m.torch_dtype = DType::bf16;
  return m;
}
GpuSpec tiny_gpu() {
  GpuSpec g;
  g.name = "g";
  g.memory_bytes = 80'000'000'000;
  g.memory_bandwidth_bytes_per_s = 2e12;
  g.peak_flops.bf16 = g.peak_flops.fp16 = 1e15;
  g.interconnect_bytes_per_s = 1e11;
  return g;
}
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

TEST_CASE("each MoE expert a step touches pays two GEMM floors per MoE layer") {
  // Same model with 8 experts of width 1024, top-2 routing, every layer MoE. One decode
  // token touches exactly 2 experts: 8 x (1 - (1 - 2/8)^1) = 2. Kernel floors: (10 x 2
  // layers + 3) dense kernels + 2 GEMMs x 2 experts x 2 layers = 23 + 8 = 31 floors.
  // Four decode tokens: 8 x (1 - 0.75^4) = 5.46875 experts -> 23 + 2 x 5.46875 x 2 = 44.875.
  ModelConfig m = tiny_model();
  m.num_experts = 8;
  m.experts_per_token = 2;
  m.moe_intermediate_size = 1024;
  const StepTimeModel stm(m, tiny_gpu(), calibrated(1));
  CHECK(stm.decode(1, 100).overhead_s == doctest::Approx(31 * 2e-6).scale(0));
  CHECK(stm.decode(4, 100).overhead_s == doctest::Approx(44.875 * 2e-6).scale(0));
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
