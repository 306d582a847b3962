#include <doctest/doctest.h>

#include "io/config_io.h"
#include "planner/moe_configs.h"
#include "planner/planner.h"
#include "tests/fixtures.h"

using namespace kvplan;

// vLLM picks the fused-MoE kernel config from the tuned file for w2's shape and the GPU:
// configs[min(configs.keys(), key=lambda x: abs(x - M))], M the step's tokens
// (try_get_optimal_moe_config, vllm-project/vllm@13cb3e44373beb1c8b9d2c017f565af6f7a1b601
// vllm/model_executor/layers/fused_moe/fused_moe.py).

TEST_CASE("the tuned file's entry nearest the step's tokens gives BLOCK_SIZE_M") {
  // Mixtral-8x7B at TP 2 on H100 SXM: E=8,N=7168,device_name=NVIDIA_H100_80GB_HBM3.json
  // (vllm-project/vllm@4652ef5d87ed8cf43f8c6f09d31cbf3b87d9b84e): keys 32 -> BLOCK_SIZE_M 16,
  // 48 -> 32, 128 -> 64, 256 -> 64, 512 -> 64, 1024 -> 128, 4096 -> 128.
  const detail::TunedMoeConfig* c = detail::find_tuned_moe_config(8, 7168, "NVIDIA_H100_80GB_HBM3", "");
  REQUIRE(c != nullptr);
  // M = 41: |41 - 48| = 7 < |41 - 32| = 9: key 48, BLOCK_SIZE_M 32.
  CHECK(detail::tuned_block_size_m(*c, 41) == 32);
  // M = 40 is 8 from both 32 and 48; Python's min keeps the first key in the file's
  // (ascending) order, 32: BLOCK_SIZE_M 16.
  CHECK(detail::tuned_block_size_m(*c, 40) == 16);
  // M = 800: |800 - 1024| = 224 < |800 - 512| = 288: key 1024, BLOCK_SIZE_M 128.
  CHECK(detail::tuned_block_size_m(*c, 800) == 128);
  // Beyond the last key (4096) the last entry holds: BLOCK_SIZE_M 128.
  CHECK(detail::tuned_block_size_m(*c, 10000) == 128);
}

TEST_CASE("without a tuned file for the shape, GPU and dtype vLLM uses get_default_config") {
  // vLLM ships no E=8,N=7168,device_name=NVIDIA_L40S.json, and kvplan keeps only the
  // 16-bit (no dtype suffix) files, so the fp8_w8a8 one is not looked up.
  CHECK(detail::find_tuned_moe_config(8, 7168, "NVIDIA_L40S", "") == nullptr);
  CHECK(detail::find_tuned_moe_config(8, 7168, "NVIDIA_H100_80GB_HBM3", "fp8_w8a8") == nullptr);
  // E=8,N=7168 is per-GPU width: Mixtral-8x7B at TP 1 has N=14336, which has no H100 file.
  CHECK(detail::find_tuned_moe_config(8, 14336, "NVIDIA_H100_80GB_HBM3", "") == nullptr);
}

TEST_CASE("vLLM's device name is the CUDA device name with underscores") {
  // current_platform.get_device_name().replace(" ", "_"): the file names say
  // NVIDIA_H100_80GB_HBM3, NVIDIA_H200 and NVIDIA_A100-SXM4-80GB.
  CHECK(detail::vllm_moe_device_name(io::load_gpu("h100-sxm")) == "NVIDIA_H100_80GB_HBM3");
  CHECK(detail::vllm_moe_device_name(io::load_gpu("h200")) == "NVIDIA_H200");
  CHECK(detail::vllm_moe_device_name(io::load_gpu("a100-80gb")) == "NVIDIA_A100-SXM4-80GB");
  CHECK(detail::vllm_moe_device_name(GpuSpec{}).empty());
}

TEST_CASE("a step pads each touched expert's tokens to the tuned BLOCK_SIZE_M") {
  // Tiny MoE: 2 layers, h 1024, 8 experts of width 2048, top-2, TP 1: w2 is (8, 1024, 2048),
  // vLLM's E=8,N=2048 (Mixtral-8x22B at TP 8). Its H100 file
  // (vllm-project/vllm@a0aaf7fd7d58dbf5940fa58e2e15dc3abf242ef6) gives key 24 BLOCK_SIZE_M
  // 32; get_default_config gives 64 (M = 24 > E = 8). An expert receives
  // n ~ Binomial(24, 1/4) <= 24 tokens: one block of either size when touched,
  // P = 1 - 0.75^24 = 0.9989966087. One token row through one expert: 2 x 3 x 1024 x 2048 =
  // 12,582,912 FLOPs. The H100's step computes 8 x (64 - 32) x P x 12,582,912 x 2 layers =
  // 6,435,986,645 FLOPs fewer, at 1e15 x 0.5 FLOP/s: 12.871973 us.
  const ModelConfig m = test::tiny_moe(8, 2, 2048);
  const GpuSpec g = test::tiny_gpu();
  GpuSpec h100 = g;
  h100.cuda_device_names = {"NVIDIA H100 80GB HBM3"};
  ServingOptions o;
  o.calibration.kernel_floor_s = 2e-6;
  o.calibration.gemm_bandwidth_efficiency = 1.0;
  o.calibration.gemm_flops_efficiency = 0.5;
  const double diff = StepTimeModel(m, g, o).decode(24, 100).compute_s - StepTimeModel(m, h100, o).decode(24, 100).compute_s;
  CHECK(diff == doctest::Approx(6435986644.9 / 5e14).epsilon(1e-9));
  // 4 tokens: key 4, BLOCK_SIZE_M 16, as the default (4 <= 8): the same step.
  CHECK(StepTimeModel(m, g, o).decode(4, 100).compute_s == doctest::Approx(StepTimeModel(m, h100, o).decode(4, 100).compute_s));
}
