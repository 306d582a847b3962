// The pieces of the check lists: one file per check (check_*.cpp), the CPU list in
// checks_cpu.cpp, the CUDA list in checks_cuda.cu. Internal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_validate/memory.h"
#include "gpu_validate/validate.h"

namespace kvplan::gv::detail {

//! A number for a note, 4 significant digits.
std::string num(double v);
//! A dense one-layer model with these attention heads (MLP 4x, vocab 256).
ModelConfig one_layer(int64_t n_heads, int64_t n_kv, int64_t head_dim);

//! Check 1 on the CPU reference: FLOP counters against the planner, exact (every backend).
void add_decode_flop_checks(std::vector<Check>& out, bool quick);
//! Check 1, CPU: naive/cached time ratio against the FLOP ratio.
void add_decode_time_checks(std::vector<Check>& out, bool quick);
//! Check 2, CPU: paged attention correctness, bytes and speed-ups.
void add_attention_checks(std::vector<Check>& out, bool quick);
//! Check 3: quantization bytes and errors (arithmetic: the same on every backend).
void add_kv_quant_checks(std::vector<Check>& out, const Options& o);
//! Check 4: the checks of one memory run; `what` says what the arena was, `tag` ends
//! each check's name (names are unique in a report).
void add_memory_checks(std::vector<Check>& out, const MemoryCheck& r, const std::string& what,
                       const std::string& tag);
//! Check 4, CPU: the planner's pool on a simulated 8 GiB device.
void add_memory_cpu_checks(std::vector<Check>& out);
//! Check 5, CPU: host ceilings (reported) and the calibration measurements of the host.
void add_host_ceiling_checks(std::vector<Check>& out, CalibrationOut& calib, bool quick);

}  // namespace kvplan::gv::detail
