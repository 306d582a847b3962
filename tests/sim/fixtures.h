// Test fixtures for the simulator: workloads written out by hand (and the shared model
// and GPU), so the tests depend on neither the catalog files nor the workload loader.
#pragma once

#include <memory>
#include <vector>

#include "planner/types.h"
#include "sim/workload.h"
#include "tests/fixtures.h"

namespace kvplan::sim::test {

// The model and GPU are the shared fixtures (tests/fixtures.h).
using kvplan::test::h100;
using kvplan::test::llama3_8b;

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
