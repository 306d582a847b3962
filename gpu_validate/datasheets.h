// GPU datasheet figures and decoder GEMM shapes for the harness, from the catalog
// (configs/gpus, configs/models) through tables generated at configure time
// (datasheets.cmake): the figures have one home, and the device machine needs no YAML.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvplan::gv {

struct Datasheet {
  std::string gpu;          //!< catalog name (configs/gpus/<gpu>.yaml)
  std::string device_name;  //!< as the CUDA driver names the device
  double bandwidth_bytes_per_s = 0;
  double fp32_flops_per_s = 0;  //!< CUDA cores (non-tensor)
  double bf16_flops_per_s = 0;  //!< dense tensor
  double fp8_flops_per_s = 0;   //!< dense tensor; 0 where the GPU has none
};

//! Every catalog GPU with `cuda_device_names`, one row per name.
const std::vector<Datasheet>& datasheets();
//! The row whose device name equals `cuda_device_name` exactly: "NVIDIA L40" is not
//! "NVIDIA L4" and "NVIDIA H100 NVL" is not the SXM part. Empty when none does.
std::optional<Datasheet> datasheet_for_device(std::string_view cuda_device_name);

struct GemmShape {
  std::string model;  //!< catalog model it was first found in
  std::string layer;  //!< qkv, o_proj, mlp_up, mlp_down
  int64_t n = 0;      //!< output features
  int64_t k = 0;      //!< input features
};
//! Distinct (n, k) of the catalog models' decoder-layer GEMMs.
const std::vector<GemmShape>& catalog_gemm_shapes();

}  // namespace kvplan::gv
