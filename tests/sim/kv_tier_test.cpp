// The host KV tier (--kv-offloading-size): vLLM's OffloadingConnector below the prefix
// cache, its LRU order, its capacity and the load time of a hit.
#include <doctest/doctest.h>

#include <limits>
#include <vector>

#include "sim/prefix_cache.h"
#include "sim/sim.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::sim;
using kvplan::sim::test::h100;
using kvplan::sim::test::llama3_8b;

namespace {

// Llama-3-8B in bf16: 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072 bytes
// per token, 2,097,152 (2 MiB) per 16-token block on one GPU.
constexpr int64_t kBlockBytes = 2 * 32 * 8 * 128 * 2 * 16;

ServingOptions offloading(int64_t tier_blocks) {
  ServingOptions o;
  o.kv_offloading_bytes = tier_blocks * kBlockBytes;
  return o;
}

SimOptions small_pool() {
  SimOptions so = kvplan::sim::test::with(Scheduler::chunked);
  so.num_blocks = 20;
  return so;
}

std::vector<double> ttfts(const Simulator& sim, const Workload& w, SimOptions so) {
  std::vector<double> arrival, ttft;
  so.on_request = [&](const RequestEvent& e) {
    if (e.kind == RequestEventKind::arrived) arrival.push_back(e.time_s);
    if (e.kind == RequestEventKind::first_token) ttft.push_back(e.time_s - arrival[static_cast<size_t>(e.request)]);
  };
  (void)sim.run(w, so);
  return ttft;
}

}  // namespace

TEST_CASE("the host tier evicts its least recently used blocks, a run of unhittable ones in part") {
  const PromptContent a{0, 7, 0};
  HostTier t(4);
  for (int64_t i = 0; i < 3; ++i) t.store(PrefixCache::key(a, i, 16));
  CHECK(t.hits(a, 0, 10, 16) == 3);
  t.store(PrefixCache::key(a, 0, 16));  // touched: block 1 is now the oldest
  t.store_anonymous(2);                 // 5 blocks for 4: block 1 goes
  CHECK(t.used() == 4);
  CHECK(t.evicted() == 1);
  CHECK(t.hits(a, 0, 10, 16) == 1);  // block 0 only: the run stops at the missing block 1
  CHECK(t.hits(a, 2, 10, 16) == 1);
  t.store(PrefixCache::key(a, 1, 16));  // oldest now block 2: evicted
  CHECK(t.hits(a, 2, 10, 16) == 0);
  t.store(PrefixCache::key(a, 3, 16));  // the oldest is block 0 (touched before the run)
  CHECK(t.hits(a, 0, 10, 16) == 0);
  CHECK(t.used() == 4);  // blocks 1, 3 and what is left of the run (2 of 2)
  t.store(PrefixCache::key(a, 4, 16));  // one block of the run goes, the other stays
  CHECK(t.evicted() == 4);
  CHECK(t.used() == 4);
}

TEST_CASE("a prefix evicted from the GPU pool is loaded from the host tier: blocks x block bytes / host link") {
  // Pool of 20 blocks; requests A, B, A (prefix_cache_test.cpp's case): without a tier A's
  // third request finds blocks 0..6 (112 tokens) on the GPU, B having taken 13 of the 20.
  // With a tier every full block A and B computed was written through: blocks 7..11 come
  // back from host memory, so it hits 12 blocks = 192 tokens as with an unbounded pool,
  // and its prefill step is the same step plus the load: 5 x 2 MiB / 25 GB/s = 0.419 ms.
  const ModelConfig m = llama3_8b();
  const Workload w = kvplan::sim::test::alternating(2, 3);
  const Simulator plain(m, h100(), ServingOptions{});
  CHECK(plain.run(w, small_pool()).cached_prompt_tokens == 112);

  const Simulator tiered(m, h100(), offloading(512));
  const SimResult r = tiered.run(w, small_pool());
  CHECK(r.cached_prompt_tokens == 192);
  CHECK(r.host_tier.capacity_blocks == 512);
  CHECK(r.host_tier.hit_tokens == 80);
  CHECK(r.host_tier.loads == 1);
  const double load_s = 5.0 * static_cast<double>(kBlockBytes) / 25e9;
  CHECK(r.host_tier.load_s == doctest::Approx(load_s).epsilon(1e-12));
  CHECK(r.host_tier.stored_blocks == 24);  // A's 12 full blocks and B's; A's third found its 5
  CHECK(r.host_tier.evicted_blocks == 0);

  const std::vector<double> unbounded = ttfts(plain, w, kvplan::sim::test::with(Scheduler::chunked));
  const std::vector<double> loaded = ttfts(tiered, w, small_pool());
  REQUIRE(loaded.size() == 3);
  CHECK(loaded[2] - unbounded[2] == doctest::Approx(load_s).epsilon(1e-9));
  CHECK(loaded[0] == doctest::Approx(unbounded[0]).epsilon(1e-12));  // a store costs no step time

  // A faster link loads in proportion.
  SimOptions fast = small_pool();
  fast.host_link_bytes_per_s = 50e9;
  CHECK(tiered.run(w, fast).host_tier.load_s == doctest::Approx(load_s / 2).epsilon(1e-12));
}

TEST_CASE("a full tier keeps the most recently stored blocks: A's tail survives B's 12 blocks in 17, not in 16") {
  // A stores its blocks 0..11 in order, then B its 12: a tier of 17 blocks evicts A's
  // seven oldest, 0..6, the very blocks A's third request still finds on the GPU, and
  // keeps 7..11, which it loads (192 tokens hit). A tier of 16 evicts block 7 as well and
  // the host run starts with a miss: 112 tokens, as without a tier.
  const ModelConfig m = llama3_8b();
  const Workload w = kvplan::sim::test::alternating(2, 3);
  const SimResult kept = Simulator(m, h100(), offloading(17)).run(w, small_pool());
  CHECK(kept.cached_prompt_tokens == 192);
  CHECK(kept.host_tier.hit_tokens == 80);
  CHECK(kept.host_tier.evicted_blocks == 7);
  const SimResult lost = Simulator(m, h100(), offloading(16)).run(w, small_pool());
  CHECK(lost.cached_prompt_tokens == 112);
  CHECK(lost.host_tier.hit_tokens == 0);
  CHECK(lost.host_tier.loads == 0);
}

TEST_CASE("generated tokens' blocks take room in the tier as vLLM's connector stores them") {
  // Output 33 tokens: each request writes the KV of 200 + 33 - 1 = 232 tokens, 14 full
  // blocks: 12 of its prompt and 2 nothing can hit, stored in the order A0..A11, A's two,
  // B0..B11, B's two (28). On the GPU B grows to 15 of the 20 blocks, leaving A's blocks
  // 0..4 cached, so A's third request looks for blocks 5..11 in the tier: a tier of 23
  // evicted only A0..A4 and serves all seven (112 tokens); one of 22 evicted A5 too, and
  // the run starts with a miss.
  const ModelConfig m = llama3_8b();
  Workload w = kvplan::sim::test::alternating(2, 3);
  w.output_tokens.value = 33;
  const SimResult r = Simulator(m, h100(), offloading(23)).run(w, small_pool());
  CHECK(r.host_tier.hit_tokens == 112);
  CHECK(r.cached_prompt_tokens == 192);
  CHECK(r.host_tier.stored_blocks == 14 + 14 + 2);  // A's third adds its two output blocks
  const SimResult tight = Simulator(m, h100(), offloading(22)).run(w, small_pool());
  CHECK(tight.host_tier.hit_tokens == 0);
  CHECK(tight.cached_prompt_tokens == 80);
}

TEST_CASE("the host tier needs the prefix cache, and vLLM or the ideal engine") {
  const ModelConfig m = llama3_8b();
  ServingOptions off = offloading(64);
  off.enable_prefix_caching = false;
  CHECK_THROWS_AS(Simulator(m, h100(), off), InputError);
  ServingOptions sglang = offloading(64);
  sglang.engine = kvplan::Engine::sglang;
  CHECK_THROWS_AS(Simulator(m, h100(), sglang), InputError);
  ServingOptions old = offloading(64);
  old.engine = kvplan::Engine::vllm;
  old.engine_version = "0.13";
  CHECK_THROWS_AS(Simulator(m, h100(), old), InputError);
  const Simulator tiered(m, h100(), offloading(64));
  CHECK_THROWS_AS((void)tiered.run(kvplan::sim::test::alternating(2, 3), kvplan::sim::test::with(Scheduler::static_batch)), InputError);
}

TEST_CASE("SGLang's HiCache serves the same evicted prefix from its host pool under SGLang's scheduler") {
  // --enable-hierarchical-cache --hicache-size: a host pool of 1 GB per GPU =
  // floor(1e9 / 2,097,152) = 476 blocks, write-through. A, B, A on a 20-block pool: A's
  // blocks 7..11 come back from host memory, 5 x 2 MiB over the link.
  ServingOptions o;
  o.engine = kvplan::Engine::sglang;
  o.hicache = ServingOptions::HiCache{2.0, 1'000'000'000};
  const Simulator sim(llama3_8b(), h100(), o);
  SimOptions so = kvplan::sim::test::with(Scheduler::sglang);
  so.num_blocks = 20;
  const SimResult r = sim.run(kvplan::sim::test::alternating(2, 3), so);
  CHECK(r.host_tier.capacity_blocks == 476);
  CHECK(r.cached_prompt_tokens == 192);
  CHECK(r.host_tier.hit_tokens == 80);
  CHECK(r.host_tier.load_s == doctest::Approx(5.0 * static_cast<double>(kBlockBytes) / 25e9).epsilon(1e-12));
  // SGLang refuses a host pool no larger than the GPU pool: 0.04 GB = 19 blocks < 20.
  o.hicache->size_bytes_per_gpu = 40'000'000;
  const Simulator small(llama3_8b(), h100(), o);
  CHECK_THROWS_AS((void)small.run(kvplan::sim::test::alternating(2, 3), so), InputError);
}

TEST_CASE("the disk tier takes what the host tier evicts and a lookup finds a prompt's head below and its tail above") {
  // Host tier of 4 blocks over a disk of 8: storing blocks 0..5 evicts 0 and 1 (the least
  // recently used) to the disk, so the prompt's 6 blocks are found, 2 of them below.
  const PromptContent a{0, 7, 0};
  HostTier t(4);
  t.add_below(8);
  for (int64_t i = 0; i < 6; ++i) t.store(PrefixCache::key(a, i, 16));
  int64_t below = -1;
  CHECK(t.hits(a, 0, 10, 16, &below) == 6);
  CHECK(below == 2);
  CHECK(t.evicted() == 2);
  REQUIRE(t.below() != nullptr);
  CHECK(t.below()->stored() == 2);
  CHECK(t.below()->evicted() == 0);
  // Without the disk the same stores leave a run that starts with a miss.
  HostTier alone(4);
  for (int64_t i = 0; i < 6; ++i) alone.store(PrefixCache::key(a, i, 16));
  CHECK(alone.hits(a, 0, 10, 16) == 0);
}

TEST_CASE("a rotation larger than the host tier but not than host + disk is served from the disk") {
  // Three prompts A, B, C of 200 tokens (12 full blocks each, 36 in all) in rotation,
  // twice, on a 20-block GPU pool. Write-through stores A0..11, B0..11, C0..11; a host tier
  // of 24 blocks evicts A's 12 to the disk. The second A finds nothing on the GPU (B and C
  // took the pool) and its 12 blocks on the disk: promoted to the host tier, they evict B's
  // 12 to the disk, whose B is then found there, and so C: 3 x 192 = 576 prompt tokens
  // from the disk, none from the host tier. Each load waits one read latency (85 us), reads
  // 12 x 2 MiB from the disk and sends it over the host link: 0.085 + 12 x 2,097,152 /
  // 6.9e9 = 3.732 ms on the disk, 12 x 2,097,152 / 25e9 = 1.007 ms on the link. The
  // demotions before it (A's 12 blocks, 12 x 2,097,152 / 3.5e9 = 7.2 ms of the drive's
  // time) ended 1,000 s before (one request every 1,000 s): no wait.
  const ModelConfig m = llama3_8b();
  const Workload w = kvplan::sim::test::alternating(3, 6);
  ServingOptions o = offloading(24);
  const SimResult host_only = Simulator(m, h100(), o).run(w, small_pool());
  CHECK(host_only.cached_prompt_tokens == 0);  // LRU under a rotation larger than the tier
  o.kv_disk_bytes = 12 * kBlockBytes;
  const SimResult r = Simulator(m, h100(), o).run(w, small_pool());
  CHECK(r.disk_tier.capacity_blocks == 12);
  CHECK(r.cached_prompt_tokens == 576);
  CHECK(r.disk_tier.hit_tokens == 576);
  CHECK(r.host_tier.hit_tokens == 0);
  CHECK(r.disk_tier.loads == 3);
  const double disk_s = 85e-6 + 12.0 * static_cast<double>(kBlockBytes) / 6.9e9;
  CHECK(r.disk_tier.wait_s == 0);
  // Written: A's 12 blocks when C's came in, then each promotion (A, B, C) demotes the
  // host tier's oldest 12 (B, C, A), each evicting the disk's only prompt: 48 blocks.
  CHECK(r.disk_tier.write_s == doctest::Approx(48 * static_cast<double>(kBlockBytes) / 3.5e9).epsilon(1e-12));
  const double link_s = 12.0 * static_cast<double>(kBlockBytes) / 25e9;
  CHECK(r.disk_tier.load_s == doctest::Approx(3 * disk_s).epsilon(1e-12));
  CHECK(r.host_tier.load_s == doctest::Approx(3 * link_s).epsilon(1e-12));
  // On a pool that holds the whole rotation the second A hits the same 192 tokens on the
  // GPU: its first token comes the disk read and the link transfer sooner.
  const std::vector<double> gpu = ttfts(Simulator(m, h100(), ServingOptions{}), w, kvplan::sim::test::with(Scheduler::chunked));
  const std::vector<double> disk = ttfts(Simulator(m, h100(), o), w, small_pool());
  REQUIRE(disk.size() == 6);
  CHECK(disk[3] - gpu[3] == doctest::Approx(disk_s + link_s).epsilon(1e-9));
  // One block less of disk (11) loses A0 before A comes back: the run starts with a miss
  // and the rotation is recomputed every time, as without a disk.
  o.kv_disk_bytes = 11 * kBlockBytes;
  CHECK(Simulator(m, h100(), o).run(w, small_pool()).cached_prompt_tokens == 0);
}

TEST_CASE("a disk read waits for the demotions queued on the drive before it") {
  // The rotation above with a drive that writes 12 blocks in 1,000.5 s (W = 12 x 2,097,152
  // / 1,000.5 B/s): A's 12 blocks are demoted when C's blocks are stored, at the end of
  // C's prefill step (C's arrival at 2,000 s + its TTFT, as C has one output token), so
  // the drive is busy until 3,000.5 s + C's TTFT; A returns at 3,000 s and its read waits
  // 0.5 s + C's TTFT before its latency and bytes: its TTFT is that much longer than with
  // a drive that writes at once.
  const ModelConfig m = llama3_8b();
  const Workload w = kvplan::sim::test::alternating(3, 6);
  ServingOptions o = offloading(24);
  o.kv_disk_bytes = 12 * kBlockBytes;
  const Simulator sim(m, h100(), o);
  SimOptions fast = small_pool();
  fast.disk_write_bytes_per_s = 1e18;
  SimOptions slow = small_pool();
  slow.disk_write_bytes_per_s = 12.0 * static_cast<double>(kBlockBytes) / 1000.5;
  const std::vector<double> at_once = ttfts(sim, w, fast);
  const std::vector<double> queued = ttfts(sim, w, slow);
  REQUIRE(queued.size() == 6);
  CHECK(queued[3] - at_once[3] == doctest::Approx(0.5 + at_once[2]).epsilon(1e-9));
  CHECK(queued[0] == at_once[0]);  // a write is never on the step's critical path
  CHECK(sim.run(w, slow).disk_tier.wait_s >= 0.5);
}

TEST_CASE("a rotation larger than the host tier is served from the remote store: latency + bytes / network + host link") {
  // The rotation above (A, B, C of 12 full blocks, twice) over a 24-block host tier and a
  // store of 36 blocks. Every block is written through to the store as to the host tier,
  // so the second A, B and C find their 12 blocks there (the host tier dropped each just
  // before it returned): 3 x 192 = 576 prompt tokens from the store. Each load costs one
  // fetch's latency (20 us here) and 12 x 2,097,152 / 23.75e9 = 1.060 ms over the network,
  // then 12 x 2,097,152 / 25e9 = 1.007 ms over the host link.
  const ModelConfig m = llama3_8b();
  const Workload w = kvplan::sim::test::alternating(3, 6);
  ServingOptions o = offloading(24);
  o.kv_remote_bytes = 36 * kBlockBytes;  // tp = pp = 1: a block is one GPU's 2 MiB
  SimOptions so = small_pool();
  so.remote_latency_s = 20e-6;
  const Simulator sim(m, h100(), o);
  const SimResult r = sim.run(w, so);
  CHECK(r.remote_tier.capacity_blocks == 36);
  CHECK(r.cached_prompt_tokens == 576);
  CHECK(r.remote_tier.hit_tokens == 576);
  CHECK(r.host_tier.hit_tokens == 0);
  CHECK(r.remote_tier.loads == 3);
  const double remote_s = 20e-6 + 12.0 * static_cast<double>(kBlockBytes) / 23.75e9;
  const double link_s = 12.0 * static_cast<double>(kBlockBytes) / 25e9;
  CHECK(r.remote_tier.load_s == doctest::Approx(3 * remote_s).epsilon(1e-12));
  CHECK(r.host_tier.load_s == doctest::Approx(3 * link_s).epsilon(1e-12));
  CHECK(r.remote_tier.stored_blocks == 36);  // the first round's; the second touched them
  CHECK(r.remote_tier.evicted_blocks == 0);
  const std::vector<double> gpu = ttfts(Simulator(m, h100(), ServingOptions{}), w, kvplan::sim::test::with(Scheduler::chunked));
  const std::vector<double> remote = ttfts(sim, w, so);
  REQUIRE(remote.size() == 6);
  CHECK(remote[3] - gpu[3] == doctest::Approx(remote_s + link_s).epsilon(1e-9));
  // A store of 35 blocks evicts A0 for C11: A's run starts with a miss, A is recomputed
  // and written again (evicting B0), and so on: nothing is ever served.
  o.kv_remote_bytes = 35 * kBlockBytes;
  CHECK(Simulator(m, h100(), o).run(w, so).cached_prompt_tokens == 0);
  // The store's latency is an input with no default.
  so.remote_latency_s = std::numeric_limits<double>::quiet_NaN();
  o.kv_remote_bytes = 36 * kBlockBytes;
  CHECK_THROWS_AS(Simulator(m, h100(), o).run(w, so), InputError);
}

TEST_CASE("a remote tier needs a host tier above it") {
  ServingOptions o;
  o.kv_remote_bytes = 64 * kBlockBytes;
  CHECK_THROWS_AS(Simulator(llama3_8b(), h100(), o), InputError);
}

TEST_CASE("a disk tier needs a host tier above it") {
  ServingOptions o;
  o.kv_disk_bytes = 64 * kBlockBytes;
  CHECK_THROWS_AS(Simulator(llama3_8b(), h100(), o), InputError);
}
