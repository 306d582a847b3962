// Prefix caching, structured workloads and the per-request terms of the simulator.
#include <doctest/doctest.h>

#include <vector>

#include "sim/sim.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::sim;
using kvplan::sim::test::h100;
using kvplan::sim::test::llama3_8b;

namespace {

//! One group per user (no shared system prompt unless `users_per_group` > 1), fixed
//! question and output lengths, requests `gap_s` apart so each runs alone.
Workload users(int64_t groups, int64_t users_per_group, int64_t system, int64_t question, int64_t output,
               int64_t n, double gap_s) {
  Workload w;
  w.name = "users";
  w.requests = n;
  w.arrival.process = ArrivalProcess::fixed;
  w.arrival.rate_per_s = 1.0 / gap_s;
  w.prompt_tokens.kind = LengthKind::fixed;
  w.prompt_tokens.value = question;
  w.output_tokens.kind = LengthKind::fixed;
  w.output_tokens.value = output;
  w.shared_prefix = SharedPrefix{groups, users_per_group, system, true};
  w.slo = Slo{1e9, 1e9};
  return w;
}

std::vector<double> first_token_delays(const Simulator& sim, const Workload& w, SimOptions o) {
  std::vector<double> arrival, ttft;
  o.on_request = [&](const RequestEvent& e) {
    if (e.kind == RequestEventKind::arrived) arrival.push_back(e.time_s);
    if (e.kind == RequestEventKind::first_token)
      ttft.push_back(e.time_s - arrival[static_cast<size_t>(e.request)]);
  };
  (void)sim.run(w, o);
  return ttft;
}

}  // namespace

TEST_CASE("a repeated prompt skips its cached full blocks and recomputes the rest") {
  // Prompt 200 tokens (system 96 + question 104), block 16: the second request of the same
  // user finds the full blocks of its first 199 tokens cached, floor(199 / 16) = 12 blocks
  // = 192 tokens, and computes 8: chunk 8 after 192 cached = 8 x 192 + 8 x 9 / 2 = 1572
  // query-key pairs. The first computes all 200 (200 x 201 / 2 = 20100 pairs).
  const ModelConfig m = llama3_8b();
  ServingOptions o;
  const Simulator sim(m, h100(), o);
  const Workload w = users(1, 1, 96, 104, 1, 2, 1000.0);
  const StepTimeModel& stm = sim.step_model();
  const std::vector<double> ttft = first_token_delays(sim, w, kvplan::sim::test::with(Scheduler::chunked));
  REQUIRE(ttft.size() == 2);
  CHECK(ttft[0] == doctest::Approx(stm.step(200, 20100, 0, 0).time_s).epsilon(1e-12));
  CHECK(ttft[1] == doctest::Approx(stm.step(8, 1572, 0, 0).time_s).epsilon(1e-12));
  CHECK(sim.run(w, kvplan::sim::test::with(Scheduler::chunked)).cached_prompt_tokens == 192);

  ServingOptions off = o;
  off.enable_prefix_caching = false;
  const Simulator no_cache(m, h100(), off);
  CHECK(no_cache.run(w, kvplan::sim::test::with(Scheduler::chunked)).cached_prompt_tokens == 0);
  const std::vector<double> same = first_token_delays(no_cache, w, kvplan::sim::test::with(Scheduler::chunked));
  CHECK(same[1] == doctest::Approx(stm.step(200, 20100, 0, 0).time_s).epsilon(1e-12));
}

TEST_CASE("users of one group share the full blocks of their system prompt") {
  // System prompt 100 tokens = 6 full blocks (96 tokens); the 7th block mixes system and
  // question, so it is the user's own. User 2's first request hits 96 tokens.
  const Simulator sim(llama3_8b(), h100(), ServingOptions{});
  const SimResult r = sim.run(users(1, 2, 100, 300, 1, 2, 1000.0), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(r.cached_prompt_tokens == 96);
}

TEST_CASE("under pool pressure the least recently freed blocks go first, a prompt's tail before its head") {
  // Pool of 20 blocks; requests A, B, A of 200-token prompts (13 blocks each, 12 full),
  // one output token each. A leaves 12 cached blocks; B takes 13 of the 20, so 7 cached
  // may stay: A's blocks were freed tail first, so its blocks 7..11 are evicted and A's
  // third request hits blocks 0..6 = 112 tokens. With a large pool it hits all 192.
  const Simulator sim(llama3_8b(), h100(), ServingOptions{});
  const Workload w = users(2, 1, 0, 200, 1, 3, 1000.0);
  SimOptions small = kvplan::sim::test::with(Scheduler::chunked);
  small.num_blocks = 20;
  CHECK(sim.run(w, small).cached_prompt_tokens == 112);
  CHECK(sim.run(w, kvplan::sim::test::with(Scheduler::chunked)).cached_prompt_tokens == 192);
}

TEST_CASE("the per-request overhead and the output lag add to TTFT and E2E, not to ITL") {
  // One request: TTFT = request_overhead_s + prefill step x (1 + output_lag_steps);
  // E2E = request_overhead_s + all steps + output_lag_steps x the last step. The prefill
  // step carries step_overhead_s + step_overhead_per_seq_s x 1 over the bare roofline.
  const ModelConfig m = llama3_8b();
  ServingOptions bare;
  ServingOptions o;
  o.calibration.request_overhead_s = 0.02;
  o.calibration.output_lag_steps = 1.5;
  o.calibration.step_overhead_s = 0.002;
  o.calibration.step_overhead_per_seq_s = 1e-4;
  const StepTimeModel roof(m, h100(), bare);
  const StepTimeModel stm(m, h100(), o);
  CHECK(stm.prefill(1000).time_s == doctest::Approx(roof.prefill(1000).time_s + 0.002 + 1e-4).epsilon(1e-12));
  const Simulator sim(m, h100(), o);
  Workload w = users(1, 1, 0, 1000, 3, 1, 1.0);
  w.shared_prefix = SharedPrefix{};
  w.prompt_tokens.value = 1000;
  const SimResult r = sim.run(w, kvplan::sim::test::with(Scheduler::chunked));
  const double prefill_s = stm.prefill(1000).time_s;
  const double d1 = stm.decode(1, 1001).time_s, d2 = stm.decode(1, 1002).time_s;
  CHECK(r.ttft_s.mean == doctest::Approx(0.02 + prefill_s * 2.5).epsilon(1e-9));
  CHECK(r.e2e_s.mean == doctest::Approx(0.02 + prefill_s + d1 + d2 + 1.5 * d2).epsilon(1e-9));
}

TEST_CASE("staged fixed-rate arrivals start each stage at its beginning") {
  // Stage 1: 2/s for 1 s -> 0, 0.5; stage 2 from 1 s: 4/s -> 1.0, 1.25.
  Workload w = users(1, 1, 0, 10, 1, 4, 1.0);
  w.shared_prefix = SharedPrefix{};
  w.arrival.stages = {Stage{2.0, 1.0}, Stage{4.0, 0.5}};
  RequestStream s(w, 0, 1.0, 4);
  std::vector<double> t;
  while (auto r = s.next()) t.push_back(r->arrival_s);
  REQUIRE(t.size() == 4);
  CHECK(t[0] == 0.0);
  CHECK(t[1] == doctest::Approx(0.5));
  CHECK(t[2] == doctest::Approx(1.0));
  CHECK(t[3] == doctest::Approx(1.25));
  CHECK(w.base_rate_per_s() == doctest::Approx(4.0 / 1.5));
}

TEST_CASE("vLLM V0 keeps 1 % of the pool free when admitting; V1 does not") {
  // Pool of 100 blocks: V0's watermark is int(0.01 x 100) = 1 block. Prompts of 960 and
  // 640 tokens need 60 and 40 blocks (16 tokens each) and arrive together. V0 admits the
  // first, then would leave 100 - 60 - 40 = 0 < 1 free: the second waits for the first to
  // finish. V1 (chunked) admits both in the first step (and then preempts the second,
  // the newest, when the first needs its 61st block to decode).
  const Simulator sim(llama3_8b(), h100(), ServingOptions{});
  auto rows = std::make_shared<std::vector<TraceRow>>(std::vector<TraceRow>{{0.0, 960, 2}, {0.0, 640, 2}});
  Workload w;
  w.requests = 2;
  w.arrival.process = ArrivalProcess::trace;
  w.prompt_tokens.kind = LengthKind::trace;
  w.output_tokens.kind = LengthKind::trace;
  w.trace = rows;
  w.slo = Slo{1e9, 1e9};
  for (const Scheduler s : {Scheduler::continuous, Scheduler::chunked}) {
    CAPTURE(to_string(s));
    SimOptions o;
    o.scheduler = s;
    o.num_blocks = 100;
    o.check_invariants = true;
    std::vector<double> scheduled(2, -1);
    o.on_request = [&](const RequestEvent& e) {
      auto& first = scheduled[static_cast<size_t>(e.request)];
      if (e.kind == RequestEventKind::scheduled && first < 0) first = e.time_s;
    };
    (void)sim.run(w, o);
    CHECK(scheduled[0] == 0.0);
    if (s == Scheduler::continuous)
      CHECK(scheduled[1] > 0.0);
    else
      CHECK(scheduled[1] == 0.0);
  }
}
