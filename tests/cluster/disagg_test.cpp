// Tests of cluster/disagg.h: closed forms worked by hand (KV bytes from the model's shapes,
// transfer times from the link figures, step times from the planner's step-time model,
// never from the disaggregated simulator's own output), admission
// waiting on a full decode pool, and bad layouts.
#include <doctest/doctest.h>

#include <cstdint>

#include "cluster/disagg.h"
#include "cluster/max_rate.h"
#include "planner/planner.h"
#include "tests/cluster/fixtures.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::sim;
using namespace kvplan::cluster;
using kvplan::sim::test::burst;
using kvplan::sim::test::h100;
using kvplan::sim::test::llama3_8b;
using kvplan::cluster::test::h100_with_links;
using kvplan::cluster::test::pool;

namespace {

// Llama-3-8B in bf16 keeps K and V for 32 layers x 8 KV heads x 128 dims x 2 bytes:
// 2 x 32 x 8 x 128 x 2 = 131,072 bytes per token (128 KiB).
constexpr int64_t kKvBytesPerToken = int64_t{2} * 32 * 8 * 128 * 2;

}  // namespace

TEST_CASE("one request alone: TTFT = prefill + KV transfer + the decode instance's first step") {
  // Prefill on one H100, decode on one H100 of another name (so another node): RDMA at
  // 50 GB/s, 15 us. A 1000-token prompt: 1000 x 131,072 = 131,072,000 bytes of KV,
  // 131,072,000 / 50e9 = 2.62144 ms on the link + 15 us = 2.63644 ms.
  const ModelConfig m = llama3_8b();
  const DisaggLayout l{pool(h100_with_links(), 1, 1), pool(h100_with_links("h100-b"), 1, 1), {}};
  const DisaggSimulator ds(m, l);
  CHECK(ds.transfer_bytes(1000) == 1000 * kKvBytesPerToken);
  CHECK(ds.transfer_s(1000) == doctest::Approx(2.63644e-3).epsilon(1e-9));
  // The prefill instance computes the 1000 tokens in one step; the decode instance
  // recomputes the last prompt token over 999 cached ones to sample the first output
  // token (vLLM's transferred-KV rule), then decodes 100 more at contexts 1001..1100.
  const StepTimeModel stm(m, l.prefill.gpu, l.prefill.options);
  const double prefill_s = stm.prefill(1000).time_s;
  const double first_s = stm.step(1, stm.kv_traffic().prefill_pairs(999, 1), 0, 0).time_s;
  double decode_s = 0;
  for (int64_t c = 1001; c <= 1100; ++c) decode_s += stm.decode(1, c).time_s;
  const DisaggResult r = ds.run(burst(1, 1000, 101), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(r.overall.completed == 1);
  CHECK(r.transfers == 1);
  CHECK(r.transfer_s.p50 == doctest::Approx(2.63644e-3).epsilon(1e-9));
  CHECK(r.overall.ttft_s.p50 == doctest::Approx(prefill_s + 2.63644e-3 + first_s).epsilon(1e-9));
  CHECK(r.overall.tpot_s.p50 == doctest::Approx(decode_s / 100).epsilon(1e-9));
  CHECK(r.overall.e2e_s.p50 == doctest::Approx(prefill_s + 2.63644e-3 + first_s + decode_s).epsilon(1e-9));
  CHECK(r.prefill.requests == 1);
  CHECK(r.decode.requests == 1);
  // The decode pool holds the request's prompt blocks on arrival and its last block at
  // the end: 1000 + 101 - 1 = 1100 tokens = 69 blocks of 16.
  CHECK(r.decode.peak_kv_utilization * static_cast<double>(r.decode.num_blocks) == doctest::Approx(69));
}

TEST_CASE("a full decode pool makes a transferred request wait for blocks, and the wait is in its TTFT") {
  // Two requests of 32 prompt and 17 output tokens at t = 0; a decode pool of 3 blocks of
  // 16 tokens. Both prefill in one step of 64 tokens (T1). Their transfers leave one
  // prefill instance one after another: 32 x 131,072 = 4,194,304 bytes each, 83.886 us
  // on the link, + 15 us: r0 lands at T1 + 98.886 us, r1 at T1 + 167.772 + 15 us.
  // r0 takes 2 blocks (32 tokens), recomputes its last prompt token (step s1), then at
  // context 33 takes its third block: the pool is full and r1 (needing 2) waits until r0
  // has decoded its 16 tokens (contexts 33..48) and left.
  const ModelConfig m = llama3_8b();
  DisaggLayout l{pool(h100_with_links(), 1, 1), pool(h100_with_links("h100-b"), 1, 1), {}};
  l.decode.num_blocks = 3;
  const DisaggSimulator ds(m, l);
  const StepTimeModel stm(m, l.prefill.gpu, l.prefill.options);
  const double t1 = stm.step(64, 2 * stm.kv_traffic().prefill_pairs(0, 32), 0, 0).time_s;
  const double bytes = 32.0 * kKvBytesPerToken;
  const double l0 = t1 + bytes / 50e9 + 15e-6;
  const double l1 = t1 + 2 * bytes / 50e9 + 15e-6;
  const double s1 = stm.step(1, stm.kv_traffic().prefill_pairs(31, 1), 0, 0).time_s;
  double decode_s = 0;
  for (int64_t c = 33; c <= 48; ++c) decode_s += stm.decode(1, c).time_s;
  const double r0_done = l0 + s1 + decode_s;
  const DisaggResult r = ds.run(burst(2, 32, 17), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(r.overall.completed == 2);
  CHECK(r.decode.peak_kv_utilization == doctest::Approx(1.0));
  // Nearest rank over two requests: p50 the first, p99 the second.
  CHECK(r.overall.ttft_s.p50 == doctest::Approx(l0 + s1).epsilon(1e-9));
  CHECK(r.overall.ttft_s.p99 == doctest::Approx(r0_done + s1).epsilon(1e-9));
  CHECK(r.decode.wait_s.p99 == doctest::Approx(r0_done - l1).epsilon(1e-9));
  CHECK(r.overall.e2e_s.p99 == doctest::Approx(r0_done + s1 + decode_s).epsilon(1e-9));
}

TEST_CASE("a request longer than the decode pool is rejected there and fails the SLO") {
  // 3 blocks hold 48 tokens; 40 + 17 - 1 = 56 tokens need 4.
  const ModelConfig m = llama3_8b();
  DisaggLayout l{pool(h100_with_links(), 1, 1), pool(h100_with_links("h100-b"), 1, 1), {}};
  l.decode.num_blocks = 3;
  const DisaggResult r = DisaggSimulator(m, l).run(burst(1, 40, 17), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(r.overall.completed == 0);
  CHECK(r.overall.rejected == 1);
  CHECK(r.overall.rejected_pool == 1);
  CHECK(r.decode.rejected == 1);
  CHECK_FALSE(r.overall.meets_slo);
}

TEST_CASE("pools: least outstanding spreads a burst over the instances") {
  // 8 identical requests at t = 0 over 4 prefill instances: 2 each; over 2 decode
  // instances: 4 each.
  const ModelConfig m = llama3_8b();
  const DisaggLayout l{pool(h100_with_links(), 1, 4), pool(h100_with_links("h100-b"), 1, 2), {}};
  const DisaggResult r = DisaggSimulator(m, l).run(burst(8, 500, 20), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(r.overall.completed == 8);
  CHECK(r.prefill.instances == 4);
  CHECK(r.prefill.gpus == 4);
  CHECK(r.decode.gpus == 2);
  // Each prefill instance prefills its 2 prompts in one step of 1000 tokens: every
  // request's prefill ends at that step's time, so no prefill waits.
  CHECK(r.prefill.wait_s.p99 == doctest::Approx(0));
  CHECK(r.prefill.steps == 4);
}

TEST_CASE("bad layouts are input errors") {
  const ModelConfig m = llama3_8b();
  DisaggLayout l{pool(h100_with_links(), 1, 0), pool(h100_with_links(), 1, 1), {}};
  CHECK_THROWS_AS(DisaggSimulator(m, l), InputError);
  l.prefill.instances = 1;
  const DisaggSimulator ds(m, l);
  SimOptions o;
  o.scheduler = Scheduler::static_batch;
  CHECK_THROWS_AS(ds.run(burst(1, 10, 2), o), InputError);
  o.scheduler = Scheduler::continuous;
  o.num_blocks = 10;
  CHECK_THROWS_AS(ds.run(burst(1, 10, 2), o), InputError);
  CHECK_THROWS_AS(simulate_disagg(m, l, burst(1, 10, 2), 0.0), InputError);
}

TEST_CASE("the max rate of a layout whose KV link is the bottleneck is the link's transfer rate") {
  // 1P1D over Ethernet (two GPU types: no shared node; 'other' has no rdma figure):
  // 1.5625 GB/s. A 1000-token prompt's KV is 131,072,000 bytes: 83.89 ms a transfer, so
  // one prefill instance's link carries at most 1 / 83.89 ms = 11.92 requests/s. Fixed
  // arrivals above it queue at the link without bound: after the 990th of 1,000 requests
  // (the p99) the backlog is 990 x (83.89 ms - 1/rate), within the 5 s TTFT target only
  // while 1/rate >= 83.89 - 4.9 / 990 x 1000 ms = 78.94 ms, i.e. rate <= 12.67/s.
  // Below 11.92/s nothing queues (prefill ~20 ms and decode are far from their limits).
  const ModelConfig m = llama3_8b();
  GpuSpec other = h100_with_links("other");
  other.kv_links->rdma.reset();
  const DisaggLayout l{pool(h100_with_links(), 1, 1), pool(other, 1, 1), {}};
  const DisaggSimulator ds(m, l);
  CHECK(ds.link().kind == LinkKind::ethernet);
  CHECK(ds.transfer_s(1000) == doctest::Approx(131072000 / 1.5625e9 + 15e-6));
  Workload w = kvplan::sim::test::poisson(1000, 10, 1000, 2);
  w.arrival.process = ArrivalProcess::fixed;
  w.slo = Slo{5.0, 1.0};
  MaxRateOptions mo;
  mo.requests = 1000;
  const MaxRate r = find_max_rate(ds, w, kvplan::sim::test::with(Scheduler::chunked), mo);
  REQUIRE(r.found);
  CHECK(r.max_rate_per_s > 11.92 * (1 - mo.rel_tolerance));
  CHECK(r.max_rate_per_s < 12.67);
  // A TTFT target below one transfer is met at no rate.
  w.slo = Slo{0.05, 1.0};
  CHECK_FALSE(find_max_rate(ds, w, kvplan::sim::test::with(Scheduler::chunked), mo).found);
}

TEST_CASE("each pool runs on its own GPU's step times, and the decode side's calibration overheads reach TTFT") {
  // Decode on an H100 with half the memory bandwidth (1.675 TB/s; a made-up GPU, so its
  // steps differ from the prefill GPU's) and a calibration that adds 50 ms per request
  // and an output processor of 4 ms + 1 ms per sequence with a token (5 ms per step for
  // one request: shorter than every decode step checked below, so it never queues). One
  // request of 1000 prompt and 11 output tokens:
  // TTFT = prefill (H100) + transfer + first decode-side step s1 (slow GPU) + 50 ms + 5 ms;
  // e2e   = prefill + transfer + s1 + 10 decode steps (slow GPU) + 50 ms + 5 ms;
  // TPOT = (e2e - TTFT) / 10 = the decode steps' mean.
  const ModelConfig m = llama3_8b();
  GpuSpec slow = h100_with_links("h100-slow");
  slow.memory_bandwidth_bytes_per_s = 1.675e12;
  DisaggLayout l{pool(h100_with_links(), 1, 1), pool(slow, 1, 1), {}};
  l.decode.options.calibration.request_overhead_s = 0.05;
  l.decode.options.calibration.output_overhead_s = 0.004;
  l.decode.options.calibration.output_overhead_per_seq_s = 0.001;
  const StepTimeModel fast_stm(m, l.prefill.gpu, l.prefill.options);
  const StepTimeModel slow_stm(m, l.decode.gpu, l.decode.options);
  const double prefill_s = fast_stm.prefill(1000).time_s;
  const double s1 = slow_stm.step(1, slow_stm.kv_traffic().prefill_pairs(999, 1), 0, 0).time_s;
  // The slower GPU's steps take longer: the test could not pass on the prefill GPU's.
  CHECK(s1 > fast_stm.step(1, fast_stm.kv_traffic().prefill_pairs(999, 1), 0, 0).time_s * 1.5);
  double decode_s = 0;
  for (int64_t c = 1001; c <= 1010; ++c) {
    const double d = slow_stm.decode(1, c).time_s;
    CHECK(d > 0.005);
    decode_s += d;
  }
  const double transfer_s = 1000.0 * kKvBytesPerToken / 50e9 + 15e-6;
  const DisaggResult r = DisaggSimulator(m, l).run(burst(1, 1000, 11), kvplan::sim::test::with(Scheduler::chunked));
  const double ttft = prefill_s + transfer_s + s1 + 0.05 + 0.005;
  const double e2e = prefill_s + transfer_s + s1 + decode_s + 0.05 + 0.005;
  CHECK(r.overall.ttft_s.p50 == doctest::Approx(ttft).epsilon(1e-9));
  CHECK(r.overall.e2e_s.p50 == doctest::Approx(e2e).epsilon(1e-9));
  CHECK(r.overall.tpot_s.p50 == doctest::Approx(decode_s / 10).epsilon(1e-9));
}

TEST_CASE("at zero load aggregated serving reaches the first token no later than 1P1D disaggregation") {
  // The same H100s and host overheads (20 ms per request, an output processor of 2 ms +
  // 0.5 ms per sequence) both ways; one 1000-token request. Aggregated: TTFT = 20 ms +
  // prefill(1000) + 2.5 ms. Disaggregated: the same prefill on the prefill instance, then
  // the KV transfer over RDMA (131,072,000 B / 50 GB/s + 15 us = 2.63644 ms) and the decode
  // instance's step that recomputes the last prompt token and samples (s1), then the
  // same delivery: TTFT = 20 ms + prefill + 2.63644 ms + s1 + 2.5 ms. The transfer and
  // s1 are extra; nothing in the disaggregated path can be shorter.
  const ModelConfig m = llama3_8b();
  DisaggLayout l{pool(h100_with_links(), 1, 1), pool(h100_with_links("h100-b"), 1, 1), {}};
  for (PoolSpec* p : {&l.prefill, &l.decode}) {
    p->options.calibration.request_overhead_s = 0.020;
    p->options.calibration.output_overhead_s = 0.002;
    p->options.calibration.output_overhead_per_seq_s = 0.0005;
  }
  const StepTimeModel stm(m, l.decode.gpu, l.decode.options);
  const double prefill_s = stm.prefill(1000).time_s;
  const double s1 = stm.step(1, stm.kv_traffic().prefill_pairs(999, 1), 0, 0).time_s;
  const sim::SimResult agg =
      sim::Simulator(m, l.prefill.gpu, l.prefill.options).run(burst(1, 1000, 11), kvplan::sim::test::with(Scheduler::chunked));
  const DisaggResult dis = DisaggSimulator(m, l).run(burst(1, 1000, 11), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(agg.ttft_s.p50 == doctest::Approx(0.020 + prefill_s + 0.0025).epsilon(1e-9));
  CHECK(dis.overall.ttft_s.p50 == doctest::Approx(0.020 + prefill_s + 2.63644e-3 + s1 + 0.0025).epsilon(1e-9));
  CHECK(agg.ttft_s.p50 <= dis.overall.ttft_s.p50);
}

TEST_CASE("a prefill instance keeps a request's KV until it has landed: a full prefill pool waits for the link") {
  // A prefill pool of 2 blocks (32 tokens) and two 32-token prompts at t = 0: r0 takes
  // both blocks, prefills alone (T = prefill of 32 tokens) and keeps them until its
  // 4,194,304 bytes have crossed RDMA (83.886 us + 15 us): only then, at L0 = T + 98.886
  // us, can r1 prefill; it lands at L1 = L0 + T + 98.886 us on the second decode
  // instance (the first has r0), idle, so TTFT(r1) = L1 + s1 and its prefill wait is L0.
  const ModelConfig m = llama3_8b();
  DisaggLayout l{pool(h100_with_links(), 1, 1), pool(h100_with_links("h100-b"), 1, 2), {}};
  l.prefill.num_blocks = 2;
  const StepTimeModel stm(m, l.prefill.gpu, l.prefill.options);
  const double t = stm.prefill(32).time_s;
  const double xfer = 32.0 * kKvBytesPerToken / 50e9 + 15e-6;
  const double l0 = t + xfer;
  const double l1 = l0 + t + xfer;
  const double s1 = stm.step(1, stm.kv_traffic().prefill_pairs(31, 1), 0, 0).time_s;
  const DisaggResult r = DisaggSimulator(m, l).run(burst(2, 32, 2), kvplan::sim::test::with(Scheduler::chunked));
  CHECK(r.overall.completed == 2);
  CHECK(r.prefill.peak_kv_utilization == doctest::Approx(1.0));
  CHECK(r.prefill.wait_s.p99 == doctest::Approx(l0).epsilon(1e-9));
  CHECK(r.overall.ttft_s.p50 == doctest::Approx(l0 + s1).epsilon(1e-9));
  CHECK(r.overall.ttft_s.p99 == doctest::Approx(l1 + s1).epsilon(1e-9));
}

TEST_CASE("a host KV tier on the prefill pool serves the prefix its GPU pool evicted, and the report gets its figures") {
  // A, B, A (200-token prompts of their own, one output token each, 1,000 s apart) on a
  // 20-block prefill pool, as tests/sim/kv_tier_test.cpp: A's third prefill finds blocks
  // 0..6 on the GPU and loads 7..11 from host memory, 5 x 2 MiB over 25 GB/s.
  const ModelConfig m = llama3_8b();
  DisaggLayout l{pool(h100_with_links(), 1, 1), pool(h100_with_links("h100-b"), 1, 1), {}};
  l.prefill.options.kv_offloading_bytes = int64_t{1} << 30;  // 512 blocks of 2 MiB
  l.decode.options.kv_offloading_bytes = int64_t{1} << 30;
  l.prefill.num_blocks = 20;
  const DisaggSimulator ds(m, l);
  const Workload w = kvplan::sim::test::alternating(2, 3);
  const DisaggResult r = ds.run(w, kvplan::sim::test::with(Scheduler::chunked));
  CHECK(r.overall.cached_prompt_tokens == 192);
  CHECK(r.overall.host_tier.hit_tokens == 80);
  CHECK(r.overall.host_tier.loads == 1);
  CHECK(r.overall.host_tier.capacity_blocks == 512);
  CHECK(r.overall.host_tier.load_s == doctest::Approx(5.0 * 2097152 / 25e9).epsilon(1e-12));
}
