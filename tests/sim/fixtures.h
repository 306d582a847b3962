// Test fixtures for the simulator: a model, a GPU and workloads written out by hand, so
// the tests depend on neither the catalog files nor the workload loader.
#pragma once

#include <memory>
#include <vector>

#include "planner/types.h"
#include "sim/workload.h"

namespace kvplan::sim::test {

//! Llama-3-8B, from its config.json (meta-llama/Meta-Llama-3-8B).
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
  m.torch_dtype = DType::bf16;
  return m;
}

//! H100 SXM 80 GB, datasheet figures (dense peaks).
inline GpuSpec h100() {
  GpuSpec g;
  g.name = "h100-sxm";
  g.memory_bytes = 85029158912;
  g.memory_bandwidth_bytes_per_s = 3.35e12;
  g.peak_flops.fp32 = 67e12;
  g.peak_flops.tf32 = 494.7e12;
  g.peak_flops.bf16 = 989.4e12;
  g.peak_flops.fp16 = 989.4e12;
  g.peak_flops.fp8 = 1978.9e12;
  g.peak_flops.int8 = 1978.9e12;
  g.interconnect_bytes_per_s = 450e9;
  return g;
}

//! `n` requests of fixed lengths, all arriving at t = 0 (a trace of n rows at 0).
inline Workload burst(int64_t n, int64_t prompt, int64_t output) {
  auto rows = std::make_shared<std::vector<TraceRow>>();
  for (int64_t i = 0; i < n; ++i) rows->push_back(TraceRow{0.0, prompt, output});
  Workload w;
  w.name = "burst";
  w.requests = n;
  w.arrival.process = ArrivalProcess::trace;
  w.prompt_tokens.kind = LengthKind::trace;
  w.output_tokens.kind = LengthKind::trace;
  w.trace = rows;
  w.slo = Slo{1e9, 1e9};
  return w;
}

//! Poisson arrivals of fixed-length requests.
inline Workload poisson(int64_t n, double rate_per_s, int64_t prompt, int64_t output) {
  Workload w;
  w.name = "poisson";
  w.requests = n;
  w.arrival = ArrivalSpec{ArrivalProcess::poisson, rate_per_s, 1.0, {}};
  w.prompt_tokens.kind = LengthKind::fixed;
  w.prompt_tokens.value = prompt;
  w.output_tokens.kind = LengthKind::fixed;
  w.output_tokens.value = output;
  w.slo = Slo{1e9, 1e9};
  return w;
}

}  // namespace kvplan::sim::test
