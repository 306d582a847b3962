// Tests of --stream-interval in the simulator (ServingOptions::stream_interval; the rules in
// docs/engines.md "Streaming"): closed forms worked by hand from the planner's step-time
// model for one request at idle, and runs whose first and last tokens must not move.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "planner/planner.h"
#include "sim/sim.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::sim;
using kvplan::sim::test::decode_sum;
using kvplan::sim::test::h100;
using kvplan::sim::test::llama3_8b;
using kvplan::sim::test::poisson;
using kvplan::sim::test::serving;
using kvplan::sim::test::client;
using kvplan::sim::test::with;

namespace {

struct Case {
  kvplan::Engine engine;
  std::string version;
  Scheduler scheduler;
};

ServingOptions streaming(const Case& c, int64_t interval) {
  ServingOptions o = serving();
  o.engine = c.engine;
  o.engine_version = c.version;
  o.async_scheduling = false;
  o.stream_interval = interval;
  // 10 ms of request overhead on the API server, 2 ms + 1 ms per output of output
  // processing: a step's outputs reach the client 3 ms after it ends when it sends one.
  o.calibration.request_overhead_s = 0.010;
  o.calibration.output_overhead_s = 0.002;
  o.calibration.output_overhead_per_seq_s = 0.001;
  return o;
}


}  // namespace

TEST_CASE("one request at idle: the first token goes at once whatever the stream interval") {
  // A 1000-token prompt and 13 output tokens, alone: the API server takes 10 ms, one
  // prefill step of 1000 tokens samples token 1, then decode step k (k = 1..12, batch 1,
  // context 1000 + k) samples token k + 1. Each engine sends token 1 as soon as its step
  // ends (SGLang: 1 % N == 1; TensorRT-LLM: py_decoding_iter == 1; vLLM: the first token),
  // and the last as the request finishes, each 2 + 1 x 1 ms of output processing later:
  //   TTFT = 10 ms + prefill(1000) + 3 ms,
  //   E2E  = 10 ms + prefill(1000) + sum of the 12 decode steps + 3 ms,
  //   TPOT = (E2E - TTFT) / 12 = the mean decode step, so TPOT >= the shortest decode step,
  // at N = 1 as at N = 4. What N changes is the ITL, one gap per chunk (the deliveries are
  // all 3 ms after their step, so a gap is the steps between them):
  //   N = 1: 12 gaps, one decode step each;
  //   SGLang and vLLM, N = 4: chunks at tokens 1, 5, 9, 13: 3 gaps of 4 steps (steps
  //   1-4, 5-8, 9-12), mean = sum / 3, p99 = the last (the longest contexts);
  //   TensorRT-LLM, N = 4: tokens 1, 4, 8, 12, 13: 4 gaps (steps 1-3, 4-7, 8-11, 12),
  //   mean = sum / 4, p99 = steps 4-7 or 8-11, whichever is longer: 8-11.
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  const std::vector<Case> cases{{kvplan::Engine::vllm, "0.19", Scheduler::chunked},
                                {kvplan::Engine::sglang, "0.5", Scheduler::sglang},
                                {kvplan::Engine::trtllm, "1.2", Scheduler::trtllm}};
  for (const Case& c : cases) {
    for (const int64_t n : {1, 4}) {
      CAPTURE(to_string(c.scheduler));
      CAPTURE(n);
      const ServingOptions o = streaming(c, n);
      const StepTimeModel stm(m, g, o);
      const double prefill_s = stm.prefill(1000).time_s;
      const double decode_s = decode_sum(stm, 1, 1000, 12);
      const Simulator sim(m, g, o);
      const SimResult r = sim.run(poisson(1, 1.0, 1000, 13), client(1, true, c.scheduler));
      REQUIRE(r.completed == 1);
      CHECK(r.ttft_s.p50 == doctest::Approx(0.010 + prefill_s + 0.003).epsilon(1e-12));
      CHECK(r.e2e_s.p50 == doctest::Approx(0.010 + prefill_s + decode_s + 0.003).epsilon(1e-12));
      CHECK(r.tpot_s.p50 == doctest::Approx(decode_s / 12).epsilon(1e-12));
      CHECK(r.tpot_s.p50 >= stm.decode(1, 1001).time_s * (1 - 1e-12));
      const auto steps = [&](int64_t first, int64_t last) {  // decode steps first..last
        return decode_sum(stm, 1, 1000, last) - decode_sum(stm, 1, 1000, first - 1);
      };
      if (n == 1) {
        CHECK(r.itl_s.mean == doctest::Approx(decode_s / 12).epsilon(1e-12));
      } else if (c.engine == kvplan::Engine::trtllm) {
        CHECK(r.itl_s.mean == doctest::Approx(decode_s / 4).epsilon(1e-12));
        CHECK(r.itl_s.p99 == doctest::Approx(steps(8, 11)).epsilon(1e-12));
        CHECK(r.itl_s.p50 == doctest::Approx(steps(1, 3)).epsilon(1e-12));  // rank 2 of 4: steps 1-3 > step 12
      } else {
        CHECK(r.itl_s.mean == doctest::Approx(decode_s / 3).epsilon(1e-12));
        CHECK(r.itl_s.p99 == doctest::Approx(steps(9, 12)).epsilon(1e-12));
        CHECK(r.itl_s.p50 == doctest::Approx(steps(5, 8)).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("a stream interval moves no request's first or last token when output costs nothing") {
  // With no output processing time, a token reaches the client as its step ends, so a
  // request's TTFT (first token, sent at once) and E2E (last token, sent as it finishes)
  // are the same at every stream interval, preemptions included (a pool of 600 blocks for
  // 64 requests of up to 1,500 + 300 tokens: 16-token blocks, so at most ~5 of them fit at
  // full length); only the chunks between them change. Checked against N = 1 under each
  // engine's scheduler, with the engine's bookkeeping recounted after every step.
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  Workload w = poisson(64, 40.0, 1000, 200);
  w.prompt_tokens = LengthDist{LengthKind::uniform, 1, 500, 1500, 1, 0};
  w.output_tokens = LengthDist{LengthKind::uniform, 1, 2, 300, 1, 0};
  const std::vector<Case> cases{{kvplan::Engine::vllm, "0.19", Scheduler::chunked},
                                {kvplan::Engine::sglang, "0.5", Scheduler::sglang},
                                {kvplan::Engine::trtllm, "1.2", Scheduler::trtllm}};
  for (const Case& c : cases) {
    CAPTURE(to_string(c.scheduler));
    std::vector<std::vector<double>> ttft(2), e2e(2);
    int64_t preemptions = 0;
    for (size_t i = 0; i < 2; ++i) {
      ServingOptions o = serving();
      o.engine = c.engine;
      o.engine_version = c.version;
      o.stream_interval = i == 0 ? 1 : 7;
      const Simulator sim(m, g, o);
      SimOptions so = with(c.scheduler);
      // TensorRT-LLM's default policy never evicts; MAX_UTILIZATION pauses the newest.
      so.trtllm.capacity_policy = CapacityPolicy::max_utilization;
      so.num_blocks = 600;
      so.seed = 3;
      so.on_finish = [&, i](const FinishedRequest& f) {
        ttft[i].push_back(f.ttft_s);
        e2e[i].push_back(f.e2e_s);
      };
      const SimResult r = sim.run(w, so);
      CHECK(r.completed == 64);
      preemptions = r.preemptions;
    }
    CHECK(ttft[0] == ttft[1]);
    CHECK(e2e[0] == e2e[1]);
    // vLLM and TensorRT-LLM (MAX_UTILIZATION) preempt here, so a request's chunks resume
    // after a recompute; SGLang's admission keeps room for the outputs (new_token_ratio)
    // and does not retract on this pool.
    if (c.scheduler != Scheduler::sglang) CHECK(preemptions > 0);
  }
}

TEST_CASE("a streamed chunk's gaps add up to each request's time from first to last token") {
  // A closed loop of 8 users (vLLM bench --max-concurrency 8 --rate inf), 40 requests of
  // 800 prompt and 37 output tokens, SGLang at N = 10: each request's chunks end at tokens
  // 1, 11, 21, 31 and 37, so it adds 4 gaps that telescope to its E2E - TTFT. The pooled
  // ITL mean is then sum(E2E - TTFT) / (4 x 40) = mean TPOT x 36 / 4 (every request has
  // 37 tokens).
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  ServingOptions o = serving();
  o.engine = kvplan::Engine::sglang;
  o.engine_version = "0.5";
  o.stream_interval = 10;
  const Simulator sim(m, g, o);
  SimOptions so = with(Scheduler::sglang);
  so.max_concurrency = 8;
  so.all_at_once = true;
  const SimResult r = sim.run(poisson(40, 1.0, 800, 37), so);
  REQUIRE(r.completed == 40);
  CHECK(r.itl_s.mean == doctest::Approx(r.tpot_s.mean * 36 / 4).epsilon(1e-9));
}
