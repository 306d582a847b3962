// The simulator under decode context parallelism (--dcp, docs/long-context.md): its pool
// holds dcp x the tokens in the same blocks per GPU, a request takes
// ceil(tokens / (block_size x dcp)) of them, and every decode step pays the DCP merge.
// Every expected figure is worked by hand in the comments.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>

#include "planner/planner.h"
#include "sim/sim.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::sim;
using kvplan::sim::test::burst;
using kvplan::sim::test::decode_sum;
using kvplan::sim::test::h100;
using kvplan::sim::test::poisson;
using kvplan::sim::test::with;
// The one-KV-head Llama-3.1-8B (tests/fixtures.h): TP 8 copies its head on all 8 GPUs, so
// DCP 8 is a layout vLLM accepts; 16,384 B per token per GPU.
using kvplan::test::llama31_8b_mqa;

namespace {

ServingOptions tp8(int64_t dcp) {
  ServingOptions o;
  o.tp = 8;
  o.dcp = dcp;
  o.max_num_seqs = 1024;
  return o;
}

}  // namespace

TEST_CASE("DCP 8 in the simulator: the same blocks per GPU hold 8x the tokens, so 8x the long requests run") {
  const ModelConfig m = llama31_8b_mqa();
  const Simulator one(m, h100(), tp8(1)), eight(m, h100(), tp8(8));
  // DCP adds no weights and no GPU: the same memory, the same pages of 16 slots per GPU;
  // the scheduler's block is 16 x 8 = 128 tokens, one page on each GPU of the group.
  CHECK(eight.num_blocks() == one.num_blocks());
  CHECK(one.block_size() == 16);
  CHECK(eight.block_size() == 128);
  // A request holding 131,071 tokens: ceil(131,071 / 16) = 8,192 blocks at DCP 1,
  // ceil(131,071 / 128) = 1,024 at DCP 8.
  CHECK(one.blocks_for(131071) == 8192);
  CHECK(eight.blocks_for(131071) == 1024);
  // 300 such requests at once (prompt 131,070, 2 output tokens: the last step holds
  // 131,071), static batching reserving each request's full length: a pool of B blocks
  // runs floor(B / 8,192) together at DCP 1, floor(B / 1,024) (capped by the 300) at DCP 8.
  const int64_t pool = one.num_blocks();
  REQUIRE(pool / 8192 < 300);
  const Workload w = burst(300, 131070, 2);
  const SimResult r1 = one.run(w, with(Scheduler::static_batch));
  const SimResult r8 = eight.run(w, with(Scheduler::static_batch));
  CHECK(r1.completed == 300);
  CHECK(r8.completed == 300);
  CHECK(r1.batch_max == pool / 8192);
  CHECK(r8.batch_max == std::min<int64_t>(300, pool / 1024));
  // floor(B / 1,024) >= 8 floor(B / 8,192): DCP 8 runs at least 8x the requests.
  CHECK(r8.batch_max >= 8 * r1.batch_max);
  CHECK(r8.peak_blocks <= pool);
}

TEST_CASE("DCP 8 in the simulator: one request's TPOT includes the merge of every decode step") {
  // A 1,000-token prompt and 101 output tokens alone: 100 decode steps at contexts
  // 1,001..1,100 (mean 1,050.5), one decode token each.
  const ModelConfig m = llama31_8b_mqa();
  const StepTimeModel s1(m, h100(), tp8(1)), s8(m, h100(), tp8(8));
  // The merge per step, per attention layer: 32 query heads / TP 8 = 4 local, x 8 = 32
  // gathered; per token 32 x ((128 query + 128 value) x 2 B + 4 B LSE) = 16,512 B; a ring
  // moves 7/8 of it: 14,448 B per GPU. No calibration: 5 us per collective and the
  // H100's NVLink, 450 GB/s. 32 layers x (3 x 5 us + 14,448 / 450e9 s) = 481.03 us.
  const double merge_s = 32 * (3 * 5e-6 + 14448 / 450e9);
  CHECK(s8.decode(1, 1001).dcp_communication_s == doctest::Approx(merge_s));
  CHECK(s1.decode(1, 1001).dcp_communication_s == 0);
  const SimResult r1 = Simulator(m, h100(), tp8(1)).run(poisson(1, 1.0, 1000, 101), with(Scheduler::continuous));
  const SimResult r8 = Simulator(m, h100(), tp8(8)).run(poisson(1, 1.0, 1000, 101), with(Scheduler::continuous));
  // The simulator's TPOT is its decode steps' mean, the merge included.
  CHECK(r8.tpot_s.p50 == doctest::Approx(decode_sum(s8, 1, 1000, 100) / 100).epsilon(1e-12));
  CHECK(r8.tpot_s.p50 >= s8.decode(1, 1001).time_s);
  // Against DCP 1, a step adds the merge and reads 1 / 8 of the KV: each GPU saves
  // 1,050.5 tokens x 16,384 B x 7/8 = 1,050.5 x 14,336 B on average, at the bandwidth
  // the memory-bound step reads at (its bytes over its memory time).
  const StepTime d1 = s1.decode(1, 1001);
  const double bytes_per_s = d1.bytes / d1.memory_s;
  CHECK(r8.tpot_s.p50 - r1.tpot_s.p50 == doctest::Approx(merge_s - 1050.5 * 14336 / bytes_per_s).epsilon(1e-4));
}
