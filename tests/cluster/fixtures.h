// Test fixtures for cluster/: the H100's KV links and a pool of it.
#pragma once

#include <cstdint>

#include "cluster/kv_link.h"
#include "planner/types.h"
#include "tests/fixtures.h"

namespace kvplan::cluster::test {

//! The H100 SXM's links in configs/gpus/h100-sxm.yaml (docs/gpus.md "KV transfer
//! links"): 8 GPUs a node, NVLink 450 GB/s per direction, one 400 Gb/s ConnectX-7 per
//! GPU (50 GB/s), Ethernet 100 Gb/s shared by 8 GPUs (1.5625 GB/s); latencies from
//! NCCL's tuning constants (14.1 us within a node, 15 us across).
inline GpuSpec h100_with_links(const char* name = "h100-sxm") {
  GpuSpec g = kvplan::test::h100();
  g.name = name;
  KvLinks l;
  l.gpus_per_node = 8;
  l.nvlink = KvLink{450e9, 14.1e-6};
  l.rdma = KvLink{50e9, 15.0e-6};
  l.ethernet = KvLink{1.5625e9, 15.0e-6};
  g.kv_links = l;
  return g;
}

//! `instances` instances of TP `tp` on `g`, up to 256 sequences each.
inline PoolSpec pool(const GpuSpec& g, int64_t tp, int64_t instances) {
  PoolSpec p;
  p.gpu = g;
  p.options.tp = tp;
  p.options.max_num_seqs = 256;
  p.instances = instances;
  return p;
}

}  // namespace kvplan::cluster::test
