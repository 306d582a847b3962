// Which gpu_validate checks compare measured times, for the tests that run the whole
// check list (tests/gpu_validate/validate_test.cpp, tests/cli/cli_test.cpp).
#pragma once

#include <string_view>

namespace kvplan_test {

//! Checks that compare measured times (on the CPU backend: one shared CI core,
//! preemptible): a loaded machine moves them, so the tests run them and check their
//! form but do not require them to pass. Every other check (FLOP counts, bytes,
//! allocations, quantization arithmetic) must pass on every machine. Names as
//! gpu_validate/checks_cpu.cpp gives them.
inline bool is_timing_check(std::string_view name) {
  for (const std::string_view prefix : {"naive_over_cached_time", "ratio_grows_with_T", "speedup_mha_over_"})
    if (name.substr(0, prefix.size()) == prefix) return true;
  return false;
}

}  // namespace kvplan_test
