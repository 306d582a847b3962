// vLLM's tuned fused-MoE kernel configs, as data (moe_configs.cpp). Internal.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "planner/types.h"

namespace kvplan::detail {

//! One batch key of a tuned config file and the BLOCK_SIZE_M vLLM runs at it.
struct MoeBlockEntry {
  int64_t batch_tokens;
  int64_t block_size_m;
};

//! One file vllm/model_executor/layers/fused_moe/configs/E={experts},N={n},
//! device_name={device}[,dtype={dtype}].json, reduced to its BLOCK_SIZE_M per batch key
//! in the file's order (ascending keys).
struct TunedMoeConfig {
  int64_t experts;          // w2.shape[0]: the experts on one GPU
  int64_t n;                // w2.shape[2]: one expert's intermediate width on one GPU
  std::string_view device;  // current_platform.get_device_name() with spaces as "_"
  std::string_view dtype;   // "" = vLLM's None (16-bit experts); "fp8_w8a8", ...
  std::span<const MoeBlockEntry> entries;
};

//! vLLM's device name for `g` in those file names: the catalog's CUDA device name
//! (configs/gpus `cuda_device_names`, the first) with spaces as underscores; "" without one.
std::string vllm_moe_device_name(const GpuSpec& g);
//! The tuned file vLLM loads for the shape (get_moe_configs), or nullptr: it then runs
//! get_default_config.
const TunedMoeConfig* find_tuned_moe_config(int64_t experts, int64_t n, std::string_view device,
                                            std::string_view dtype);
//! BLOCK_SIZE_M at M = `tokens` (try_get_optimal_moe_config).
int64_t tuned_block_size_m(const TunedMoeConfig& c, double tokens);

}  // namespace kvplan::detail
