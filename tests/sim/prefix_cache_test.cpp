// Prefix caching, structured workloads and the per-request terms of the simulator.
#include <doctest/doctest.h>

#include <memory>
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

namespace {

//! An H100 whose datasheet bandwidth and FLOP/s are so large (1e30) that every GPU term of
//! a step is below 1e-15 s: with the bare roofline (no kernel floor, TP 1: no collective)
//! a step then takes exactly step_overhead_s + step_overhead_per_seq_s x (decoders + 1 if
//! it prefills), or the larger of the two terms when async scheduling overlaps them,
//! planner/roofline.cpp, and the host-side time model can be worked by hand in round
//! numbers.
GpuSpec instant_h100() {
  GpuSpec g = h100();
  g.memory_bandwidth_bytes_per_s = 1e30;
  g.peak_flops.fp32 = g.peak_flops.tf32 = g.peak_flops.bf16 = g.peak_flops.fp16 = 1e30;
  g.peak_flops.fp8 = g.peak_flops.int8 = 1e30;
  return g;
}

//! Host-side overheads in round numbers: steps of 10 ms + 1 ms per sequence, 20 ms per
//! request, and an output processor taking 2 ms + 0.5 ms per sequence with a token.
ServingOptions host_overheads() {
  ServingOptions o;
  o.max_num_batched_tokens = 8192;
  o.calibration.step_overhead_s = 0.010;
  o.calibration.step_overhead_per_seq_s = 0.001;
  o.calibration.request_overhead_s = 0.020;
  o.calibration.output_overhead_s = 0.002;
  o.calibration.output_overhead_per_seq_s = 0.0005;
  return o;
}

//! The request overhead as a fixed delay beside the engine instead of service time on
//! the API server (SimOptions::api_server_queue off, as the disaggregated driver runs
//! its instances): requests due together reach the engine together.
kvplan::sim::SimOptions delayed(Scheduler s) {
  kvplan::sim::SimOptions so = kvplan::sim::test::with(s);
  so.api_server_queue = false;
  return so;
}

Workload alone(int64_t n, int64_t prompt, int64_t output) {
  Workload w = users(1, 1, 0, prompt, output, n, 1.0);
  w.shared_prefix = SharedPrefix{};
  return w;
}

}  // namespace

TEST_CASE("one request at idle: TTFT = request overhead + prefill step + its delivery: TPOT = the decode step") {
  // Round numbers (instant_h100, host_overheads): the prefill step of the 4,096-token
  // prompt is 10 + 1 x 1 = 11 ms (planner/roofline.cpp: step_overhead_s +
  // step_overhead_per_seq_s x (0 decoders + 1 prefilling)), each decode step of the one
  // decoder 10 + 1 = 11 ms. Steps end at 11, 22, 33 ms; each carries one sequence's
  // token, delivered 2 + 0.5 x 1 = 2.5 ms later, the processor being idle by then:
  // 13.5, 24.5, 35.5 ms. TTFT = 20 + 13.5 = 33.5 ms; E2E = 20 + 35.5 = 55.5 ms;
  // TPOT = (35.5 - 13.5) / 2 = 11 ms, the decode step: the delivery does not depend on
  // the step's length, so it cancels.
  const ModelConfig m = llama3_8b();
  const ServingOptions o = host_overheads();
  const StepTimeModel stm(m, instant_h100(), o);
  CHECK(stm.prefill(4096).time_s == doctest::Approx(0.011).epsilon(1e-12));
  CHECK(stm.decode(1, 4097).time_s == doctest::Approx(0.011).epsilon(1e-12));
  const Simulator sim(m, instant_h100(), o);
  const SimResult r = sim.run(alone(1, 4096, 3), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(r.ttft_s.mean == doctest::Approx(0.0335).epsilon(1e-9));
  CHECK(r.e2e_s.mean == doctest::Approx(0.0555).epsilon(1e-9));
  CHECK(r.tpot_s.mean == doctest::Approx(0.011).epsilon(1e-9));

  // On the real H100 the same holds with the planner's step times: TTFT = 20 ms +
  // prefill(4096) + 2.5 ms, TPOT = decode(1, 4097) for a two-token answer (one decode
  // step), never shorter than that step.
  const Simulator real(m, h100(), o);
  const StepTimeModel h(m, h100(), o);
  const SimResult q = real.run(alone(1, 4096, 2), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(q.ttft_s.mean == doctest::Approx(0.020 + h.prefill(4096).time_s + 0.0025).epsilon(1e-9));
  CHECK(q.tpot_s.mean == doctest::Approx(h.decode(1, 4097).time_s).epsilon(1e-9));
}

TEST_CASE("two requests whose first tokens come out of the same step share its delivery, per-sequence term and all") {
  // Two 100-token prompts at t = 0, one output token each: both prefill in one step of
  // 10 + 1 = 11 ms (the step's CPU term counts the prefill part once,
  // planner/roofline.cpp), which samples two tokens: delivered at 11 + 2 + 0.5 x 2 =
  // 14 ms, so TTFT = 20 + 14 = 34 ms for both, 0.5 ms (one sequence's output
  // processing) later than one request alone would see (33.5 ms, as above).
  const ModelConfig m = llama3_8b();
  const Simulator sim(m, instant_h100(), host_overheads());
  const SimResult one = sim.run(kvplan::sim::test::burst(1, 100, 1), delayed(Scheduler::chunked));
  const SimResult two = sim.run(kvplan::sim::test::burst(2, 100, 1), delayed(Scheduler::chunked));
  CHECK(one.ttft_s.mean == doctest::Approx(0.0335).epsilon(1e-9));
  CHECK(two.steps == 1);
  CHECK(two.ttft_s.p50 == doctest::Approx(0.034).epsilon(1e-9));
  CHECK(two.ttft_s.mean == doctest::Approx(0.034).epsilon(1e-9));
}

TEST_CASE("an output processor slower than the engine's steps sets the time per token (a queue)") {
  // The processor takes 30 + 0.5 x 1 = 30.5 ms per step's outputs, the steps 11 ms. One
  // request of four tokens: steps end at 11, 22, 33, 44 ms; deliveries at
  // 11 + 30.5 = 41.5, max(22, 41.5) + 30.5 = 72, max(33, 72) + 30.5 = 102.5 and
  // max(44, 102.5) + 30.5 = 133 ms. TTFT = 20 + 41.5 = 61.5 ms, E2E = 20 + 133 = 153 ms,
  // TPOT = (133 - 41.5) / 3 = 30.5 ms: the processor's time per step, not the 11 ms step
  // (vLLM's API-server bottleneck at high load).
  const ModelConfig m = llama3_8b();
  ServingOptions o = host_overheads();
  o.calibration.output_overhead_s = 0.030;
  const Simulator sim(m, instant_h100(), o);
  const SimResult r = sim.run(alone(1, 100, 4), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(r.ttft_s.mean == doctest::Approx(0.0615).epsilon(1e-9));
  CHECK(r.e2e_s.mean == doctest::Approx(0.153).epsilon(1e-9));
  CHECK(r.tpot_s.mean == doctest::Approx(0.0305).epsilon(1e-9));
  CHECK(r.busy_s == doctest::Approx(0.044).epsilon(1e-9));  // the engine is not slowed
}

TEST_CASE("with async scheduling a request that arrives during a step waits one step more") {
  // Round numbers as above. A (100-token prompt, 4 tokens) arrives at 0 and prefills alone
  // in 0-11 ms (delivered 13.5 ms: TTFT 33.5 ms). B (the same) arrives at 5 ms, during
  // that step. Without async scheduling the next step, composed at 11 ms, takes B's
  // prefill beside A's decode: 10 + 1 x 2 = 12 ms, ending at 23 ms with two tokens,
  // delivered at 23 + 2 + 0.5 x 2 = 26 ms: TTFT(B) = 20 + 26 - 5 = 41 ms. With it
  // (vLLM's --async-scheduling) the step after the first was composed at 0 ms, before B
  // arrived: it decodes A alone, and B prefills in the step after. Those two follow a
  // running step, so their host time (1 ms per sequence) hides behind the 10 ms of the
  // step's serial side: max(10, 1) = 10 ms (11-21 ms), then max(10, 2) = 10 ms (21-31
  // ms), delivered at 31 + 2 + 0.5 x 2 = 34 ms: TTFT(B) = 20 + 34 - 5 = 49 ms. Means:
  // (33.5 + 41) / 2 = 37.25 and (33.5 + 49) / 2 = 41.25 ms.
  auto rows = std::make_shared<std::vector<TraceRow>>(std::vector<TraceRow>{{0.0, 100, 4}, {0.005, 100, 4}});
  Workload w = kvplan::sim::test::burst(2, 100, 4);
  w.trace = rows;
  ServingOptions o = host_overheads();
  const SimResult sync = Simulator(llama3_8b(), instant_h100(), o).run(w, delayed(Scheduler::chunked));
  o.async_scheduling = true;
  const SimResult async = Simulator(llama3_8b(), instant_h100(), o).run(w, delayed(Scheduler::chunked));
  CHECK(sync.ttft_s.mean == doctest::Approx(0.03725).epsilon(1e-9));
  CHECK(async.ttft_s.mean == doctest::Approx(0.04125).epsilon(1e-9));
  // An idle engine has nothing composed ahead: one request alone is not delayed.
  const SimResult one = Simulator(llama3_8b(), instant_h100(), o).run(alone(1, 4096, 3), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(one.ttft_s.mean == doctest::Approx(0.0335).epsilon(1e-9));
}

TEST_CASE("async scheduling hides the host's part of back-to-back steps behind the GPU's, not of a step after idle") {
  // Llama-3-8B on the real H100 with host_overheads' API-server terms, 2 ms per step on
  // the GPU's side (step_overhead_s, serial) and 0.5 ms of EngineCore CPU per sequence
  // (schedule, prepare inputs, update from output). One request, 4,096-token prompt, two
  // output tokens. Its prefill follows idle: nothing ran to hide the host's 0.5 ms
  // behind, so the step is GPU side + host, as without async scheduling. Its decode step
  // follows the prefill back to back: async scheduling prepared it while the prefill
  // ran (EngineCore.step_with_batch_queue), so it takes max(GPU side, 0.5 ms) = its GPU
  // side (an 8B decode reads 16 GB: several ms). TTFT = 20 ms + prefill + delivery
  // 2 + 0.5 ms; TPOT = the decode step's GPU side: the sync step less the host's 0.5 ms.
  const ModelConfig m = llama3_8b();
  ServingOptions o = host_overheads();
  o.calibration.step_overhead_s = 0.002;
  o.calibration.step_overhead_per_seq_s = 0.0005;
  const StepTimeModel sync(m, h100(), o);
  const double decode_gpu_s = sync.decode(1, 4097).time_s - 0.0005;
  REQUIRE(decode_gpu_s > 0.0025);
  o.async_scheduling = true;
  const SimResult r = Simulator(m, h100(), o).run(alone(1, 4096, 2), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(r.ttft_s.mean == doctest::Approx(0.020 + sync.prefill(4096).time_s + 0.0025).epsilon(1e-9));
  CHECK(r.tpot_s.mean == doctest::Approx(decode_gpu_s).epsilon(1e-9));
  // 20 ms of CPU per sequence outlasts the GPU's side of the decode: the decode step
  // takes the host's 20 ms, and TPOT with it.
  o.calibration.step_overhead_per_seq_s = 0.020;
  const SimResult slow = Simulator(m, h100(), o).run(alone(1, 4096, 2), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(slow.tpot_s.mean == doctest::Approx(0.020).epsilon(1e-9));
}

TEST_CASE("the API server takes a burst's requests one after the other: a lone request is the same either way") {
  // One process serves every request's input (vLLM AsyncLLM.add_request -> process_inputs)
  // first come first served, 20 ms each (host_overheads' request overhead), before the
  // engine sees it. Three 100-token prompts of one output token sent at t = 0, steps of
  // 10 ms (no per-sequence term here), no output time: the engine sees them at 20, 40
  // and 60 ms, finds itself idle each time (a step ends 10 ms after each handover), and
  // their tokens come out at 30, 50 and 70 ms: TTFT 30, 50, 70 ms, mean 50 ms, three
  // steps of one prefill each. With the overhead as a delay beside the engine all three
  // prefill in one step (10 ms) and each has TTFT 20 + 10 = 30 ms.
  const ModelConfig m = llama3_8b();
  ServingOptions o = host_overheads();
  o.calibration.step_overhead_per_seq_s = 0;
  o.calibration.output_overhead_s = 0;
  o.calibration.output_overhead_per_seq_s = 0;
  const Simulator sim(m, instant_h100(), o);
  const SimResult q = sim.run(kvplan::sim::test::burst(3, 100, 1), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(q.steps == 3);
  CHECK(q.ttft_s.mean == doctest::Approx(0.050).epsilon(1e-9));
  CHECK(q.e2e_s.mean == doctest::Approx(0.050).epsilon(1e-9));
  CHECK(q.batch_max == 1);
  const SimResult d = sim.run(kvplan::sim::test::burst(3, 100, 1), delayed(Scheduler::chunked));
  CHECK(d.steps == 1);
  CHECK(d.ttft_s.mean == doctest::Approx(0.030).epsilon(1e-9));
  // One request alone at idle: TTFT = request overhead + prefill + delivery in both
  // forms (33.5 ms with host_overheads, worked above).
  const Simulator full(m, instant_h100(), host_overheads());
  CHECK(full.run(alone(1, 4096, 3), kvplan::sim::test::with(Scheduler::chunked)).ttft_s.mean ==
        doctest::Approx(0.0335).epsilon(1e-9));
  CHECK(full.run(alone(1, 4096, 3), delayed(Scheduler::chunked)).ttft_s.mean == doctest::Approx(0.0335).epsilon(1e-9));
}

TEST_CASE("a step's output processing runs between two requests' inputs and delays the ones still waiting") {
  // As above with 2 ms of output processing per step: request 1 reaches the engine at
  // 20 ms, its step ends at 30 and its token is delivered at 32 ms (TTFT 32). Those 2 ms
  // run on the API server between request 2's input (due out at 40 ms) and what follows,
  // so request 2 reaches the engine at 42 ms: step 42-52, delivered 54 (TTFT 54); request
  // 3 then at 62 + 2 = 64 ms: step 64-74, delivered 76 (TTFT 76). Mean (32 + 54 + 76) / 3
  // = 54 ms. The outputs are not queued behind the burst's inputs (those would deliver
  // nothing before 60 ms): the output handler yields between chunks
  // (AsyncLLM._run_output_handler, `await asyncio.sleep(0)`).
  ServingOptions o = host_overheads();
  o.calibration.step_overhead_per_seq_s = 0;
  o.calibration.output_overhead_per_seq_s = 0;
  const Simulator sim(llama3_8b(), instant_h100(), o);
  const SimResult q = sim.run(kvplan::sim::test::burst(3, 100, 1), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(q.steps == 3);
  CHECK(q.ttft_s.mean == doctest::Approx(0.054).epsilon(1e-9));
  CHECK(q.busy_s == doctest::Approx(0.030).epsilon(1e-9));
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

TEST_CASE("vLLM V0 keeps 1 % of the pool free when admitting: V1 does not") {
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
