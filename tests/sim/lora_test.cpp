// LoRA in the simulator (sim/engine.cpp, docs/lora.md "Simulator"): requests on adapters
// drawn from the workload's `lora` mix, vLLM's max_loras rule at admission, and adapter
// loads into GPU slots on the step's critical path. Expected values are worked by hand.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "planner/planner.h"
#include "sim/requests.h"
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

ServingOptions lora_serving(int64_t slots) {
  ServingOptions o = serving();
  o.lora = LoraOptions{};
  o.lora->max_loras = slots;
  return o;
}

//! The first seed whose first two requests are on different adapters (of two).
uint64_t seed_with_two_adapters(const Workload& w) {
  for (uint64_t seed = 0; seed < 64; ++seed) {
    RequestStream s(w, seed, 1.0, 2);
    const int32_t a = s.next()->adapter, b = s.next()->adapter;
    if (a != b) return seed;
  }
  FAIL("no seed in 0..63 puts two requests on different adapters");
  return 0;
}

}  // namespace

TEST_CASE("a cold adapter is copied into its slot before its first step: TTFT longer by slot bytes / host link") {
  // Two requests 100 s apart on the one adapter of the workload: the first finds it in no
  // slot and pays one copy, 92,356,608 B (Llama-3-8B, rank 16, every module:
  // tests/planner/lora_test.cpp) over 25 GB/s = 3.69426432 ms; the second finds it in
  // its slot. The engine is idle for both, so the TTFTs differ by exactly the copy.
  Workload w = kvplan::sim::test::poisson(2, 0.01, 1000, 11);
  w.arrival.process = ArrivalProcess::fixed;
  w.lora.adapters = 1;
  SimOptions so = with(Scheduler::chunked);
  so.host_link_bytes_per_s = 25e9;
  std::map<int64_t, double> ttft;
  so.on_finish = [&](const FinishedRequest& f) { ttft[f.index] = f.ttft_s; };
  const SimResult r = Simulator(llama3_8b(), h100(), lora_serving(1)).run(w, so);
  REQUIRE(r.completed == 2);
  CHECK(ttft[0] - ttft[1] == doctest::Approx(92356608.0 / 25e9).epsilon(1e-9));
  CHECK(r.lora.tracked);
  CHECK(r.lora.gpu_loads == 1);
  CHECK(r.lora.host_misses == 1);
  CHECK(r.lora.load_s == doctest::Approx(92356608.0 / 25e9).epsilon(1e-12));
  CHECK(r.lora.waited_requests == 0);
}

TEST_CASE("max_loras 1: a request on another adapter waits until the running one has finished") {
  // Two requests at t = 0 on different adapters. With one slot the second is admitted
  // only when the first leaves (vLLM's scheduler skips it while max_loras adapters run),
  // so its first token comes after the first request's last; with two slots both are
  // prefilled in the first step and their first tokens come together.
  Workload w = burst(2, 512, 32);
  w.lora.adapters = 2;
  for (Scheduler s : {Scheduler::chunked, Scheduler::continuous}) {
    CAPTURE(to_string(s));
    SimOptions so = with(s);
    so.seed = seed_with_two_adapters(w);
    std::map<int64_t, FinishedRequest> done;
    so.on_finish = [&](const FinishedRequest& f) { done[f.index] = f; };
    const SimResult one = Simulator(llama3_8b(), h100(), lora_serving(1)).run(w, so);
    REQUIRE(one.completed == 2);
    CHECK(done[1].ttft_s > done[0].e2e_s);
    CHECK(one.lora.waited_requests == 1);
    CHECK(one.lora.gpu_loads == 2);  // the second adapter replaces the first in the one slot
    done.clear();
    const SimResult two = Simulator(llama3_8b(), h100(), lora_serving(2)).run(w, so);
    REQUIRE(two.completed == 2);
    CHECK(done[1].ttft_s == doctest::Approx(done[0].ttft_s).epsilon(1e-12));
    CHECK(two.lora.waited_requests == 0);
  }
}

TEST_CASE("base-model requests need no slot and run beside any adapter") {
  // 20 requests of 256 + 16 tokens at t = 0, half on the base model, the rest on two
  // adapters, one slot: everything fits the first step's token budget (20 x 256 <
  // 8,192) but the requests on the adapter that is not the first one requested, which
  // wait; the base-model requests are all in the first step with the first adapter's.
  Workload w = burst(20, 256, 16);
  w.lora.adapters = 2;
  w.lora.base_fraction = 0.5;
  std::vector<int32_t> adapter;
  RequestStream stream(w, 0, 1.0, 20);
  while (auto g = stream.next()) adapter.push_back(g->adapter);
  int32_t first = -1;
  int64_t other = 0;
  for (int32_t a : adapter) {
    if (a >= 0 && first < 0) first = a;
    other += a >= 0 && a != first ? 1 : 0;
  }
  REQUIRE(first >= 0);
  REQUIRE(other > 0);  // the seed puts requests on both adapters
  SimOptions so = with(Scheduler::chunked);
  std::map<int64_t, double> ttft;
  so.on_finish = [&](const FinishedRequest& f) { ttft[f.index] = f.ttft_s; };
  const SimResult r = Simulator(llama3_8b(), h100(), lora_serving(1)).run(w, so);
  CHECK(r.completed == 20);
  CHECK(r.lora.waited_requests == other);
  const double first_step_ttft = ttft[0];
  for (size_t i = 0; i < adapter.size(); ++i) {
    CAPTURE(i);
    if (adapter[i] == -1 || adapter[i] == first) CHECK(ttft[static_cast<int64_t>(i)] == doctest::Approx(first_step_ttft));
    else CHECK(ttft[static_cast<int64_t>(i)] > first_step_ttft);
  }
}

TEST_CASE("the host cache holds max_cpu_loras adapters: one past it is loaded again") {
  // Three adapters taking turns (max_loras 1, requests far apart): with a host cache of 3
  // each is fetched past it once; with 1 (max_cpu_loras = max_loras) every change of
  // adapter is a miss. Either way every change is one copy into the slot.
  Workload w = kvplan::sim::test::poisson(30, 0.01, 128, 4);
  w.arrival.process = ArrivalProcess::fixed;
  w.lora.adapters = 3;
  ServingOptions big = lora_serving(1), small = lora_serving(1);
  big.lora->max_cpu_loras = 3;
  const SimResult a = Simulator(llama3_8b(), h100(), big).run(w, with(Scheduler::chunked));
  const SimResult b = Simulator(llama3_8b(), h100(), small).run(w, with(Scheduler::chunked));
  CHECK(a.lora.host_misses == 3);
  CHECK(b.lora.host_misses == b.lora.gpu_loads);
  CHECK(a.lora.gpu_loads == b.lora.gpu_loads);
  CHECK(a.lora.gpu_loads > 3);
}

TEST_CASE("a workload's adapters: zipf popularity, a base fraction, and lengths drawn as without them") {
  // zipf_s 1 over 2 adapters: P(first) = 1 / (1 + 1/2) = 2/3; with base_fraction 0.25 a
  // request is on the base model with probability 1/4, on the first adapter 3/4 x 2/3 = 1/2.
  Workload w = kvplan::sim::test::poisson(30000, 5.0, 100, 10);
  w.prompt_tokens = LengthDist{LengthKind::uniform, 1, 1, 1000, 1, 0};
  Workload plain = w;
  w.lora.adapters = 2;
  w.lora.zipf_s = 1.0;
  w.lora.base_fraction = 0.25;
  RequestStream s(w, 7, 1.0, 30000), p(plain, 7, 1.0, 30000);
  int64_t base = 0, first = 0;
  bool same_lengths = true, plain_on_base = true;
  while (auto r = s.next()) {
    const auto q = p.next();
    same_lengths = same_lengths && q->prompt_tokens == r->prompt_tokens && q->arrival_s == r->arrival_s;
    plain_on_base = plain_on_base && q->adapter == -1;
    base += r->adapter == -1 ? 1 : 0;
    first += r->adapter == 0 ? 1 : 0;
  }
  CHECK(same_lengths);
  CHECK(plain_on_base);
  // 3 standard deviations of a binomial(30000, p): 0.0075 at p = 1/4, 0.0087 at p = 1/2.
  CHECK(static_cast<double>(base) / 30000 == doctest::Approx(0.25).epsilon(0.03));
  CHECK(static_cast<double>(first) / 30000 == doctest::Approx(0.5).epsilon(0.02));
}

TEST_CASE("a workload with adapters needs --enable-lora") {
  Workload w = burst(2, 64, 4);
  w.lora.adapters = 2;
  CHECK_THROWS_AS(Simulator(llama3_8b(), h100(), serving()).run(w, with(Scheduler::chunked)), InputError);
  // SGLang's and TensorRT-LLM's schedulers have no max_loras rule to run.
  CHECK_THROWS_AS(Simulator(llama3_8b(), h100(), lora_serving(1)).run(w, with(Scheduler::sglang)), InputError);
  CHECK_THROWS_AS(Simulator(llama3_8b(), h100(), lora_serving(1)).run(w, with(Scheduler::trtllm)), InputError);
}
