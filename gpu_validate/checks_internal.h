// Pieces of the check list shared by the CPU and CUDA backends. Internal.
#pragma once

#include <string>
#include <vector>

#include "gpu_validate/memory.h"
#include "gpu_validate/validate.h"

namespace kvplan::gv::detail {

//! Check 3: quantization bytes and errors (arithmetic: the same on every backend).
void add_kv_quant_checks(std::vector<Check>& out, const Options& o);
//! Check 4: the checks of one memory run; `what` says what the arena was, `tag` ends
//! each check's name (names are unique in a report).
void add_memory_checks(std::vector<Check>& out, const MemoryCheck& r, const std::string& what,
                       const std::string& tag);
//! Check 1 on the CPU reference: FLOP counters against the planner, exact.
void add_decode_flop_checks(std::vector<Check>& out, bool quick);

}  // namespace kvplan::gv::detail
