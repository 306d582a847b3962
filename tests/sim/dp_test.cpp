// simulate --dp: the data-parallel attention ranks pooled into one scheduler
// (docs/parallelism.md, "Simulator").
#include <doctest/doctest.h>

#include "io/config_io.h"
#include "planner/planner.h"
#include "sim/sim.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::sim;

TEST_CASE("--dp: each rank runs max_num_seqs sequences: the pool is dp ranks of blocks, reported per GPU") {
  // Qwen3-30B-A3B (128 experts) on H100, TP 1 x DP 2 x EP 2, 4 sequences a rank: a burst
  // of 40 requests runs 2 x 4 = 8 at once, never more.
  const ModelConfig m = io::load_model("qwen3-30b-a3b");
  const GpuSpec g = io::load_gpu("h100-sxm");
  ServingOptions o;
  o.dp = 2;
  o.ep = 2;
  o.max_num_seqs = 4;
  o.max_model_len = 4096;
  const Simulator sim(m, g, o);
  SimOptions so;
  so.check_invariants = true;
  const SimResult r = sim.run(kvplan::sim::test::burst(40, 100, 10), so);
  CHECK(r.completed == 40);
  CHECK(r.batch_max == 8);
  // The KV pool line stays per GPU: the planner's blocks for one rank.
  const MemoryBudget b = memory_budget(m, g, o);
  CHECK(r.num_blocks == capacity(m, o, b, 4096).num_blocks);
  // One rank alone (DP 1, no EP) runs at most 4.
  ServingOptions one = o;
  one.dp = one.ep = 1;
  CHECK(Simulator(m, g, one).run(kvplan::sim::test::burst(40, 100, 10), so).batch_max == 4);
}
