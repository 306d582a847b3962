#include <doctest/doctest.h>

#include "gpu_validate/memory.h"

using namespace kvplan;
using namespace kvplan::gv;

TEST_CASE("SimulatedArena rounds to its alignment and refuses what does not fit") {
  SimulatedArena a(1000, 256);
  CHECK(a.allocate(500));      // 512 used
  CHECK(a.used_bytes() == 512);
  CHECK_FALSE(a.allocate(500));  // 512 more would be 1024 > 1000
  CHECK(a.used_bytes() == 512);
  CHECK_FALSE(a.allocate(488));  // 488 free, but 488 rounds up to 512
  CHECK(a.allocate(256));
  CHECK(a.free_bytes() == 232);
  a.release_all();
  CHECK(a.free_bytes() == 1000);
}

TEST_CASE("BlockPool takes whole requests or nothing") {
  BlockPool p(10);
  CHECK(p.take(4));
  CHECK(p.take(4));
  CHECK_FALSE(p.take(4));
  CHECK(p.free_blocks() == 2);
}

TEST_CASE("the planner's capacity fits in a simulated device and one block more does not") {
  const ModelConfig m = llama_1b_like_config();
  GpuSpec g;
  g.name = "fake";
  g.memory_bytes = int64_t{8} << 30;
  ServingOptions o;
  const MemoryBudget b = memory_budget(m, g, o);
  SimulatedArena arena(b.usable_bytes - b.reserve_bytes);
  const MemoryCheck r = run_memory_check(m, g, o, 4096, arena);
  CHECK(r.weights_allocated);
  CHECK(r.activations_allocated);
  CHECK(r.pool_allocated);
  CHECK(r.admitted_requests == r.capacity.max_concurrent_requests);
  CHECK(r.admitted_requests > 0);
  CHECK_FALSE(r.next_request_fits);
  CHECK_FALSE(r.extra_block_fits);
}
