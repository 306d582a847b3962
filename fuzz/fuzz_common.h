// Shared by the libFuzzer targets: the fixed model and GPU the targets plan with, and
// the rule every target enforces: a loader (and the planner on what it loaded) either
// succeeds or throws InputError. Any other exception, a crash, an ASan or UBSan report,
// a hang or an out-of-memory is a bug, and libFuzzer stops on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "planner/planner.h"

namespace kvplan::fuzz {

//! The input as text (bytes as they are: binary garbage included).
inline std::string text_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

//! Llama-3-8B (configs/models/llama-3-8b.yaml), built in code so the targets read no file.
inline ModelConfig llama3_8b() {
  ModelConfig m;
  m.name = "llama-3-8b";
  m.model_type = "llama";
  m.hidden_size = 4096;
  m.num_layers = 32;
  m.num_heads = 32;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.intermediate_size = 14336;
  m.vocab_size = 128256;
  m.max_position_embeddings = 8192;
  return m;
}

//! H100 SXM (configs/gpus/h100-sxm.yaml).
inline GpuSpec h100() {
  GpuSpec g;
  g.name = "h100-sxm";
  g.memory_bytes = 85029158912;
  g.memory_bandwidth_bytes_per_s = 3.35e12;
  g.peak_flops = {67e12, 494.7e12, 989.4e12, 989.4e12, 1978.9e12, 1978.9e12};
  g.interconnect_bytes_per_s = 450e9;
  return g;
}

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
