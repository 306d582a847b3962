// vLLM's tuned fused-MoE configs. fused_experts_impl asks try_get_optimal_moe_config for
// the kernel config at M = min(tokens in the step, VLLM_FUSED_MOE_CHUNK_SIZE) (M counts
// tokens, not token-expert pairs); it loads the file named by E and N of w2's shape
// (E, hidden, N), the device name and the dtype (get_moe_configs, get_config_file_name:
// no dtype suffix for 16-bit experts), and takes
// configs[min(configs.keys(), key=lambda x: abs(x - M))]; without a file,
// get_default_config. vllm-project/vllm@13cb3e44373beb1c8b9d2c017f565af6f7a1b601
// vllm/model_executor/layers/fused_moe/fused_moe.py. Only BLOCK_SIZE_M is kept: it is the
// padding moe_align_block_size gives each expert's tokens (StepTimeModel::fused_moe_rows).
// The files (vllm-project/vllm@<commit>:vllm/model_executor/layers/fused_moe/configs/<name>),
// the shapes kvplan's calibration runs and the common bf16 Mixtral / Llama-4-Scout
// deployments use (N = intermediate size / TP: Mixtral-8x7B 14336, 8x22B 16384, Scout 8192).
#include "planner/moe_configs.h"

#include <array>
#include <cmath>

namespace kvplan::detail {
namespace {

// Mixtral-8x7B TP 2 on H100 SXM: E=8,N=7168,device_name=NVIDIA_H100_80GB_HBM3.json
// @4652ef5d87ed8cf43f8c6f09d31cbf3b87d9b84e (the same at @02ba322d6c22e21885041c524f4a095e25e9bf71).
constexpr std::array<MoeBlockEntry, 18> kH100E8N7168{{{1, 16}, {2, 16}, {4, 16}, {8, 16}, {16, 16}, {24, 16},
                                                      {32, 16}, {48, 32}, {64, 32}, {96, 32}, {128, 64}, {256, 64},
                                                      {512, 64}, {1024, 128}, {1536, 128}, {2048, 128}, {3072, 128},
                                                      {4096, 128}}};
// Mixtral-8x7B TP 4 on H100 SXM: E=8,N=3584,device_name=NVIDIA_H100_80GB_HBM3.json
// @702e0e2086bdaf60031930bf8597cbbb27e0cc53 (the benchmark_moe.py format with GROUP_SIZE_M; an
// older version with SPLIT_K_SIZE, @58d4091fd18c0671365a9d8b8fe980f0f0d81d52, differs).
constexpr std::array<MoeBlockEntry, 18> kH100E8N3584{{{1, 16}, {2, 16}, {4, 16}, {8, 16}, {16, 16}, {24, 16},
                                                      {32, 16}, {48, 32}, {64, 32}, {96, 32}, {128, 64}, {256, 128},
                                                      {512, 64}, {1024, 64}, {1536, 128}, {2048, 128}, {3072, 128},
                                                      {4096, 128}}};
// Mixtral-8x22B TP 4 on H100 SXM: E=8,N=4096,device_name=NVIDIA_H100_80GB_HBM3.json
// @432a38c440655622ff7875c4877f0756c44e1fbf.
constexpr std::array<MoeBlockEntry, 18> kH100E8N4096{{{1, 16}, {2, 16}, {4, 16}, {8, 16}, {16, 16}, {24, 16},
                                                      {32, 16}, {48, 32}, {64, 32}, {96, 32}, {128, 64}, {256, 64},
                                                      {512, 64}, {1024, 128}, {1536, 128}, {2048, 128}, {3072, 128},
                                                      {4096, 128}}};
// Mixtral-8x22B TP 8 on H100 SXM: E=8,N=2048,device_name=NVIDIA_H100_80GB_HBM3.json
// @a0aaf7fd7d58dbf5940fa58e2e15dc3abf242ef6.
constexpr std::array<MoeBlockEntry, 18> kH100E8N2048{{{1, 16}, {2, 16}, {4, 16}, {8, 16}, {16, 16}, {24, 32},
                                                      {32, 16}, {48, 32}, {64, 32}, {96, 32}, {128, 64}, {256, 64},
                                                      {512, 64}, {1024, 128}, {1536, 128}, {2048, 128}, {3072, 128},
                                                      {4096, 128}}};
// Llama-4-Scout (16 experts, 8192 wide) TP 8 on H100 SXM:
// E=16,N=1024,device_name=NVIDIA_H100_80GB_HBM3.json @4a346a504b9fa1e9d0c3c9752317b734e03b8212.
constexpr std::array<MoeBlockEntry, 18> kH100E16N1024{{{1, 16}, {2, 32}, {4, 64}, {8, 16}, {16, 16}, {24, 16},
                                                       {32, 16}, {48, 16}, {64, 16}, {96, 16}, {128, 16}, {256, 64},
                                                       {512, 64}, {1024, 64}, {1536, 128}, {2048, 128}, {3072, 128},
                                                       {4096, 128}}};
// Mixtral-8x7B TP 2 on H200: E=8,N=7168,device_name=NVIDIA_H200.json
// @c6991a3bffc217a79a1c2413da13be7ce923dbf0.
constexpr std::array<MoeBlockEntry, 18> kH200E8N7168{{{1, 16}, {2, 16}, {4, 16}, {8, 32}, {16, 16}, {24, 16},
                                                      {32, 16}, {48, 32}, {64, 32}, {96, 64}, {128, 64}, {256, 128},
                                                      {512, 128}, {1024, 128}, {1536, 128}, {2048, 128},
                                                      {3072, 128}, {4096, 128}}};
// Mixtral-8x7B TP 4 on H200: E=8,N=3584,device_name=NVIDIA_H200.json
// @b56f185f55e03959caa8451e0137afcd69d7ae05.
constexpr std::array<MoeBlockEntry, 18> kH200E8N3584{{{1, 16}, {2, 16}, {4, 16}, {8, 16}, {16, 16}, {24, 16},
                                                      {32, 16}, {48, 32}, {64, 64}, {96, 64}, {128, 64}, {256, 128},
                                                      {512, 128}, {1024, 128}, {1536, 128}, {2048, 128},
                                                      {3072, 128}, {4096, 128}}};
// Mixtral-8x7B TP 2 on A100 SXM 80 GB: E=8,N=7168,device_name=NVIDIA_A100-SXM4-80GB.json
// @0bab2e1251db464c3107b93c780cecb62c2ff8b3.
constexpr std::array<MoeBlockEntry, 18> kA100E8N7168{{{1, 16}, {2, 16}, {4, 16}, {8, 16}, {16, 16}, {24, 16},
                                                      {32, 16}, {48, 32}, {64, 32}, {96, 32}, {128, 32}, {256, 64},
                                                      {512, 64}, {1024, 64}, {1536, 128}, {2048, 128}, {3072, 128},
                                                      {4096, 128}}};

constexpr std::string_view kH100 = "NVIDIA_H100_80GB_HBM3";
constexpr std::string_view kH200 = "NVIDIA_H200";
constexpr std::string_view kA100 = "NVIDIA_A100-SXM4-80GB";

const std::array<TunedMoeConfig, 8> kTuned{{
    {8, 7168, kH100, "", kH100E8N7168},
    {8, 3584, kH100, "", kH100E8N3584},
    {8, 4096, kH100, "", kH100E8N4096},
    {8, 2048, kH100, "", kH100E8N2048},
    {16, 1024, kH100, "", kH100E16N1024},
    {8, 7168, kH200, "", kH200E8N7168},
    {8, 3584, kH200, "", kH200E8N3584},
    {8, 7168, kA100, "", kA100E8N7168},
}};

}  // namespace

std::string vllm_moe_device_name(const GpuSpec& g) {
  if (g.cuda_device_names.empty()) return {};
  std::string name = g.cuda_device_names.front();
  for (char& c : name)
    if (c == ' ') c = '_';
  return name;
}

const TunedMoeConfig* find_tuned_moe_config(int64_t experts, int64_t n, std::string_view device,
                                            std::string_view dtype) {
  for (const TunedMoeConfig& c : kTuned)
    if (c.experts == experts && c.n == n && c.device == device && c.dtype == dtype) return &c;
  return nullptr;
}

int64_t tuned_block_size_m(const TunedMoeConfig& c, double tokens) {
  // Python's min keeps the first of equally near keys: the smaller one (M = 40 between
  // 32 and 48 takes 32).
  const MoeBlockEntry* best = &c.entries.front();
  for (const MoeBlockEntry& e : c.entries)
    if (std::abs(static_cast<double>(e.batch_tokens) - tokens) < std::abs(static_cast<double>(best->batch_tokens) - tokens))
      best = &e;
  return best->block_size_m;
}

}  // namespace kvplan::detail
