// Tests of sim/block_pool.h: the block table and growth points of a full-attention model,
// worked by hand (vLLM's paged cache: one 16-token block per 16 tokens held).
#include <doctest/doctest.h>

#include <cstdint>

#include "planner/planner.h"
#include "sim/block_pool.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::sim;
using kvplan::sim::test::llama3_8b;

TEST_CASE("a full-attention model holds ceil(tokens / 16) blocks and grows every 16 tokens") {
  // Llama-3-8B, every layer full attention: a request of t tokens holds ceil(t / 16)
  // blocks of 16 tokens, so it needs a new block at tokens 17, 33, ...
  const ModelConfig m = llama3_8b();
  const ServingOptions o;
  REQUIRE(o.block_size == 16);
  const BlockTable t(m, o, 8192, "test");
  CHECK(t.block_size() == 16);
  CHECK(t.block_index(0) == 0);
  CHECK(t.block_index(16) == 1);
  CHECK(t.block_index(17) == 2);
  CHECK(t.blocks_for(0) == 0);
  CHECK(t.blocks_for(1) == 1);
  CHECK(t.blocks_for(16) == 1);
  CHECK(t.blocks_for(17) == 2);
  CHECK(t.blocks_for(8192) == 512);
  CHECK(t.next_growth_tokens(1) == 17);
  CHECK(t.next_growth_tokens(16) == 17);
  CHECK(t.next_growth_tokens(17) == 33);
  CHECK(t.covers(8192 + 16));
  CHECK_FALSE(t.covers(-1));
}

TEST_CASE("a block pool counts the blocks in use and free") {
  BlockPool p(100);
  p.take(30);
  p.take(5);
  CHECK(p.used() == 35);
  CHECK(p.free() == 65);
  p.give_back(30);
  CHECK(p.used() == 5);
  CHECK(p.total() == 100);
}
