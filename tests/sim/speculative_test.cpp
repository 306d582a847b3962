// Speculative decoding in the simulator (sim/engine.h, docs/speculative.md "Simulator"):
// each decode step verifies 1 + k tokens per decoder and yields the accepted prefix plus
// one. Expected step counts, contexts, means and block counts are worked by hand in the
// comments; step durations come from the planner's SpecTimeModel at the contexts worked
// out here, so what is tested is the engine's bookkeeping of tokens, contexts and blocks.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "planner/planner.h"
#include "planner/speculative.h"
#include "sim/sim.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::sim;
using kvplan::sim::test::burst;
using kvplan::sim::test::h100;
using kvplan::sim::test::llama3_8b;
using kvplan::sim::test::serving;
using kvplan::sim::test::with;

namespace {

ServingOptions spec_serving(SpecMethod m, int64_t k, std::vector<double> rates) {
  ServingOptions o = serving();
  auto s = std::make_shared<SpecDecode>();
  s->method = m;
  s->num_speculative_tokens = k;
  s->acceptance_rates = std::move(rates);
  if (m == SpecMethod::draft_model) s->draft = llama3_8b();  // the target's own shape and vocabulary
  o.spec = s;
  return o;
}

struct Run {
  SimResult result;
  std::vector<StepSample> steps;
  std::map<int64_t, FinishedRequest> done;
};

Run run(const ModelConfig& m, const ServingOptions& o, const Workload& w, SimOptions so) {
  Run r;
  so.on_step = [&r](const StepSample& s) { r.steps.push_back(s); };
  so.on_finish = [&r](const FinishedRequest& f) { r.done[f.index] = f; };
  r.result = Simulator(m, h100(), o).run(w, so);
  return r;
}

//! Decoder-steps of a run: the sum over its steps of the sequences that decoded.
int64_t decoder_steps(const Run& r) {
  int64_t n = 0;
  for (const StepSample& s : r.steps) n += s.decode_seqs;
  return n;
}

}  // namespace

TEST_CASE("every draft accepted: O tokens take (O - 1) / (k + 1) steps, each at the context it verifies") {
  // One request, 100 prompt tokens, 13 output tokens, n-gram drafts k = 3 at rate 1: the
  // prefill samples token 1, then each step keeps its 3 drafts and its own token, 4 tokens:
  // 12 / 4 = 3 decode steps whose first queries attend 101, 105 and 109 tokens. At rate 0
  // each step yields one token: 12 steps at 101 ... 112. TPOT = their sum / 12 (one
  // request at idle: every step's tokens are delivered at its end, no output cost here).
  const ModelConfig m = llama3_8b();
  for (const double rate : {1.0, 0.0}) {
    CAPTURE(rate);
    const ServingOptions o = spec_serving(SpecMethod::ngram, 3, {rate});
    const Run r = run(m, o, burst(1, 100, 13), with(Scheduler::chunked));
    REQUIRE(r.result.completed == 1);
    const SpecTimeModel t(m, h100(), o);
    const int64_t gain = rate == 1.0 ? 4 : 1;
    double expected = 0;
    for (int64_t c = 101; c < 113; c += gain) expected += t.at(1, c).step_s;
    CHECK(decoder_steps(r) == 12 / gain);
    CHECK(r.done.at(0).tpot_s == doctest::Approx(expected / 12).epsilon(1e-12));
    // 100 prompt tokens + 12 decoded; the last token is sampled, never cached.
    CHECK(r.result.tokens_simulated == 112);
  }
}

TEST_CASE("the mean tokens a decoder gains per step is 1 + a1 + a1 a2 + ... + a1...ak") {
  // 200 requests of 1,000 decode tokens each (64-token prompts, 1,001 outputs), all at once.
  // Tokens per decoder-step -> E: k = 3 at 0.6: 1 + 0.6 + 0.36 + 0.216 = 2.176; rates 0.9,
  // 0.5, 0.2: 1 + 0.9 + 0.45 + 0.09 = 2.44. About 200,000 / E = 82,000-92,000 draws, each
  // of standard deviation at most 1.2 tokens: the mean's is under 0.2 % of E; the last
  // step of each request is cut to the tokens left (at most 200 short steps, under 0.3 %
  // low). So within 1 %.
  const ModelConfig m = llama3_8b();
  struct Case {
    std::vector<double> rates;
    double expected;
  };
  for (const Case& c : {Case{{0.6}, 2.176}, Case{{0.9, 0.5, 0.2}, 2.44}}) {
    CAPTURE(c.expected);
    const Run r = run(m, spec_serving(SpecMethod::ngram, 3, c.rates), burst(200, 64, 1001), with(Scheduler::chunked));
    REQUIRE(r.result.completed == 200);
    const double per_step = 200.0 * 1000.0 / static_cast<double>(decoder_steps(r));
    CHECK(per_step == doctest::Approx(c.expected).epsilon(0.01));
    CHECK(per_step < c.expected * 1.003);
  }
}

TEST_CASE("a drafter that writes KV holds k lookahead slots: one more block at the end") {
  // 100 prompt + 45 output tokens, blocks of 16, k = 3 at rate 1 (generated before the
  // steps: 1, 5, ..., 41). Plain decoding ends holding 144 tokens: 9 blocks. A draft model
  // reserves 1 + 3 verified + 3 lookahead slots: its last step needs 100 + 40 + 7 = 147
  // tokens, 10 blocks. N-gram drafts write no KV (1 + 3 slots): 144, 9 blocks.
  const ModelConfig m = llama3_8b();
  const Workload w = burst(1, 100, 45);
  CHECK(run(m, serving(), w, with(Scheduler::chunked)).result.peak_blocks == 9);
  CHECK(run(m, spec_serving(SpecMethod::draft_model, 3, {1.0}), w, with(Scheduler::chunked)).result.peak_blocks == 10);
  CHECK(run(m, spec_serving(SpecMethod::ngram, 3, {1.0}), w, with(Scheduler::chunked)).result.peak_blocks == 9);
}

TEST_CASE("preemption and swap with speculation keep every request's tokens (invariants checked each step)") {
  // 64 requests of 200 + 300 tokens in a pool of 400 blocks (6,400 tokens: 12 requests at
  // their full 499 tokens), random acceptance: decoders are preempted as contexts grow
  // unevenly. Every request completes with its 300 tokens, and with recompute every
  // token is computed at least once: at least 64 x (200 + 299) tokens.
  ModelConfig m = llama3_8b();
  for (const bool windowed : {false, true}) {
    CAPTURE(windowed);
    // Every other layer with a 128-token window: the engine then sums keys per decoder.
    if (windowed)
      for (size_t l = 0; l < m.layer_window.size(); l += 2) m.layer_window[l] = 128;
    for (const Preemption p : {Preemption::recompute, Preemption::swap}) {
      SimOptions so = with(Scheduler::chunked);
      so.num_blocks = 400;
      so.preemption = p;
      const Run r = run(m, spec_serving(SpecMethod::ngram, 3, {0.7}), burst(64, 200, 300), so);
      CHECK(r.result.completed == 64);
      CHECK(r.result.preemptions > 0);
      for (const auto& [id, f] : r.done) CHECK(f.output_tokens == 300);
      CHECK(r.result.tokens_simulated >= 64 * 499);
    }
  }
}

TEST_CASE("speculation runs on vLLM V1's scheduler, with a token budget for 1 + k tokens per running request") {
  const ModelConfig m = llama3_8b();
  const ServingOptions o = spec_serving(SpecMethod::ngram, 3, {0.8});
  for (const Scheduler s : {Scheduler::continuous, Scheduler::static_batch, Scheduler::sglang, Scheduler::trtllm})
    CHECK_THROWS_AS(Simulator(m, h100(), o).run(burst(1, 100, 10), with(s)), InputError);
  // 256 sequences x (1 + 3) tokens = 1,024 > a 512-token budget.
  ServingOptions small = o;
  small.max_num_batched_tokens = 512;
  CHECK_THROWS_WITH_AS(Simulator(m, h100(), small).run(burst(1, 100, 10), with(Scheduler::chunked)),
                       doctest::Contains("1024"), InputError);
  // Automatic: the engine ideal picks the chunked scheduler when speculation is on.
  CHECK(Simulator(m, h100(), o).scheduler(Scheduler::automatic).scheduler == Scheduler::chunked);
}
