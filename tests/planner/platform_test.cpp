// What a GPU file's platform keys decide (docs/formats.md "GPU file"): collectives beyond
// the scale-up domain cross the scale-out NIC, FP8 W8A8 needs compute capability 8.9, and
// memory shared with the CPU caps what the engine can ask for. Every expected figure is
// worked by hand in the comments.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "io/config_io.h"
#include "planner/planner.h"

using namespace kvplan;

namespace {

ServingOptions layout(int64_t tp, int64_t pp) {
  ServingOptions o;
  o.tp = tp;
  o.pp = pp;
  return o;
}

// Llama-3.1-70B (hidden 8192, 80 layers, bf16) decoding 64 sequences: each all-reduce
// carries 64 x 8192 x 2 B = 1,048,576 B; 2 all-reduces a layer = 160 a step.
constexpr double kMessageBytes = 1048576;
constexpr double kAllReduces = 160;

}  // namespace

TEST_CASE("TP 16 on HGX H100 pays the NIC between its two 8-GPU domains") {
  const ModelConfig m = io::load_model("llama-3.1-70b");
  const GpuSpec g = io::load_gpu("h100-sxm");  // NVLink 450 GB/s; ConnectX-7 50 GB/s, 15 us
  REQUIRE(g.scale_up_domain_gpus == 8);
  // Hierarchical all-reduce of B = 1,048,576 B over d = 8 GPUs per domain, n = 2 domains:
  //   within: 2 x 7/8 x B / 450e9 + 5 us            = 4.07782 us + 5 us
  //   across: 2 x 1/2 x (B / 8) / 50e9 + 15 us      = 2.62144 us + 15 us
  //   = 26.69926 us each, x 160 = 4.271882 ms.
  const double hierarchical = 2 * 7.0 / 8 * kMessageBytes / 450e9 + 5e-6 + (kMessageBytes / 8) / 50e9 + 15e-6;
  const StepTimeModel tp16(m, g, layout(16, 1));
  CHECK(tp16.decode(64, 1000).communication_s == doctest::Approx(kAllReduces * hierarchical));
  CHECK(kAllReduces * hierarchical == doctest::Approx(4.271882e-3).epsilon(1e-6));
  // Priced at NVLink as one ring it would be 2 x 15/16 x B / 450e9 + 5 us = 9.369 us each:
  // the NIC makes the step's communication 2.85x that.
  const double flat = 2 * 15.0 / 16 * kMessageBytes / 450e9 + 5e-6;
  CHECK(tp16.decode(64, 1000).communication_s > 2.8 * kAllReduces * flat);
  // TP 8 stays on the board's NVLink: 2 x 7/8 x B / 450e9 + 5 us.
  const StepTimeModel tp8(m, g, layout(8, 1));
  CHECK(tp8.decode(64, 1000).communication_s == doctest::Approx(kAllReduces * (2 * 7.0 / 8 * kMessageBytes / 450e9 + 5e-6)));
  // The plan says so.
  ServingOptions o = layout(16, 1);
  const Plan p = make_plan(m, g, o, 1000, 64);
  CHECK(p.scale_out_note.find("span 2 scale-up domains of 8 GPUs") != std::string::npos);
  CHECK(p.scale_out_note.find("TP all-reduces") != std::string::npos);
  CHECK(make_plan(m, g, layout(8, 1), 1000, 64).scale_out_note.empty());
}

TEST_CASE("GB200 NVL72 keeps TP 16 on NVLink: one 72-GPU domain") {
  const ModelConfig m = io::load_model("llama-3.1-70b");
  const GpuSpec g = io::load_gpu("gb200-nvl72");  // NVLink 5: 900 GB/s per direction
  REQUIRE(g.scale_up_domain_gpus == 72);
  // One ring over 16 GPUs: 2 x 15/16 x 1,048,576 / 900e9 + 5 us = 2.18453 + 5 = 7.18453 us,
  // x 160 = 1.149525 ms.
  const StepTimeModel tp16(m, g, layout(16, 1));
  CHECK(tp16.decode(64, 1000).communication_s == doctest::Approx(1.149525e-3).epsilon(1e-6));
  CHECK(make_plan(m, g, layout(16, 1), 1000, 64).scale_out_note.empty());
}

TEST_CASE("a pipeline stage boundary between domains is a NIC send") {
  const ModelConfig m = io::load_model("llama-3.1-70b");
  const GpuSpec g = io::load_gpu("h100-sxm");
  // TP 8 x PP 2: each stage fills one 8-GPU board, so the one boundary leaves it: the
  // 64 x 8192 x 2 B = 1,048,576 B of hidden states cross the 50 GB/s NIC at 15 us:
  // 20.97152 + 15 = 35.97152 us (on NVLink it would be 2.33017 + 5 us). The TP all-reduces
  // (all 80 layers, stage after stage) are those of TP 8 alone.
  const StepTimeModel pp1(m, g, layout(8, 1));
  const StepTimeModel pp2(m, g, layout(8, 2));
  CHECK(pp2.decode(64, 1000).communication_s - pp1.decode(64, 1000).communication_s ==
        doctest::Approx(kMessageBytes / 50e9 + 15e-6));
  // TP 2 x PP 4 fits one board (8 GPUs): every boundary on NVLink, 3 x (B / 450e9 + 5 us).
  const StepTimeModel tp2pp1(m, g, layout(2, 1));
  const StepTimeModel tp2pp4(m, g, layout(2, 4));
  CHECK(tp2pp4.decode(64, 1000).communication_s - tp2pp1.decode(64, 1000).communication_s ==
        doctest::Approx(3 * (kMessageBytes / 450e9 + 5e-6)));
  // TP 2 x PP 8 on 16 GPUs: 4 stages a board, so of the 7 boundaries 1 (after stage 4)
  // crosses: 6 x (B / 450e9 + 5 us) + (B / 50e9 + 15 us).
  const StepTimeModel tp2pp8(m, g, layout(2, 8));
  CHECK(tp2pp8.decode(64, 1000).communication_s - tp2pp1.decode(64, 1000).communication_s ==
        doctest::Approx(6 * (kMessageBytes / 450e9 + 5e-6) + kMessageBytes / 50e9 + 15e-6));
}

TEST_CASE("a group beyond 8 GPUs on a GPU file without scale_up is refused, naming the key") {
  const ModelConfig m = io::load_model("llama-3.1-70b");
  GpuSpec g = io::load_gpu("h100-sxm");
  g.scale_up_domain_gpus = 0;  // a file written before the key
  CHECK_NOTHROW(StepTimeModel(m, g, layout(8, 1)));
  CHECK_THROWS_WITH_AS(StepTimeModel(m, g, layout(16, 1)), doctest::Contains("scale_up.domain_gpus"), InputError);
  // Beyond the domain with no scale-out link in the file.
  g = io::load_gpu("h100-sxm");
  g.kv_links.reset();
  CHECK_THROWS_WITH_AS(StepTimeModel(m, g, layout(16, 1)), doctest::Contains("kv_links.rdma"), InputError);
}

TEST_CASE("FP8 weights below compute capability 8.9 run weight-only (Marlin W8A16), as vLLM does") {
  // vLLM's Fp8LinearMethod: use_marlin = not has_device_capability(89) (quantization/fp8.py);
  // "Ampere GPUs are supported for W8A16 (weight-only FP8) utilizing Marlin kernels"
  // (docs/features/quantization/fp8.md). So no per-token activation-quantization kernel.
  // The calibrated model counts kernels: 10 per layer + 3, and W8A8 adds 4 per dense layer.
  const ModelConfig m = io::load_model("llama-3.1-70b");
  ServingOptions o;
  o.quantization = WeightQuant::fp8;
  o.quantization_given = true;
  o.calibration.gemm_flops_efficiency = 0.7;
  o.calibration.gemm_bandwidth_efficiency = 0.8;
  o.calibration.kernel_floor_s = 1e-6;
  const GpuSpec a100 = io::load_gpu("a100-80gb");  // compute capability 8.0
  REQUIRE(a100.compute_capability_x10 == 80);
  // A100: 10 x 80 + 3 = 803 kernels x 1 us.
  CHECK(StepTimeModel(m, a100, o).decode(8, 1000).overhead_s == doctest::Approx(803e-6));
  // H100 (9.0): W8A8, 803 + 4 x 80 = 1,123 kernels.
  CHECK(StepTimeModel(m, io::load_gpu("h100-sxm"), o).decode(8, 1000).overhead_s == doctest::Approx(1123e-6));
  // The weights stay 1 byte on both: the A100 plan's weights equal the H100 plan's.
  ServingOptions plain = o;
  plain.calibration = Calibration{};
  CHECK(make_plan(m, a100, plain, 1000, 1).memory.weights_bytes ==
        make_plan(m, io::load_gpu("h100-sxm"), plain, 1000, 1).memory.weights_bytes);
}

TEST_CASE("GB10: the plan asks for what vLLM's start-up log shows, and refuses where free memory is short") {
  // github.com/MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks issue 47 (2026-08-30), vLLM on a
  // DGX Spark: "Free memory on device (110.37/121.69 GiB) on startup. Desired GPU memory
  // utilization is (0.87, 105.87 GiB)." 0.87 x 121.69 GiB = 105.8703 GiB, 105.87 at the
  // log's two decimals; the check passes since 110.37 >= 105.87.
  const GpuSpec g = io::load_gpu("gb10");
  REQUIRE(g.unified_free_at_start_bytes.has_value());
  const double gib = 1024.0 * 1024 * 1024;
  CHECK(std::round(static_cast<double>(g.memory_bytes) / gib * 100) / 100 == 121.69);
  CHECK(std::round(static_cast<double>(*g.unified_free_at_start_bytes) / gib * 100) / 100 == 110.37);
  const ModelConfig m = io::load_model("llama-3.1-8b");
  ServingOptions o;
  o.engine = Engine::vllm;
  o.gpu_memory_utilization = 0.87;
  const MemoryBudget b = memory_budget(m, g, o);
  CHECK(std::round(static_cast<double>(b.usable_bytes) / gib * 100) / 100 == 105.87);
  CHECK(b.kv_budget_bytes > 0);
  // The same issue's other kits find 101.3-102.2 GiB free at boot, so "the check (wants
  // 105.87 GiB) always fails": no KV pool, and a note saying why and what passes
  // (102.2 / 121.69 = 0.8398 -> at most 0.839).
  GpuSpec short_kit = g;
  short_kit.unified_free_at_start_bytes = static_cast<int64_t>(102.2 * gib);
  const MemoryBudget refused = memory_budget(m, short_kit, o);
  CHECK(refused.kv_budget_bytes == 0);
  CHECK(refused.note.find("does not start") != std::string::npos);
  CHECK(refused.note.find("at most 0.839") != std::string::npos);
  // Engines whose start-up on a shared pool kvplan does not model are refused.
  o.engine = Engine::sglang;
  CHECK_THROWS_WITH_AS(memory_budget(m, g, o), doctest::Contains("unified_memory"), InputError);
}

TEST_CASE("NVFP4 runs W4A4 at the FP4 tensor rate from compute capability 10.0, weight-only (Marlin) below") {
  // vLLM's NVFP4 GEMM (cutlass_scaled_fp4_mm) runs where cutlass_scaled_mm_supports_fp4:
  // capability >= 100 (csrc/quantization/fp4/nvfp4_scaled_mm_entry.cu: sm100a for 10.x,
  // sm120a for 12.x); below it prepare_fp4_layer_for_marlin repacks the weights for the
  // Marlin kernel, 16-bit math (quantization/utils/marlin_utils_fp4.py).
  // One GEMM by hand, Llama-3.1-8B's gate projection at 4096 prefill tokens:
  // 2 x 4096 x 4096 x 14336 = 481,036,337,152 FLOPs; at 70 % of B200's dense FP4
  // 9 PFLOP/s (HGX B200: 18 PF sparse per GPU) 76.355 us, at its bf16 2.25 PFLOP/s 305.42 us.
  constexpr double kGateFlops = 2.0 * 4096 * 4096 * 14336;
  CHECK(kGateFlops == 481036337152.0);
  CHECK(kGateFlops / (9e15 * 0.7) == doctest::Approx(76.355e-6).epsilon(1e-4));
  CHECK(kGateFlops / (2.25e15 * 0.7) == doctest::Approx(305.42e-6).epsilon(1e-4));
  const ModelConfig m = io::load_model("llama-3.1-8b");
  ServingOptions o;
  o.quantization = WeightQuant::modelopt_fp4;
  o.quantization_given = true;
  const GpuSpec b200 = io::load_gpu("b200");
  REQUIRE(b200.compute_capability_x10 == 100);
  // The whole prefill step's FLOPs at the same rates (roofline: FLOPs / (peak x 0.70)).
  const StepTime fp4 = StepTimeModel(m, b200, o).prefill(4096);
  CHECK(fp4.compute_s == doctest::Approx(fp4.flops / (9e15 * 0.7)));
  const StepTime bf16 = StepTimeModel(m, b200, ServingOptions{}).prefill(4096);
  CHECK(fp4.compute_s == doctest::Approx(bf16.compute_s / 4));  // 2.25 / 9
  // RTX 5090 (12.0): its FP4 rate, 1,676 TFLOP/s dense.
  const StepTime rtx = StepTimeModel(m, io::load_gpu("rtx-5090"), o).prefill(4096);
  CHECK(rtx.compute_s == doctest::Approx(rtx.flops / (1676e12 * 0.7)));
  // H200 (9.0): Marlin, the bf16 rate 989.4 TFLOP/s.
  const StepTime h200 = StepTimeModel(m, io::load_gpu("h200"), o).prefill(4096);
  CHECK(h200.compute_s == doctest::Approx(h200.flops / (989.4e12 * 0.7)));
  // MI355X's file has an FP4 rate but no CUDA compute capability: vLLM's FP4 GEMM is a
  // CUDA kernel, so its bf16 rate (2,516.6 TFLOP/s).
  const StepTime mi = StepTimeModel(m, io::load_gpu("mi355x"), o).prefill(4096);
  CHECK(mi.compute_s == doctest::Approx(mi.flops / (2516.6e12 * 0.7)));
  // A Blackwell file without the FP4 rate is refused, naming the key, not run at bf16.
  GpuSpec no_rate = b200;
  no_rate.peak_flops.fp4 = 0;
  CHECK_THROWS_WITH_AS(StepTimeModel(m, no_rate, o), doctest::Contains("peak_flops.fp4"), InputError);
  CHECK_NOTHROW(StepTimeModel(m, no_rate, ServingOptions{}));  // bf16 weights need no FP4 rate
  // W4A4 quantizes each GEMM input first (scaled_fp4_quant), 4 kernels per dense layer:
  // 10 x 32 + 3 = 323 kernels on H200 (Marlin, 16-bit inputs), 323 + 4 x 32 = 451 on B200.
  o.calibration.gemm_flops_efficiency = 0.7;
  o.calibration.gemm_bandwidth_efficiency = 0.8;
  o.calibration.kernel_floor_s = 1e-6;
  CHECK(StepTimeModel(m, io::load_gpu("h200"), o).decode(8, 1000).overhead_s == doctest::Approx(323e-6));
  CHECK(StepTimeModel(m, b200, o).decode(8, 1000).overhead_s == doctest::Approx(451e-6));
}

TEST_CASE("MXFP4 experts (gpt-oss) are weight-only on every GPU: vLLM's default backends keep 16-bit activations") {
  // vllm-project/vllm@007d50058a06dec0f82472d63c819244d460c40d
  // vllm/model_executor/layers/quantization/mxfp4.py get_mxfp4_backend: on SM100 with
  // FlashInfer, SM100_FI_MXFP4_BF16 ("For faster performance on SM100, consider setting
  // VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1"), i.e. mxfp4_w4a16; Hopper: Triton or Marlin;
  // 12.x: Marlin. So B200 runs gpt-oss at its bf16 rate although its file has an FP4 one.
  const ModelConfig m = io::load_model("gpt-oss-20b");
  REQUIRE(m.weight_quant.method == "mxfp4");
  CHECK_FALSE(m.weight_quant.fp4_activations);
  const GpuSpec b200 = io::load_gpu("b200");
  const double t = StepTimeModel(m, b200, ServingOptions{}).prefill(4096).compute_s;
  // The FP4 rate plays no part: without it the time is the same; with twice the bf16
  // rate it halves.
  GpuSpec no_fp4 = b200;
  no_fp4.peak_flops.fp4 = 0;
  CHECK(StepTimeModel(m, no_fp4, ServingOptions{}).prefill(4096).compute_s == doctest::Approx(t));
  GpuSpec twice = b200;
  twice.peak_flops.bf16 *= 2;
  CHECK(StepTimeModel(m, twice, ServingOptions{}).prefill(4096).compute_s == doctest::Approx(t / 2));
}

TEST_CASE("an NVFP4 and an MXFP4 matrix's bytes, worked by hand") {
  // Llama-3.1-8B's gate projection, 14,336 x 4,096 = 58,720,256 weights.
  constexpr int64_t kWeights = 14336LL * 4096;
  // NVFP4 (ModelOpt): e2m1 4 bits = 29,360,128 B; one e4m3 scale per 16 = 3,670,016 B;
  // fp32 weight_scale_2 and input_scale = 8 B: 33,030,152 B (4.5 bits a weight, + 64 bits).
  CHECK(quantized_bytes(quant_spec(WeightQuant::modelopt_fp4), kWeights, 14336, 2) == 33030152);
  // MXFP4 (gpt-oss, config.json quant_method mxfp4): e2m1 4 bits, one e8m0 scale per 32:
  // 29,360,128 + 1,835,008 = 31,195,136 B (4.25 bits).
  QuantSpec mx;
  mx.method = "mxfp4", mx.bits = 4, mx.group = 32, mx.scale_bits = 8;
  CHECK(quantized_bytes(mx, kWeights, 14336, 2) == 31195136);
  // bf16: 117,440,512 B, 3.56x the NVFP4 matrix.
  CHECK(quantized_bytes(QuantSpec{}, kWeights, 14336, 2) == 117440512);
}
