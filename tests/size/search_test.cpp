// The bounded sizing search: the rate ceiling worked by hand, rejections that
// fail a p99 at any rate, and the bounded search against the exhaustive one.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>

#include "cluster/max_rate.h"
#include "io/config_io.h"
#include "reports/size_report.h"
#include "size/size.h"
#include "tests/size/workloads.h"
#include "tests/fixtures.h"

using namespace kvplan;

namespace {

//! 1,000 trace rows one second apart; the first `long_prompts` have 5,000-token prompts
//! (past Llama-2-7B's 4,096-token max_model_len), the others 100.
Workload with_long_prompts(int64_t long_prompts) {
  auto rows = std::make_shared<std::vector<TraceRow>>();
  for (int64_t i = 0; i < 1000; ++i) rows->push_back({static_cast<double>(i), i < long_prompts ? 5000 : 100, 20});
  Workload w;
  w.name = "long";
  w.requests = 1000;
  w.arrival.process = ArrivalProcess::trace;
  w.prompt_tokens.kind = LengthKind::trace;
  w.output_tokens.kind = LengthKind::trace;
  w.trace = rows;
  w.slo = {2.0, 0.1};
  return w;
}

GpuSpec priced(const std::string& name, double price) {
  GpuSpec g = io::load_gpu(name);
  g.price_per_hour_usd = price;
  return g;
}

}  // namespace

TEST_CASE("the rate ceiling is the probe's least decode and prefill time, worked by hand, and bounds the simulator") {
  const ModelConfig m = test::llama3_8b();
  const GpuSpec g = test::h100();
  const sim::Simulator s(m, g, ServingOptions{});
  const Workload w = size_test::fixed_lengths(1000, ArrivalProcess::fixed);
  const size::ProbeRequests p = size::probe_requests(w, 0, 1000);
  REQUIRE(p.prompt_tokens.size() == 1000);
  // Fixed gaps of 1/11 s from 0: the 1,000th request arrives at 999/11 s.
  CHECK(p.last_arrival_s == doctest::Approx(999.0 / 11).epsilon(1e-12));
  const size::RateCeiling rc = size::rate_ceiling(s, sim::Scheduler::continuous, p);
  CHECK(rc.rejected == 0);
  CHECK_FALSE(rc.infeasible);
  // Decoders at once: min(max-num-seqs 256, pool / blocks of a 100-token prompt) with
  // ceil(100 / 16) = 7 blocks each: the pool holds far more than 256.
  REQUIRE(s.num_blocks() / 7 > 256);
  CHECK(rc.batch_max == 256);
  // Each request: 49 decode steps (the first token comes from the prefill) over contexts
  // 100 .. 148: 49 x 100 + 48 x 49 / 2 = 6,076 keys, 124 per step. Prefill: 100 tokens
  // with 1 + 2 + ... + 100 = 5,050 causal pairs, 50.5 per token, in steps of
  // max_num_batched_tokens = max(max_model_len 8,192, 2,048) = 8,192 tokens.
  const StepTimeModel& stm = s.step_model();
  const double decode_s = 1000 * 49 * stm.step(0, 0, 256, 256 * 124.0).time_s / 256;
  const double prefill_s = 1000 * 100 * stm.step(8192, 8192 * 50.5, 0, 0).time_s / 8192;
  CHECK(rc.decode_busy_s == doctest::Approx(decode_s).epsilon(1e-9));
  CHECK(rc.prefill_busy_s == doctest::Approx(prefill_s).epsilon(1e-9));
  // Arrivals span 999/11 s at the workload's 11/s: at k x 11/s the engine passes only
  // while (999/11) / k + 2 s (the TTFT target: work still queued) >= busy.
  REQUIRE(decode_s + prefill_s > 2.0);
  const double ceiling = (1 + size::kCeilingSlack) * 11 * (999.0 / 11) / (decode_s + prefill_s - 2.0);
  CHECK(rc.max_rate_per_s == doctest::Approx(ceiling).epsilon(1e-9));
  // The simulator's own answer lies below it.
  sim::SimOptions so;
  so.requests = 1000;
  cluster::MaxRateOptions mo;
  mo.requests = 1000;
  const cluster::MaxRate mr = cluster::find_max_rate(s, w, so, mo);
  REQUIRE(mr.found);
  CHECK(mr.max_rate_per_s <= rc.max_rate_per_s);
}

TEST_CASE("the search's ceiling from the planner equals the one read from a built simulator") {
  // The search skips building a simulator per candidate; both routes must agree, also for
  // sliding-window layers (Gemma 3), int4 weights and an fp8 cache, and a tight pool.
  const size::ProbeRequests p = size::probe_requests(size_test::fixed_lengths(1000, ArrivalProcess::fixed), 0, 1000);
  ServingOptions awq;
  awq.quantization = WeightQuant::awq;
  awq.kv_cache_dtype = DType::fp8;
  ServingOptions tight;
  tight.gpu_memory_utilization = 0.25;
  for (const auto& m : {test::llama3_8b(), io::load_model("gemma-3-27b")})
    for (const auto& o : {ServingOptions{}, awq, tight}) {
      const GpuSpec g = io::load_gpu("h200");
      const auto a = size::rate_ceiling(sim::Simulator(m, g, o), sim::Scheduler::continuous, p);
      const auto b = size::rate_ceiling(m, g, o, sim::Scheduler::continuous, p);
      CHECK(a.max_rate_per_s == b.max_rate_per_s);
      CHECK(a.batch_max == b.batch_max);
      CHECK(a.rejected == b.rejected);
    }
}

TEST_CASE("a prefix-cached workload gets no prefill floor: chunked and static schedulers no finite ceiling") {
  const sim::Simulator s(test::llama3_8b(), test::h100(), ServingOptions{});
  size::ProbeRequests p = size::probe_requests(size_test::fixed_lengths(1000, ArrivalProcess::fixed), 0, 1000);
  CHECK(std::isinf(size::rate_ceiling(s, sim::Scheduler::chunked, p).max_rate_per_s));
  CHECK(std::isinf(size::rate_ceiling(s, sim::Scheduler::static_batch, p).max_rate_per_s));
  p.prefix_cached = true;
  const size::RateCeiling rc = size::rate_ceiling(s, sim::Scheduler::continuous, p);
  CHECK(rc.prefill_busy_s == 0);
  CHECK(rc.decode_busy_s > 0);
}

TEST_CASE("rejections fail a p99 at any rate once more than n - ceil(0.99 n) requests can never run") {
  // Llama-2-7B: max_position_embeddings 4,096, so a 5,000-token prompt is refused. Of
  // 1,000 requests, ceil(0.99 x 1,000) = 990 must be on time: 10 rejected still pass the
  // nearest-rank p99, 11 make it infinite.
  const sim::Simulator s(io::load_model("llama-2-7b"), test::h100(), ServingOptions{});
  REQUIRE(s.max_model_len() == 4096);
  const auto ten = size::rate_ceiling(s, sim::Scheduler::continuous, size::probe_requests(with_long_prompts(10), 0, 1000));
  CHECK(ten.rejected == 10);
  CHECK(ten.rejected_max_model_len == 10);
  CHECK_FALSE(ten.infeasible);
  const auto eleven =
      size::rate_ceiling(s, sim::Scheduler::continuous, size::probe_requests(with_long_prompts(11), 0, 1000));
  CHECK(eleven.rejected == 11);
  CHECK(eleven.infeasible);
  // The simulator agrees: with 11 it finds no rate at all.
  sim::SimOptions so;
  so.requests = 1000;
  cluster::MaxRateOptions mo;
  mo.requests = 1000;
  mo.max_runs = 3;
  CHECK_FALSE(cluster::find_max_rate(s, with_long_prompts(11), so, mo).found);
}

TEST_CASE("the bounded search recommends what the exhaustive search does, and ranks the options it keeps the same") {
  size::SearchSpace s;
  s.models = {io::load_model("llama-3-8b"), io::load_model("qwen3-8b")};
  s.gpus = {priced("h100-sxm", 3.0), priced("a100-80gb", 2.0), priced("l40s", 1.0)};
  s.tp = {1, 2};
  // AWQ changes quality: the recommendation's lossless alternative must survive too.
  s.weights = {WeightQuant::none, WeightQuant::fp8, WeightQuant::awq};
  s.kv = {{std::nullopt, KvQuant::raw}, {DType::fp8, KvQuant::raw}};
  Workload w = size_test::fixed_lengths(1000, ArrivalProcess::fixed);
  w.arrival.process = ArrivalProcess::poisson;
  w.arrival.rate_per_s = 30;  // more than one cheap replica carries: replica counts differ
  size::SizeOptions opt;
  opt.requests_per_probe = 1000;
  opt.rel_tolerance = 0.1;
  opt.detail_top = 2;
  opt.spread_seeds = 1;
  opt.threads = 2;
  opt.exhaustive = true;
  const size::SizeResult all = size::run_search(s, w, opt);
  opt.exhaustive = false;
  const size::SizeResult bounded = size::run_search(s, w, opt);
  CHECK(bounded.candidates == all.candidates);
  CHECK(bounded.pruned_by_bound > 0);
  CHECK(bounded.evaluated + bounded.pruned_by_bound == all.evaluated);
  REQUIRE(bounded.recommendations.size() == 2);
  REQUIRE(all.recommendations.size() == 2);
  for (size_t k = 0; k < 2; ++k) {
    const auto& a = all.recommendations[k];
    const auto& b = bounded.recommendations[k];
    CHECK(a.model == b.model);
    CHECK(a.candidate_index == b.candidate_index);
    CHECK(a.utilization == b.utilization);
    CHECK(a.replicas_n_plus_one == b.replicas_n_plus_one);
    CHECK(a.lossless.has_value() == b.lossless.has_value());
    if (a.lossless && b.lossless)
      CHECK(all.options[*a.lossless].candidate.index == bounded.options[*b.lossless].candidate.index);
    const auto& ao = all.options[a.option];
    const auto& bo = bounded.options[b.option];
    CHECK(ao.cost_per_hour_usd == bo.cost_per_hour_usd);
    CHECK(ao.eval.max_rate_per_s == bo.eval.max_rate_per_s);
  }
  // Every option meeting the SLO at or below the dearest recommendation (lossless ones
  // included) is kept, in the same order.
  double limit = 0;
  for (const auto& rec : all.recommendations)
    for (const auto i : {std::optional<size_t>(rec.option), rec.lossless})
      if (i) limit = std::max(limit, *all.options[*i].cost_per_hour_usd);
  std::vector<int64_t> a_rank, b_rank;
  for (const auto& o : all.options)
    if (o.meets_slo && *o.cost_per_hour_usd <= limit) a_rank.push_back(o.candidate.index);
  for (const auto& o : bounded.options)
    if (o.meets_slo && *o.cost_per_hour_usd <= limit) b_rank.push_back(o.candidate.index);
  CHECK(a_rank == b_rank);
  // No simulated max rate exceeds the ceiling its candidate was skipped against.
  for (const auto& o : all.options)
    if (o.meets_slo && o.rate_ceiling_per_s) CHECK(o.eval.max_rate_per_s <= *o.rate_ceiling_per_s);
  // Deterministic whatever the thread count, though which candidates run depends on timing.
  opt.threads = 1;
  CHECK(reports::size_json(size::run_search(s, w, opt)).dump() == reports::size_json(bounded).dump());
}
