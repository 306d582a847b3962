// Tests of sim/sim.h: closed forms computed by hand from the planner's step-time model
// (never from the simulator's own output), invariants over many random configurations,
// determinism, rejections and the max-rate search.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

#include "planner/planner.h"
#include "sim/sim.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::sim;
using kvplan::sim::test::burst;
using kvplan::sim::test::client;
using kvplan::sim::test::decode_sum;
using kvplan::sim::test::h100;
using kvplan::sim::test::llama3_8b;
using kvplan::sim::test::poisson;
using kvplan::sim::test::serving;
using kvplan::sim::test::with;

TEST_CASE("one request alone has TTFT equal to the planner's prefill and TPOT to its decode steps") {
  // A 1000-token prompt and 101 output tokens: one prefill step of 1000 tokens (it
  // samples token 1), then 100 decode steps at contexts 1001..1100, one token each.
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  const ServingOptions o = serving();
  const StepTimeModel stm(m, g, o);
  const double prefill_s = stm.prefill(1000).time_s;
  const double decode_s = decode_sum(stm, 1, 1000, 100);
  const Simulator sim(m, g, o);
  for (Scheduler s : {Scheduler::continuous, Scheduler::chunked, Scheduler::static_batch}) {
    CAPTURE(to_string(s));
    const SimResult r = sim.run(poisson(1, 1.0, 1000, 101), with(s));
    CHECK(r.completed == 1);
    CHECK(r.ttft_s.p50 == doctest::Approx(prefill_s).epsilon(1e-12));
    CHECK(r.tpot_s.p50 == doctest::Approx(decode_s / 100).epsilon(1e-12));
    CHECK(r.e2e_s.p99 == doctest::Approx(prefill_s + decode_s).epsilon(1e-12));
    CHECK(r.queue_s.p99 == 0.0);
    CHECK(r.steps == 101);
    CHECK(r.output_tokens == 101);
  }
}

TEST_CASE("a decode step of one request costs the weights plus its cache read at the bandwidth") {
  // Llama-3-8B bf16 on one H100, memory-bound: weights 8,030,261,248 params x 2 B, KV
  // 32 layers x 2 x 8 heads x 128 x 2 B = 131,072 B per token, 80 % of 3.35 TB/s.
  // The simulator's TPOT at context ~1050 must be within 1 % of that napkin figure.
  const ModelConfig m = llama3_8b();
  const Simulator sim(m, h100(), serving());
  const SimResult r = sim.run(poisson(1, 1.0, 1000, 101), with(Scheduler::continuous));
  const double bytes = 8030261248.0 * 2 + 131072.0 * 1050;
  CHECK(r.tpot_s.p50 == doctest::Approx(bytes / (0.8 * 3.35e12)).epsilon(0.01));
}

TEST_CASE("a static batch of equal requests follows the hand-computed schedule") {
  // 16 requests of 512 + 64 tokens at t = 0, at most 8 at a time. Batch 1: one prefill
  // step of 8 x 512 tokens (8 x 512 x 513 / 2 query-key pairs), then 63 decode steps of
  // 8 sequences at contexts 513..575 each. Batch 2 starts when batch 1 ends.
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  ServingOptions o = serving();
  o.max_num_seqs = 8;
  const StepTimeModel stm(m, g, o);
  const double prefill_s = stm.step(8 * 512, 8.0 * 512 * 513 / 2, 0, 0).time_s;
  const double batch_s = prefill_s + decode_sum(stm, 8, 512, 63);
  SimOptions so = with(Scheduler::static_batch);
  int64_t samples = 0, full_steps = 0;
  so.on_step = [&](const StepSample& s) {
    ++samples;
    if (s.batch == 8) ++full_steps;
  };
  const SimResult r = Simulator(m, g, o).run(burst(16, 512, 64), so);
  CHECK(samples == r.steps);
  CHECK(full_steps == r.steps);
  CHECK(r.completed == 16);
  // Nearest rank over 16 values: p50 is the 8th smallest (batch 1), p90 the 15th (batch 2).
  CHECK(r.ttft_s.p50 == doctest::Approx(prefill_s).epsilon(1e-12));
  CHECK(r.ttft_s.p90 == doctest::Approx(batch_s + prefill_s).epsilon(1e-12));
  CHECK(r.e2e_s.p50 == doctest::Approx(batch_s).epsilon(1e-12));
  CHECK(r.e2e_s.p99 == doctest::Approx(2 * batch_s).epsilon(1e-12));
  CHECK(r.queue_s.p99 == doctest::Approx(batch_s).epsilon(1e-12));
  CHECK(r.duration_s == doctest::Approx(2 * batch_s).epsilon(1e-12));
  CHECK(r.batch_max == 8);
  CHECK(r.steps == 2 * 64);
  CHECK(r.preemptions == 0);
}

TEST_CASE("a saturated engine's output throughput equals the step-time model's") {
  // 128 requests of 128 + 256 tokens at t = 0, 32 at a time, a pool large enough for all:
  // continuous and chunked batching both run rounds of one 32-prompt prefill step and 255
  // decode steps of 32 sequences, so output tokens/s = 32 x 256 / round time.
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  ServingOptions o = serving();
  o.max_num_seqs = 32;
  const StepTimeModel stm(m, g, o);
  const double round_s = stm.step(32 * 128, 32.0 * 128 * 129 / 2, 0, 0).time_s +
                         decode_sum(stm, 32, 128, 255);
  // Memory-bound decode time is linear in context, so the 255 decode steps cost 255
  // steps at the mean context 128 + 128.
  const double linear_round_s = stm.step(32 * 128, 32.0 * 128 * 129 / 2, 0, 0).time_s +
                                255 * stm.decode(32, 128 + 128).time_s;
  const Simulator sim(m, g, o);
  for (Scheduler s : {Scheduler::continuous, Scheduler::chunked}) {
    CAPTURE(to_string(s));
    const SimResult r = sim.run(burst(128, 128, 256), with(s));
    CHECK(r.completed == 128);
    CHECK(r.output_tokens_per_s == doctest::Approx(32.0 * 256 / round_s).epsilon(1e-9));
    CHECK(r.output_tokens_per_s == doctest::Approx(32.0 * 256 / linear_round_s).epsilon(1e-9));
    CHECK(r.batch_max == 32);
  }
}

TEST_CASE("chunked prefill splits a long prompt into budget-sized chunks") {
  // 10,000 prompt tokens with a 4,096-token budget: chunks of 4096, 4096 and 1808 tokens,
  // each attending to the chunks before it: c p + c (c + 1) / 2 pairs.
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  ServingOptions o = serving();
  o.max_num_batched_tokens = 4096;
  o.max_model_len = 16384;
  const StepTimeModel stm(m, g, o);
  auto chunk = [&](double c, double p) { return stm.step(static_cast<int64_t>(c), c * p + c * (c + 1) / 2, 0, 0).time_s; };
  const double ttft = chunk(4096, 0) + chunk(4096, 4096) + chunk(1808, 8192);
  const SimResult r = Simulator(m, g, o).run(poisson(1, 1.0, 10000, 2), with(Scheduler::chunked));
  CHECK(r.steps == 4);
  CHECK(r.ttft_s.p50 == doctest::Approx(ttft).epsilon(1e-12));
  CHECK(r.tpot_s.p50 == doctest::Approx(stm.decode(1, 10001).time_s).epsilon(1e-12));
}

TEST_CASE("requests that can never run are rejected and counted, and long outputs are cut") {
  // max_model_len 4096: a 4096-token prompt leaves no room for an output token; a
  // 4000-token prompt with 500 outputs stops after 96 (vLLM stops at max_model_len).
  // A 100-block pool of 16-token blocks holds 1600 tokens: 1000 + 700 tokens never fit.
  const ModelConfig m = llama3_8b();
  ServingOptions o = serving();
  o.max_model_len = 4096;
  const Simulator sim(m, h100(), o);
  CHECK(sim.run(poisson(3, 1.0, 4096, 10), with(Scheduler::continuous)).rejected == 3);
  const SimResult cut = sim.run(poisson(2, 1.0, 4000, 500), with(Scheduler::continuous));
  CHECK(cut.completed == 2);
  CHECK(cut.truncated == 2);
  CHECK(cut.output_tokens == 2 * 96);
  SimOptions small = with(Scheduler::continuous);
  small.num_blocks = 100;
  const SimResult r = sim.run(poisson(5, 1.0, 1000, 700), small);
  CHECK(r.arrived == 5);
  CHECK(r.rejected == 5);
  CHECK(r.completed == 0);
  // 1000 + 600 - 1 = 1599 tokens: exactly 100 blocks, so it runs.
  CHECK(sim.run(poisson(5, 1.0, 1000, 600), small).completed == 5);
}

TEST_CASE("the same seed gives the same run and another seed a different one") {
  const Simulator sim(llama3_8b(), h100(), serving());
  Workload w = poisson(3000, 20.0, 1, 1);
  w.prompt_tokens = LengthDist{LengthKind::lognormal, 0, 1, 8000, 1000, 1.0};
  w.output_tokens = LengthDist{LengthKind::uniform, 0, 1, 400, 0, 0};
  SimOptions o;
  o.seed = 7;
  const SimResult a = sim.run(w, o), b = sim.run(w, o);
  CHECK(a.ttft_s.p99 == b.ttft_s.p99);
  CHECK(a.e2e_s.p50 == b.e2e_s.p50);
  CHECK(a.steps == b.steps);
  CHECK(a.events == b.events);
  CHECK(a.output_tokens == b.output_tokens);
  o.seed = 8;
  const SimResult c = sim.run(w, o);
  CHECK(c.output_tokens != a.output_tokens);
}

TEST_CASE("a run keeps its invariants over many random configurations") {
  // Every request is completed or rejected; blocks in use stay within the pool and end
  // at zero; time never goes back; each request's events come in order with its token
  // count never decreasing. check_invariants also recounts the aggregate bookkeeping
  // (decoders, summed context, blocks per request against the planner) after each step.
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  std::mt19937_64 rng(2024);
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  int64_t preemptions = 0, rejected = 0, completed = 0;
  for (int config = 0; config < 300; ++config) {
    ServingOptions o;
    o.block_size = int64_t{8} << pick(0, 2);
    o.max_num_seqs = pick(1, 48);
    o.max_num_batched_tokens = pick(o.max_num_seqs, 3000);
    o.max_model_len = 2048;
    const Simulator sim(m, g, o);
    Workload w;
    w.requests = pick(20, 200);
    w.arrival.process = pick(0, 1) == 0 ? ArrivalProcess::poisson : ArrivalProcess::gamma;
    w.arrival.rate_per_s = static_cast<double>(pick(1, 400));
    w.arrival.cv = 0.5 + static_cast<double>(pick(0, 30)) / 10;
    w.prompt_tokens = LengthDist{LengthKind::lognormal, 0, 1, 2500, static_cast<double>(pick(20, 800)), 1.0};
    w.output_tokens = LengthDist{LengthKind::uniform, 0, 1, pick(1, 600), 0, 0};
    w.slo = Slo{1.0, 0.05};
    SimOptions so;
    so.seed = static_cast<uint64_t>(config);
    so.scheduler = static_cast<Scheduler>(pick(0, 2));
    so.preemption = pick(0, 1) == 0 ? Preemption::recompute : Preemption::swap;
    so.num_blocks = pick(40, 600);
    so.check_invariants = true;
    CAPTURE(config);
    CAPTURE(to_string(so.scheduler));

    struct Seen {
      double last_s = 0;
      int64_t tokens = 0;
      RequestEventKind last = RequestEventKind::arrived;
      bool arrived = false, done = false;
    };
    std::map<int64_t, Seen> seen;
    bool ok = true;
    double last_step_s = 0, last_event_s = 0;
    int64_t last_blocks = -1, decode_tokens = 0;
    so.on_request = [&](const RequestEvent& e) {
      Seen& s = seen[e.request];
      if (e.kind == RequestEventKind::arrived) {
        ok = ok && !s.arrived;
        s.arrived = true;
      } else {
        ok = ok && s.arrived && !s.done && e.time_s >= s.last_s && e.tokens >= s.tokens;
        ok = ok && e.time_s >= last_event_s;  // engine events in time order
        last_event_s = e.time_s;
      }
      if (e.kind == RequestEventKind::finished) ok = ok && e.tokens == e.output_tokens;
      if (e.kind == RequestEventKind::first_token) ok = ok && e.tokens == 1;
      if (e.kind == RequestEventKind::finished || e.kind == RequestEventKind::rejected) s.done = true;
      s.last_s = e.time_s;
      s.tokens = e.tokens;
      s.last = e.kind;
    };
    so.on_step = [&](const StepSample& st) {
      ok = ok && st.time_s >= last_step_s && st.duration_s > 0 && st.kv_blocks_used <= *so.num_blocks;
      ok = ok && st.batch <= o.max_num_seqs;
      // vLLM V0 and static batching never mix prefill and decode in one step.
      if (so.scheduler != Scheduler::chunked) ok = ok && (st.prefill_tokens == 0 || st.decode_seqs == 0);
      last_step_s = st.time_s;
      last_blocks = st.kv_blocks_used;
      decode_tokens += st.decode_seqs;
    };
    SimResult r;
    REQUIRE_NOTHROW(r = sim.run(w, so));
    CHECK(ok);
    CHECK(r.arrived == w.requests);
    CHECK(r.completed + r.rejected == r.arrived);
    CHECK(static_cast<int64_t>(seen.size()) == w.requests);
    CHECK(std::all_of(seen.begin(), seen.end(), [](const auto& kv) { return kv.second.done; }));
    CHECK(r.peak_blocks <= *so.num_blocks);
    CHECK(r.ttft_s.p50 <= r.e2e_s.p50);
    CHECK(last_blocks >= 0);
    // Without preemption every output token but the first comes from one decode slot.
    if (r.preemptions == 0) CHECK(decode_tokens + r.completed == r.output_tokens);
    preemptions += r.preemptions;
    rejected += r.rejected;
    completed += r.completed;
  }
  // The sweep exercised what it is meant to.
  CHECK(preemptions > 100);
  CHECK(rejected > 0);
  CHECK(completed > 5000);
}

TEST_CASE("a pool too small for the batch preempts and still completes every request") {
  // 64 requests of 200 + 300 tokens at once: each ends holding 499 tokens = 32 blocks of
  // 16; a 200-block pool holds 6 of them at full length but admits 15 prompts (13 blocks
  // each), so decoders must be preempted, by recompute or by swap.
  const Simulator sim(llama3_8b(), h100(), serving());
  for (Preemption p : {Preemption::recompute, Preemption::swap}) {
    for (Scheduler s : {Scheduler::continuous, Scheduler::chunked}) {
      SimOptions o = with(s);
      o.preemption = p;
      o.num_blocks = 200;
      const SimResult r = sim.run(burst(64, 200, 300), o);
      CHECK(r.completed == 64);
      CHECK(r.preemptions > 0);
      CHECK(r.peak_blocks <= 200);
      CHECK(r.output_tokens == 64 * 300);
    }
  }
  SimOptions st = with(Scheduler::static_batch);
  st.num_blocks = 200;
  const SimResult r = sim.run(burst(64, 200, 300), st);
  CHECK(r.preemptions == 0);  // static batching reserves full lengths: 6 at a time
  CHECK(r.batch_max == 6);
}

TEST_CASE("goodput counts the requests within both SLO targets") {
  const Simulator sim(llama3_8b(), h100(), serving());
  Workload w = poisson(500, 5.0, 500, 50);
  const SimResult loose = sim.run(w, SimOptions{});
  CHECK(loose.meets_slo);
  CHECK(loose.slo_attainment == 1.0);
  CHECK(loose.goodput_requests_per_s == doctest::Approx(loose.requests_per_s));
  w.slo.ttft_p99_s = 1e-6;  // below any prefill time
  const SimResult tight = sim.run(w, SimOptions{});
  CHECK_FALSE(tight.meets_slo);
  CHECK(tight.goodput_requests_per_s == 0.0);
}

TEST_CASE("the scheduler names parse and print back") {
  for (Scheduler s : {Scheduler::continuous, Scheduler::chunked, Scheduler::static_batch})
    CHECK(parse_scheduler(to_string(s)) == s);
  CHECK(parse_scheduler("static") == Scheduler::static_batch);
  CHECK_FALSE(parse_scheduler("fcfs"));
}

TEST_CASE("chunked prefill with a token budget below max_num_seqs is an input error") {
  ServingOptions o = serving();
  o.max_num_batched_tokens = 100;
  const Simulator sim(llama3_8b(), h100(), o);
  CHECK_THROWS_AS(sim.run(poisson(1, 1.0, 10, 10), with(Scheduler::chunked)), InputError);
}

TEST_CASE("sliding-window layers: a decode step reads only the window of every sequence") {
  // Llama-3-8B with a 64-token window on every layer; 4 requests of 1,000 + 101 tokens
  // at t = 0 prefill together, then decode together at contexts far beyond the window.
  // Each step reads the weights (16,060,522,496 B) plus 4 x 64 tokens x 131,072 B at
  // 80 % of 3.35 TB/s, memory-bound: 6.0052 ms, whatever the context.
  ModelConfig m = llama3_8b();
  m.layer_window.assign(32, 64);
  const Simulator sim(m, h100(), serving());
  const SimResult r = sim.run(burst(4, 1000, 101), with(Scheduler::continuous));
  REQUIRE(r.completed == 4);
  CHECK(r.tpot_s.p50 == doctest::Approx((16060522496.0 + 4.0 * 64 * 131072) / (0.8 * 3.35e12)).epsilon(1e-9));
  // Without the window the same run reads 4 x ~1,050 tokens per step: 3.2 % slower.
  const SimResult full = Simulator(llama3_8b(), h100(), serving()).run(burst(4, 1000, 101), with(Scheduler::continuous));
  CHECK(full.tpot_s.p50 > r.tpot_s.p50 * 1.02);
}

namespace {
//! `n` requests at t = 0 of which the first `too_long` have prompts past Llama-3-8B's
//! 8,192-token max_model_len (vLLM refuses them); the rest 100 + 10 tokens.
Workload with_long_prompts(int64_t n, int64_t too_long) {
  auto rows = std::make_shared<std::vector<TraceRow>>();
  for (int64_t i = 0; i < n; ++i) rows->push_back(TraceRow{0.0, i < too_long ? 9000 : 100, 10});
  Workload w = burst(n, 100, 10);
  w.trace = rows;
  return w;
}
}  // namespace

TEST_CASE("rejected requests are failed requests in attainment and the p99 verdict") {
  const Simulator sim(llama3_8b(), h100(), serving());
  // 3 of 100 rejected: attainment 97 / 100; nearest-rank p99 is the 99th of 100 values
  // and 3 are infinitely late, so the 99th is one of them: missed, however fast the rest.
  const SimResult r = sim.run(with_long_prompts(100, 3), with(Scheduler::continuous));
  CHECK(r.rejected == 3);
  CHECK(r.rejected_max_model_len == 3);
  CHECK(r.rejected_pool == 0);
  CHECK(r.completed == 97);
  CHECK(r.slo_attainment == doctest::Approx(0.97));
  CHECK_FALSE(r.meets_slo);
  // 1 of 100 rejected: the 99th value is the slowest served one, which meets the SLO.
  const SimResult one = sim.run(with_long_prompts(100, 1), with(Scheduler::continuous));
  CHECK(one.rejected == 1);
  CHECK(one.slo_attainment == doctest::Approx(0.99));
  CHECK(one.meets_slo);
}


// ------------------------------------------------------------------------- the benchmark client

TEST_CASE("concurrency 1 runs requests strictly one after another") {
  // Five requests of 1,000 prompt and 101 output tokens, all due at t = 0, at most one in
  // flight. Each meets an idle engine, so each is the lone request of the first test: TTFT
  // = prefill(1000), E2E = prefill + the 100 decode steps of batch 1 at contexts
  // 1001..1100 (no request overhead or output lag in the default calibration). The next
  // is sent when the previous one ends, so the run lasts 5 E2E: throughput = 1 / E2E,
  // and no request waits inside the engine.
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  const ServingOptions o = serving();
  const StepTimeModel stm(m, g, o);
  const double prefill_s = stm.prefill(1000).time_s;
  const double decode_s = decode_sum(stm, 1, 1000, 100);
  const double e2e_s = prefill_s + decode_s;
  const Simulator sim(m, g, o);
  for (const Scheduler s : {Scheduler::continuous, Scheduler::chunked}) {
    CAPTURE(to_string(s));
    std::vector<double> sent_s;
    SimOptions so = client(1, true);
    so.scheduler = s;
    so.on_request = [&sent_s](const RequestEvent& e) {
      if (e.kind == RequestEventKind::arrived) sent_s.push_back(e.time_s);
    };
    const SimResult r = sim.run(poisson(5, 1.0, 1000, 101), so);
    CHECK(r.completed == 5);
    REQUIRE(sent_s.size() == 5);
    for (size_t i = 0; i < sent_s.size(); ++i)
      CHECK(sent_s[i] == doctest::Approx(static_cast<double>(i) * e2e_s).epsilon(1e-12));
    CHECK(r.ttft_s.p99 == doctest::Approx(prefill_s).epsilon(1e-12));
    CHECK(r.ttft_s.p50 == doctest::Approx(prefill_s).epsilon(1e-12));
    CHECK(r.e2e_s.mean == doctest::Approx(e2e_s).epsilon(1e-12));
    CHECK(r.tpot_s.mean == doctest::Approx(decode_s / 100).epsilon(1e-12));
    CHECK(r.queue_s.p99 == 0.0);
    CHECK(r.batch_max == 1);
    CHECK(r.duration_s == doctest::Approx(5 * e2e_s).epsilon(1e-12));
    CHECK(r.requests_per_s == doctest::Approx(1 / e2e_s).epsilon(1e-12));
    // Every gap between two tokens of a request is one decode step of batch 1: the pooled
    // ITL mean is the mean decode step, its largest the step at the longest context.
    CHECK(r.itl_s.mean == doctest::Approx(decode_s / 100).epsilon(1e-12));
    CHECK(r.itl_s.p99 <= stm.decode(1, 1100).time_s * (1 + 1e-12));
    CHECK(r.itl_s.p50 >= stm.decode(1, 1001).time_s * (1 - 1e-12));
  }
}

TEST_CASE("the slot is held until the client has the last token, request overhead included") {
  // With 10 ms of per-request overhead on the API server (tokenization before the engine
  // sees the request), the client's E2E is 10 ms plus the engine's prefill + decode, and
  // the next request goes out only then: request i is sent at i x (engine time + 10 ms)
  // and the last ends as the client has it (no output time here), so the run lasts
  // 5 x E2E. The time in the engine's queue is 0: each request finds it idle.
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  ServingOptions o = serving();
  o.calibration.request_overhead_s = 0.01;
  const StepTimeModel stm(m, g, o);
  const double engine_s = stm.prefill(1000).time_s + decode_sum(stm, 1, 1000, 100);
  const Simulator sim(m, g, o);
  const SimResult r = sim.run(poisson(5, 1.0, 1000, 101), client(1, true));
  CHECK(r.e2e_s.mean == doctest::Approx(engine_s + 0.01).epsilon(1e-12));
  CHECK(r.duration_s == doctest::Approx(5 * (engine_s + 0.01)).epsilon(1e-12));
  CHECK(r.queue_s.p99 == 0.0);
}

TEST_CASE("a concurrency at least the request count with rate inf is the all-at-once burst") {
  // 40 requests due at once: with N >= 40 no request ever waits for a slot, so the run is
  // that of a trace whose 40 rows all arrive at t = 0; without a limit, the same.
  const Simulator sim(llama3_8b(), h100(), serving());
  const SimResult want = sim.run(burst(40, 700, 150), with(Scheduler::chunked));
  for (const std::optional<int64_t> n : {std::optional<int64_t>(40), std::optional<int64_t>(1000), std::optional<int64_t>()}) {
    CAPTURE(n.value_or(-1));
    const SimResult r = sim.run(poisson(40, 3.0, 700, 150), client(n, true));
    CHECK(r.completed == want.completed);
    CHECK(r.steps == want.steps);
    CHECK(r.duration_s == want.duration_s);
    CHECK(r.ttft_s.p50 == want.ttft_s.p50);
    CHECK(r.ttft_s.p99 == want.ttft_s.p99);
    CHECK(r.tpot_s.mean == want.tpot_s.mean);
    CHECK(r.e2e_s.p99 == want.e2e_s.p99);
    CHECK(r.batch_max == 40);
  }
}

TEST_CASE("Little's law: a saturated closed loop keeps N requests in flight") {
  // Mean requests in flight = throughput x mean E2E (Little 1961), here with N from the
  // option. Equal requests sent all at once move in lock-step groups of N: N go out at
  // 0, end together, the next N go out at that instant, ... so exactly N are in flight
  // from the first send to the last end: throughput x mean E2E = N.
  const Simulator sim(llama3_8b(), h100(), serving());
  for (const int64_t n : {1, 4, 16}) {
    CAPTURE(n);
    const SimResult r = sim.run(poisson(4 * n, 1.0, 500, 120), client(n, true));
    CHECK(r.completed == 4 * n);
    CHECK(r.requests_per_s * r.e2e_s.mean == doctest::Approx(static_cast<double>(n)).epsilon(1e-9));
    CHECK(r.batch_max == n);
  }
  // Varied lengths (the chat workload's lognormals): requests end one by one and each
  // freed slot is refilled at once, so N are in flight until the stream runs dry; the
  // drain at the end (at most N - 1 requests still running, for at most one E2E) is all
  // that is missing: with 2,000 requests of N = 8, about N^2 / (2 x 2,000) = 0.2 % of N.
  Workload w = poisson(2000, 1.0, 1, 1);
  w.prompt_tokens = LengthDist{LengthKind::lognormal, 1, 1, 7000, 1155, 0.985};
  w.output_tokens = LengthDist{LengthKind::lognormal, 1, 1, 2000, 211, 0.8};
  const SimResult r = sim.run(w, client(8, true));
  const double in_flight = r.requests_per_s * r.e2e_s.mean;
  CHECK(in_flight <= 8.0 * (1 + 1e-9));
  CHECK(in_flight >= 8.0 * 0.98);
}

TEST_CASE("a request due while N are in flight is sent when one ends, its latencies from the send") {
  // Two requests 1 ms apart, concurrency 1: the second is due while the first runs; it is
  // sent at the first's end, finds the engine idle, and has the idle TTFT, not the first
  // one's E2E plus its own prefill.
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  const StepTimeModel stm(m, g, serving());
  const double prefill_s = stm.prefill(800).time_s;
  const double e2e_s = prefill_s + decode_sum(stm, 1, 800, 49);
  const Simulator sim(m, g, serving());
  Workload w = poisson(2, 1000.0, 800, 50);
  w.arrival.process = ArrivalProcess::fixed;
  std::vector<double> sent_s;
  SimOptions so = client(1, false);
  so.on_request = [&sent_s](const RequestEvent& e) {
    if (e.kind == RequestEventKind::arrived) sent_s.push_back(e.time_s);
  };
  const SimResult r = sim.run(w, so);
  REQUIRE(sent_s.size() == 2);
  CHECK(sent_s[0] == 0.0);
  CHECK(sent_s[1] == doctest::Approx(e2e_s).epsilon(1e-12));
  CHECK(r.ttft_s.p99 == doctest::Approx(prefill_s).epsilon(1e-12));
  CHECK(r.e2e_s.p99 == doctest::Approx(e2e_s).epsilon(1e-12));
  CHECK(r.duration_s == doctest::Approx(2 * e2e_s).epsilon(1e-12));
  CHECK(r.batch_max == 1);
  // Open loop, the same two requests run side by side.
  CHECK(sim.run(w, with(Scheduler::chunked)).batch_max == 2);
}

TEST_CASE("warm-up: the first N finished requests are left out of every figure") {
  // Concurrency 1, five equal requests back to back (the first client test): leaving out
  // the first two leaves three, measured from the second's end: throughput 3 / (3 E2E).
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  const StepTimeModel stm(m, g, serving());
  const double e2e_s = stm.prefill(1000).time_s + decode_sum(stm, 1, 1000, 100);
  const Simulator sim(m, g, serving());
  SimOptions so = client(1, true);
  so.warmup_requests = 2;
  const SimResult r = sim.run(poisson(5, 1.0, 1000, 101), so);
  CHECK(r.arrived == 5);
  CHECK(r.warmup == 2);
  CHECK(r.completed == 3);
  CHECK(r.output_tokens == 3 * 101);
  CHECK(r.duration_s == doctest::Approx(3 * e2e_s).epsilon(1e-12));
  CHECK(r.requests_per_s == doctest::Approx(1 / e2e_s).epsilon(1e-12));
}
