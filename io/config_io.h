// kvplan io: loading the files users write (model, GPU, calibration) into planner types.
// Every error is an InputError naming the file, the key and what was expected.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "planner/types.h"

namespace kvplan::io {

//! The data folder, the one holding configs/ (docs/ARCHITECTURE.md "Finding the
//! catalog"), first found of: $KVPLAN_DATA_DIR; <folder of the running executable>/
//! KVPLAN_DATA_REL (an installed kvplan: bin/../share/kvplan); the source tree, for an
//! executable inside the build tree that built it. nullopt when none applies.
std::optional<std::filesystem::path> find_data_root();
//! find_data_root(), or an InputError saying where it looked and how to point kvplan at
//! its catalog. $KVPLAN_DATA_DIR set to a folder without configs/ is an error too.
std::filesystem::path data_root();
//! data_root() / "configs".
std::filesystem::path config_root();
//! A catalog name (file stem under configs/<kind>/) or a path to a file, resolved to a
//! path; throws InputError listing the catalog when neither exists.
std::filesystem::path resolve(const std::string& kind, const std::string& name_or_path);
//! File stems in configs/<kind>/, sorted. A missing, unreadable or empty catalog is an
//! InputError naming the folder: never an empty list.
std::vector<std::string> catalog(const std::string& kind);

//! A model file: Hugging Face config.json keys (JSON is YAML) plus kvplan's name/params.
ModelConfig load_model(const std::string& name_or_path);
//! Parses model text; `file` names it in errors.
ModelConfig parse_model(const std::string& text, const std::string& file);

GpuSpec load_gpu(const std::string& name_or_path);
GpuSpec parse_gpu(const std::string& text, const std::string& file);

//! A calibration file (kvplan.calibration/1 or /2) or a catalog name under
//! configs/calibration/.
Calibration load_calibration(const std::string& name_or_path);
//! The profile the CLI's time model uses when no --calibration is given: vLLM 0.15.1 on
//! H100 SXM, fitted on measurements (docs/calibration.md); on other GPUs its
//! efficiencies and host overheads transfer (planner/types.h Calibration::gpu).
inline constexpr const char* kDefaultCalibration = "h100-sxm-vllm";

//! Model, GPU, workload and calibration files are a few KiB; 64 MiB leaves room for any
//! real one while refusing a wrong path (a disk image, a log) before it fills memory.
constexpr int64_t kMaxConfigBytes = int64_t{64} << 20;
//! Reads a whole regular file of at most max_bytes; InputError when it is missing, a
//! directory, a FIFO, a device or another special file, larger, or unreadable.
std::string read_file(const std::filesystem::path& path, int64_t max_bytes = kMaxConfigBytes);

}  // namespace kvplan::io
