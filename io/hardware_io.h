// kvplan io: purchase data of a GPU type (configs/servers/<gpu>.yaml) into ServerSpec,
// and the platform keys of a GPU file (compute capability, scale-up domain, unified
// memory; docs/formats.md "GPU file"). Every error is an InputError naming the file,
// the key and what was expected.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

#include "planner/hardware.h"
#include "planner/types.h"

namespace kvplan::io {

//! The purchase data for catalog GPU `gpu_name` (configs/servers/<gpu_name>.yaml), or
//! nullopt when the catalog has none for it. A file that exists but is bad throws.
std::optional<ServerSpec> find_server(const std::string& gpu_name);
//! A server file by catalog name or path.
ServerSpec load_server(const std::string& name_or_path);
//! Parses server text; `file` names it in errors.
ServerSpec parse_server(const std::string& text, const std::string& file);

//! Reads a GPU file's optional platform keys into `g`: compute_capability, architecture,
//! peak_flops.fp6 / fp4, scale_up {domain_gpus}, unified_memory {shared_with_cpu,
//! free_at_start_bytes}. `g.memory_bytes` must already be read (free memory is below it).
void parse_gpu_platform(const YAML::Node& n, const std::string& file, GpuSpec& g);

}  // namespace kvplan::io
