// Shared by the libFuzzer targets: the fixed model and GPU the targets plan with, and
// the rule every target enforces: a loader (and the planner on what it loaded) either
// succeeds or throws InputError. Any other exception, a crash, an ASan or UBSan report,
// a hang or an out-of-memory is a bug, and libFuzzer stops on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "planner/planner.h"
#include "tests/fixtures.h"

namespace kvplan::fuzz {

//! The input as text (bytes as they are: binary garbage included).
inline std::string text_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The model and GPU the targets plan with, built in code so they read no file
// (tests/fixtures.h: Llama-3-8B, H100 SXM).
using kvplan::test::h100;
using kvplan::test::llama3_8b;

//! What `kvplan plan` does with a loaded model and GPU: validate the options, then plan
//! at a short and a long context. InputError is the only acceptable failure.
inline void plan_with(const ModelConfig& m, const GpuSpec& g) {
  for (const int64_t tp : {int64_t{1}, int64_t{8}}) {
    ServingOptions o;
    o.tp = tp;
    try {
      validate(m, o, "fuzz");
    } catch (const InputError&) {
      continue;
    }
    for (const int64_t context : {int64_t{1}, int64_t{1} << 20}) {
      try {
        (void)make_plan(m, g, o, context, 8);
      } catch (const InputError&) {
      }
    }
  }
}

}  // namespace kvplan::fuzz
