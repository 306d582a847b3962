// Tests of cluster/kv_link.h: the link rule against the H100's link figures
// (configs/gpus/h100-sxm.yaml, docs/gpus.md), worked by hand.
#include <doctest/doctest.h>

#include "cluster/kv_link.h"
#include "planner/types.h"
#include "tests/cluster/fixtures.h"

using namespace kvplan;
using namespace kvplan::cluster;
using kvplan::cluster::test::h100_with_links;
using kvplan::cluster::test::pool;

TEST_CASE("the link rule: one node over NVLink, different GPU types or too many GPUs over RDMA") {
  DisaggLayout l{pool(h100_with_links(), 2, 1), pool(h100_with_links(), 2, 2), {}};
  // 2 + 4 = 6 GPUs of one type fit a node of 8: NVLink; each side's TP 2 GPUs carry a
  // share: min(2 x 450, 2 x 450) GB/s.
  KvTransferLink k = choose_link(l);
  CHECK(k.kind == LinkKind::nvlink);
  CHECK(k.same_node);
  CHECK(k.bytes_per_s == doctest::Approx(900e9));
  CHECK(k.latency_s == doctest::Approx(14.1e-6));
  // 2 + 4 x 2 = 10 GPUs exceed the node: RDMA, 2 x 50 GB/s on the prefill side and
  // 1 x 50 on the decode side (TP 1): the slower side's 50 GB/s.
  l.decode = pool(h100_with_links(), 1, 8);
  k = choose_link(l);
  CHECK(k.kind == LinkKind::rdma);
  CHECK_FALSE(k.same_node);
  CHECK(k.bytes_per_s == doctest::Approx(50e9));
  CHECK(k.latency_s == doctest::Approx(15e-6));
  // Every GPU of an instance has its share: decode TP 2 x PP 2 on 4 nodes' worth of GPUs
  // (2 + 4 x 4 = 18 > 8) moves 4 x 50 GB/s, the prefill side TP 2 x 50: 100 GB/s.
  l.decode = pool(h100_with_links(), 2, 4);
  l.decode.options.pp = 2;
  CHECK(choose_link(l).bytes_per_s == doctest::Approx(100e9));
  // Different GPU types never share a node; without an rdma figure on one side: Ethernet.
  GpuSpec other = h100_with_links("other");
  other.kv_links->rdma.reset();
  l.decode = pool(other, 1, 1);
  k = choose_link(l);
  CHECK(k.kind == LinkKind::ethernet);
  CHECK(k.bytes_per_s == doctest::Approx(1.5625e9));
  // Forcing a link one side lacks, or a GPU without links, is bad input.
  l.link = LinkKind::rdma;
  CHECK_THROWS_AS(choose_link(l), InputError);
  l.link.reset();
  l.decode.gpu.kv_links.reset();
  CHECK_THROWS_AS(choose_link(l), InputError);
}

