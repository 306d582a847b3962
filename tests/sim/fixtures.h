// Test fixtures for the simulator: workloads written out by hand (and the shared model
// and GPU), so the tests depend on neither the catalog files nor the workload loader.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "planner/planner.h"
#include "planner/types.h"
#include "planner/workload.h"
#include "sim/sim.h"
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

//! `groups` users with a 200-token prompt of their own each (13 blocks, 12 full), one
//! output token, 1,000 s apart so each runs alone: users A, B, A, ... in turn.
inline Workload alternating(int64_t groups, int64_t n) {
  Workload w;
  w.name = "alternating";
  w.requests = n;
  w.arrival.process = ArrivalProcess::fixed;
  w.arrival.rate_per_s = 1e-3;
  w.prompt_tokens.kind = LengthKind::fixed;
  w.prompt_tokens.value = 200;
  w.output_tokens.kind = LengthKind::fixed;
  w.output_tokens.value = 1;
  w.shared_prefix = SharedPrefix{groups, 1, 0, true};
  w.slo = Slo{1e9, 1e9};
  return w;
}

//! Serving options of up to 256 sequences (vLLM V0's default max_num_seqs).
inline ServingOptions serving() {
  ServingOptions o;
  o.max_num_seqs = 256;
  return o;
}

//! A run with scheduler `s` that checks the engine's invariants after every step.
inline SimOptions with(Scheduler s) {
  SimOptions o;
  o.scheduler = s;
  o.check_invariants = true;
  return o;
}

//! A run behind a benchmark client on scheduler `s`: at most `n` requests in flight
//! (nullopt: no limit), every request sent at t = 0 when `all_at_once` (vllm bench serve
//! --request-rate inf).
inline SimOptions client(std::optional<int64_t> n, bool all_at_once, Scheduler s = Scheduler::chunked) {
  SimOptions o = with(s);
  o.max_concurrency = n;
  o.all_at_once = all_at_once;
  return o;
}

//! Decode steps i = 1..n of `batch` sequences each at context `prompt + i`, summed.
inline double decode_sum(const StepTimeModel& stm, int64_t batch, int64_t prompt, int64_t n) {
  double t = 0;
  for (int64_t i = 1; i <= n; ++i) t += stm.decode(batch, prompt + i).time_s;
  return t;
}

}  // namespace kvplan::sim::test
