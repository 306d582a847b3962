// Tests of the engines' schedulers (sim.h Scheduler, resolve_scheduler, EngineLimits):
// which scheduler `auto` picks per engine release, and step sequences of SGLang's and
// TensorRT-LLM's rules worked out by hand from their source (docs/engines.md
// "Schedulers" cites it).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "planner/planner.h"
#include "sim/sim.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::sim;
using kvplan::sim::test::burst;
using kvplan::sim::test::h100;
using kvplan::sim::test::llama3_8b;
using kvplan::sim::test::with;

namespace {

ServingOptions engine(kvplan::Engine e, const std::string& version = "") {
  ServingOptions o;
  o.engine = e;
  o.engine_version = version;
  return o;
}

//! (prefill tokens, decoding sequences) of every step of a run.
std::vector<std::pair<int64_t, int64_t>> steps_of(const Simulator& sim, const Workload& w, SimOptions so,
                                                  std::vector<int64_t>* preempted = nullptr) {
  std::vector<std::pair<int64_t, int64_t>> out;
  so.on_step = [&out](const StepSample& s) { out.emplace_back(s.prefill_tokens, s.decode_seqs); };
  if (preempted)
    so.on_request = [preempted](const RequestEvent& e) {
      if (e.kind == RequestEventKind::preempted) preempted->push_back(e.request);
    };
  const SimResult r = sim.run(w, so);
  CHECK(r.completed + r.warmup == w.requests);
  CHECK(r.warmup == so.warmup_requests);
  return out;
}

using Steps = std::vector<std::pair<int64_t, int64_t>>;

}  // namespace

TEST_CASE("auto picks the scheduler of the engine release") {
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  // vLLM V1 (0.8+) has no other mode than chunked prefill (v1/core/sched/scheduler.py).
  CHECK(resolve_scheduler(Scheduler::automatic, m, g, engine(kvplan::Engine::vllm)).scheduler == Scheduler::chunked);
  CHECK(resolve_scheduler(Scheduler::automatic, m, g, engine(kvplan::Engine::vllm, "0.8")).scheduler == Scheduler::chunked);
  // V0 0.6 at max_model_len 4096: no chunked prefill (EngineArgs switch it on above 32768).
  ServingOptions v06 = engine(kvplan::Engine::vllm, "0.6");
  v06.max_model_len = 4096;
  const SchedulerChoice c06 = resolve_scheduler(Scheduler::automatic, m, g, v06);
  CHECK(c06.scheduler == Scheduler::continuous);
  CHECK(c06.why.find("V0") != std::string::npos);
  // V0 0.6 at 65,536: chunked prefill on, SchedulerConfig's 512-token budget and V0's
  // 1 % watermark: int(0.01 x pool).
  v06.max_model_len = 65536;
  CHECK(resolve_scheduler(Scheduler::automatic, m, g, v06).scheduler == Scheduler::chunked);
  const EngineLimits l06 = engine_limits(m, g, v06, Scheduler::automatic);
  CHECK(l06.max_num_batched_tokens == 512);
  CHECK(l06.watermark_blocks == l06.num_blocks / 100);
  // V1 0.19's budget by GPU memory (vllm_default_batched_tokens): 8192 on an 80 GB H100,
  // 2048 below 70 GiB (a 48 GiB card).
  CHECK(engine_limits(m, g, engine(kvplan::Engine::vllm), Scheduler::automatic).max_num_batched_tokens == 8192);
  GpuSpec small = g;
  small.name = "l40s";
  small.memory_bytes = int64_t{48} << 30;
  CHECK(engine_limits(m, small, engine(kvplan::Engine::vllm), Scheduler::automatic).max_num_batched_tokens == 2048);
  // The other engines run their own; ideal keeps continuous; an explicit choice stays.
  CHECK(resolve_scheduler(Scheduler::automatic, m, g, engine(kvplan::Engine::sglang)).scheduler == Scheduler::sglang);
  CHECK(resolve_scheduler(Scheduler::automatic, m, g, engine(kvplan::Engine::trtllm)).scheduler == Scheduler::trtllm);
  CHECK(resolve_scheduler(Scheduler::automatic, m, g, engine(kvplan::Engine::ideal)).scheduler == Scheduler::continuous);
  CHECK(resolve_scheduler(Scheduler::static_batch, m, g, engine(kvplan::Engine::vllm)).scheduler == Scheduler::static_batch);
  CHECK(parse_scheduler("auto") == Scheduler::automatic);
  CHECK(parse_scheduler("sglang") == Scheduler::sglang);
}

TEST_CASE("vLLM schedules asynchronously by default from 0.14, the first release after PR #27614") {
  const ModelConfig m = llama3_8b();
  const GpuSpec g = h100();
  CHECK(engine_batch_defaults(m, g, engine(kvplan::Engine::vllm, "0.19")).async_scheduling);
  CHECK(engine_batch_defaults(m, g, engine(kvplan::Engine::vllm, "0.14")).async_scheduling);
  CHECK_FALSE(engine_batch_defaults(m, g, engine(kvplan::Engine::vllm, "0.13")).async_scheduling);
  CHECK_FALSE(engine_batch_defaults(m, g, engine(kvplan::Engine::vllm, "0.6")).async_scheduling);
  CHECK_FALSE(engine_batch_defaults(m, g, engine(kvplan::Engine::sglang)).async_scheduling);
  CHECK_FALSE(engine_batch_defaults(m, g, engine(kvplan::Engine::ideal)).async_scheduling);
  // The report's reason says so, and --async-scheduling off takes it back.
  CHECK(resolve_scheduler(Scheduler::automatic, m, g, engine(kvplan::Engine::vllm)).why.find("async scheduling") !=
        std::string::npos);
  ServingOptions off = engine(kvplan::Engine::vllm);
  off.async_scheduling = false;
  CHECK(resolve_scheduler(Scheduler::automatic, m, g, off).why.find("async") == std::string::npos);
}

TEST_CASE("auto: vLLM 0.8 below compute capability 8.0 falls back to V0 and schedules as V0") {
  // EngineArgs._is_v1_supported_oracle (vllm/engine/arg_utils.py, 0.8.4): "Compute
  // Capability < 8.0" runs the V0 engine, whose scheduler at max_model_len 4096 is the
  // continuous prefill-first one; on an 8.0 GPU the same release chunks.
  const ModelConfig m = llama3_8b();
  GpuSpec turing = h100();
  turing.name = "t4-like";
  turing.compute_capability_x10 = 75;
  ServingOptions o = engine(kvplan::Engine::vllm, "0.8");
  o.max_model_len = 4096;
  const SchedulerChoice c = resolve_scheduler(Scheduler::automatic, m, turing, o);
  CHECK(c.scheduler == Scheduler::continuous);
  CHECK(c.why.find("V0") != std::string::npos);
  GpuSpec ampere = turing;
  ampere.compute_capability_x10 = 80;
  CHECK(resolve_scheduler(Scheduler::automatic, m, ampere, o).scheduler == Scheduler::chunked);
}

TEST_CASE("SGLang's defaults: chunked_prefill_size by GPU memory, max_running_requests from the pool") {
  const ModelConfig m = llama3_8b();
  // server_args._handle_gpu_memory_settings (0.5): 8192 on an 80 GB H100.
  const EngineLimits l = engine_limits(m, h100(), engine(kvplan::Engine::sglang), Scheduler::automatic);
  CHECK(l.max_num_batched_tokens == 8192);
  CHECK(l.max_prefill_tokens == 16384);
  // min(pool tokens // 2, min(max(int(tokens / 8192 x 512), 2048), 4096)) with
  // max_model_len 8192: int(tokens / 16) = the pool's blocks of 16.
  const int64_t tokens = l.num_blocks * 16;
  CHECK(l.max_num_seqs == std::min(tokens / 2, std::clamp<int64_t>(l.num_blocks, 2048, 4096)));
  // TensorRT-LLM: max_num_tokens 8192, max_batch_size 2048.
  const EngineLimits t = engine_limits(m, h100(), engine(kvplan::Engine::trtllm), Scheduler::automatic);
  CHECK(t.max_num_batched_tokens == 8192);
  CHECK(t.max_num_seqs == 2048);
}

TEST_CASE("SGLang: separate prefill and decode steps, chunking, and admission stopping on rem_total_tokens") {
  // Pool 20 tokens (block_size 1 = SGLang's page_size), chunked_prefill_size 4, three
  // requests of prompt 3 and output 6 at t = 0; max_running_requests = min(20 // 2,
  // 2048) = 10; new_token_ratio starts at 0.7.
  // Step 1: A: 3 + 6 = 9 < 20 -> whole (offset 9, chunk budget 1 left); B: 9 < 11 ->
  //   chunked to 1 token, reserving no output. Prefill (3 + 1).
  // Step 2: the chunked B first (its last 2 tokens, offset += 2 + 6); A decodes no token
  //   (a prefill batch runs alone). free 16, offset 0.7 x 5 (A's remaining outputs)
  //   + 8 = 11.5; C: 9 >= 16 - 11.5 -> NO_TOKEN, batch_is_full. Prefill 2.
  // Steps 3-7: decode A and B (5 more tokens each); both leave after step 7.
  // Step 8: the running batch shrank, batch_is_full clears: C whole. Prefill 3.
  // Steps 9-13: decode C.
  ServingOptions o;
  o.engine = kvplan::Engine::sglang;
  o.block_size = 1;
  o.max_num_batched_tokens = 4;
  o.enable_prefix_caching = false;
  const Simulator sim(llama3_8b(), h100(), o);
  SimOptions so = with(Scheduler::sglang);
  so.num_blocks = 20;
  const Steps want = {{4, 0}, {2, 0}, {0, 2}, {0, 2}, {0, 2}, {0, 2}, {0, 2},
                      {3, 0}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}};
  CHECK(steps_of(sim, burst(3, 3, 6), so) == want);
  // Requests left out of the metrics as warm-up still leave the batch: step 8's admission
  // of C is the same with A and B counted as warm-up (it once waited forever).
  so.warmup_requests = 2;
  CHECK(steps_of(sim, burst(3, 3, 6), so) == want);
}

TEST_CASE("SGLang: a low new-token ratio over-admits, and a decode step short of KV retracts") {
  // Pool 12 tokens, block_size 1, chunked_prefill_size 2, three requests of prompt 2,
  // output 5 at t = 0, --schedule-conservativeness 0.1: ratio 0.07.
  // Steps 1-3: one prefill each (the 2-token budget holds one prompt): A; then B
  //   (free 10, offset 0.07 x 4 = 0.28: 2 + 5 = 7 < 9.72); then C (free 8, offset 0.56:
  //   7 < 7.44). Prefill batches run alone, so nobody decodes yet.
  // Steps 4-5: decode A, B, C (each needs a token: 3 <= 6, then 3 <= 3 free).
  // Step 6: 3 tokens needed, 0 free: retract_decode takes the fewest outputs, ties the
  //   longest prompt, then the newest: C, then (free 4 < 20 x 2) B; A is the last one.
  //   The ratio becomes min(1, (3 + 20) / 5) = 1. A decodes alone (its 5th token at 7).
  // Step 7: C (5 tokens to re-prefill: prompt + 3 outputs): 5 + 5 >= 7 - 1 x 1: NO_TOKEN;
  //   A decodes its last token and leaves.
  // Steps 8-10: C (idle: ratio back to 0.07) chunked 2 + 2 + 1; its prefill samples its
  //   4th token. B: 5 + 5 >= 8 - 6 at step 10: NO_TOKEN. Step 11: C decodes its 5th.
  // Steps 12-14: B re-prefilled 2 + 2 + 1; step 15: B's last token.
  ServingOptions o;
  o.engine = kvplan::Engine::sglang;
  o.block_size = 1;
  o.max_num_batched_tokens = 2;
  o.enable_prefix_caching = false;
  const Simulator sim(llama3_8b(), h100(), o);
  SimOptions so = with(Scheduler::sglang);
  so.num_blocks = 12;
  so.sglang.schedule_conservativeness = 0.1;
  std::vector<int64_t> retracted;
  const Steps want = {{2, 0}, {2, 0}, {2, 0}, {0, 3}, {0, 3}, {0, 1}, {0, 1}, {2, 0},
                      {2, 0}, {1, 0}, {0, 1}, {2, 0}, {2, 0}, {1, 0}, {0, 1}};
  CHECK(steps_of(sim, burst(3, 2, 5), so, &retracted) == want);
  CHECK(retracted == std::vector<int64_t>{2, 1});
}

TEST_CASE("SGLang: the new-token ratio decays per decode step, admitting what 0.7 would not") {
  // init 0.7, floor 0.7 x 0.14 = 0.098, decay (0.7 - 0.098) / 600 per decode step.
  // Pool 1000 tokens, block 1; A (prompt 10, output 700) runs alone; B (prompt 10,
  // output 500) arrives at t = 1 s. After k decode steps A holds 10 + k tokens with
  // 699 - k outputs to go, and B is admitted iff 10 + 500 < 990 - k - r_k (699 - k).
  // With r = 0.7 that is 500.7 - 0.3 k > 510: never. With the decay it holds from k = 25
  // on (k = 24: 966 - 0.67592 x 675 = 509.75; k = 25: 965 - 0.67492 x 674 = 510.1); by 1 s about 140 decode steps of ~7 ms have run, so B starts
  // at its arrival, long before A ends (and is retracted later, when the two outgrow
  // the pool).
  ServingOptions o;
  o.engine = kvplan::Engine::sglang;
  o.block_size = 1;
  o.max_num_batched_tokens = 1000;
  o.enable_prefix_caching = false;
  const Simulator sim(llama3_8b(), h100(), o);
  SimOptions so = with(Scheduler::sglang);
  so.num_blocks = 1000;
  auto rows = std::make_shared<std::vector<TraceRow>>();
  rows->push_back(TraceRow{0.0, 10, 700});
  rows->push_back(TraceRow{1.0, 10, 500});
  Workload w = burst(2, 1, 1);
  w.trace = rows;
  double b_scheduled = -1, a_finished = -1;
  int64_t decodes_before_b = 0;
  so.on_step = [&](const StepSample& s) {
    if (b_scheduled < 0 && s.decode_seqs > 0) ++decodes_before_b;
  };
  so.on_request = [&](const RequestEvent& e) {
    if (e.kind == RequestEventKind::scheduled && e.request == 1 && b_scheduled < 0) b_scheduled = e.time_s;
    if (e.kind == RequestEventKind::finished && e.request == 0) a_finished = e.time_s;
  };
  const SimResult r = sim.run(w, so);
  CHECK(r.completed == 2);
  REQUIRE(b_scheduled > 0);
  CHECK(b_scheduled < a_finished);
  CHECK(b_scheduled - 1.0 < 0.05);  // admitted at its first try
  // The first k that admits B, by the rule above: B's try came later than it.
  int64_t k = 0;
  while (990.0 - static_cast<double>(k) -
             std::max(0.7 - static_cast<double>(k) * (0.7 - 0.098) / 600, 0.098) * static_cast<double>(699 - k) <=
         510.0)
    ++k;
  CHECK(k == 25);
  CHECK(decodes_before_b >= k);
}

TEST_CASE("TensorRT-LLM GUARANTEED_NO_EVICT admits floor(pool / (prompt + output blocks)) requests") {
  // Pool 45 blocks of 16; requests of prompt 100 and output 61 hold 160 tokens = 10 blocks
  // at the end. GUARANTEED_NO_EVICT reserves them at admission: floor(45 / 10) = 4 start
  // in the first step (4 x 100 prompt tokens, within max_num_tokens 8192), none is ever
  // evicted. MAX_UTILIZATION takes the 7 blocks of the prompts only: floor(45 / 7) = 6.
  ServingOptions o;
  o.engine = kvplan::Engine::trtllm;
  o.enable_prefix_caching = false;
  const Simulator sim(llama3_8b(), h100(), o);
  SimOptions so = with(Scheduler::trtllm);
  so.num_blocks = 45;
  std::vector<StepSample> steps;
  so.on_step = [&steps](const StepSample& s) { steps.push_back(s); };
  const SimResult r = sim.run(burst(8, 100, 61), so);
  CHECK(r.completed == 8);
  CHECK(r.preemptions == 0);
  REQUIRE(!steps.empty());
  CHECK(steps.front().prefill_tokens == 400);
  CHECK(steps.front().batch == 4);
  CHECK(r.batch_max == 4);

  so.trtllm.capacity_policy = CapacityPolicy::max_utilization;
  steps.clear();
  const SimResult u = sim.run(burst(8, 100, 61), so);
  CHECK(u.completed == 8);
  CHECK(steps.front().prefill_tokens == 600);
  CHECK(u.preemptions > 0);  // 6 x 10 blocks > 45: the newest are paused
}

TEST_CASE("TensorRT-LLM refuses a prompt above max_num_tokens unless chunked prefill is on") {
  // llmapi/llm.py _check_arguments: "The sum of prompt length (...) should not exceed
  // max_num_tokens (...)" without enable_chunked_prefill.
  ServingOptions o;
  o.engine = kvplan::Engine::trtllm;
  o.max_num_batched_tokens = 1000;
  o.max_num_seqs = 256;
  o.max_num_seqs_given = true;
  const Simulator sim(llama3_8b(), h100(), o);
  SimOptions so = with(Scheduler::trtllm);
  const SimResult r = sim.run(burst(2, 1500, 10), so);
  CHECK(r.rejected == 2);
  CHECK(r.rejected_max_model_len == 2);
  so.trtllm.enable_chunked_prefill = true;
  std::vector<int64_t> prefill;
  so.on_step = [&prefill](const StepSample& s) { prefill.push_back(s.prefill_tokens); };
  const SimResult c = sim.run(burst(1, 1500, 10), so);
  CHECK(c.completed == 1);
  REQUIRE(prefill.size() >= 2);
  CHECK(prefill[0] == 1000);  // the first chunk fills max_num_tokens
  CHECK(prefill[1] == 500);
}

namespace {

//! Request A (prompt 100, output 20) at t = 0 and B (prompt 100, output 5) 1 us later,
//! while A's prefill runs.
Workload a_then_b() {
  Workload w = burst(2, 100, 20);
  auto rows = std::make_shared<std::vector<TraceRow>>(*w.trace);
  (*rows)[1] = TraceRow{1e-6, 100, 5};
  w.trace = rows;
  return w;
}

//! The index of the first step after the first that prefills.
size_t second_prefill(const Steps& s) {
  for (size_t i = 1; i < s.size(); ++i)
    if (s[i].first > 0) return i;
  return s.size();
}

}  // namespace

TEST_CASE("TensorRT-LLM batch waiting holds a context back timeout_iters steps while a request decodes") {
  // py_executor.py _waiting_requests (PR #7416), max_num_tokens 8,192. A prefills alone
  // (no generation request: no waiting), then decodes. B is a context from the next step
  // on: scheduled tokens = 100 + 1 (A's token) = 101.
  // Off: B prefills in the first step it is seen, beside A's decode: (100, 1).
  // timeout 3, ratio 0.8 (threshold 6,553.6 > 101): count 0, 1, 2 < 3 hold B back three
  //   steps, each A's decode alone (0, 1); the fourth finds count 3 >= 3 and runs (100, 1).
  // ratio 0.01 (threshold 81.92 <= 101): the token test stops waiting at once.
  // Either setting at 0 is off in effect: count >= 0 and tokens >= 0 always hold.
  ServingOptions o;
  o.engine = kvplan::Engine::trtllm;
  o.enable_prefix_caching = false;
  const Simulator sim(llama3_8b(), h100(), o);
  SimOptions so = with(Scheduler::trtllm);
  const Steps off = steps_of(sim, a_then_b(), so);
  const size_t k = second_prefill(off);
  REQUIRE(k < off.size());
  CHECK(off[k] == std::pair<int64_t, int64_t>{100, 1});

  so.trtllm.batch_wait = BatchWait{3, 0.8};
  const Steps held = steps_of(sim, a_then_b(), so);
  REQUIRE(held.size() > k + 3);
  CHECK(std::equal(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(k), off.begin()));
  for (size_t i = k; i < k + 3; ++i) CHECK(held[i] == std::pair<int64_t, int64_t>{0, 1});
  CHECK(held[k + 3] == std::pair<int64_t, int64_t>{100, 1});
  CHECK(sim.run(a_then_b(), so).batch_wait_steps == 3);

  so.trtllm.batch_wait = BatchWait{3, 0.01};
  CHECK(steps_of(sim, a_then_b(), so) == off);
  so.trtllm.batch_wait = BatchWait{0, 0.8};
  CHECK(steps_of(sim, a_then_b(), so) == off);
  so.trtllm.batch_wait = BatchWait{3, 0};
  CHECK(steps_of(sim, a_then_b(), so) == off);
}

TEST_CASE("TensorRT-LLM batch waiting never holds a context when nothing decodes") {
  // _schedule calls _waiting_requests only with generation requests in the batch ("no
  // generation requests, no need to wait, to avoid dead waiting"): a burst of 3 prompts of
  // 100 prefills all at once in the first step under any setting.
  ServingOptions o;
  o.engine = kvplan::Engine::trtllm;
  o.enable_prefix_caching = false;
  const Simulator sim(llama3_8b(), h100(), o);
  SimOptions so = with(Scheduler::trtllm);
  so.trtllm.batch_wait = BatchWait{40, 0.8};
  const Steps s = steps_of(sim, burst(3, 100, 4), so);
  REQUIRE(!s.empty());
  CHECK(s.front() == std::pair<int64_t, int64_t>{300, 0});
}

TEST_CASE("TensorRT-LLM batch waiting is refused for other schedulers and for TensorRT-LLM 1.0") {
  ServingOptions o;
  o.engine = kvplan::Engine::trtllm;
  o.engine_version = "1.0";
  SimOptions so = with(Scheduler::trtllm);
  so.trtllm.batch_wait = BatchWait{40, 0.8};
  CHECK_THROWS_AS(Simulator(llama3_8b(), h100(), o).run(burst(1, 100, 4), so), InputError);
  o.engine_version = "1.1";
  CHECK(Simulator(llama3_8b(), h100(), o).run(burst(1, 100, 4), so).completed == 1);
  so.scheduler = Scheduler::chunked;
  CHECK_THROWS_AS(Simulator(llama3_8b(), h100(), o).run(burst(1, 100, 4), so), InputError);
}
