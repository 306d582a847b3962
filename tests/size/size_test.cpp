// The sizing search (size/size.h): enumeration, pruning, pricing arithmetic, the Pareto
// frontier and determinism. Expected numbers are worked out by hand in the comments.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <set>

#include "io/config_io.h"
#include "reports/size_report.h"
#include "size/size.h"
#include "tests/fixtures.h"
#include "tests/size/workloads.h"

using namespace kvplan;
using size::Deployment;

namespace {

GpuSpec priced(const std::string& name, double price) {
  GpuSpec g = io::load_gpu(name);
  g.price_per_hour_usd = price;
  return g;
}

Deployment option(const std::string& model, int64_t model_index, double cost, double e2e, bool meets = true) {
  Deployment o;
  o.model = model;
  o.candidate.model = model_index;
  o.meets_slo = meets;
  o.cost_per_hour_usd = cost;
  o.operating.e2e_p99_s = e2e;
  return o;
}

}  // namespace

TEST_CASE("cost per hour is replicas x TP x DP x PP x price per GPU-hour") {
  const auto shape = kvplan::test::parallel_shape;
  // 3 replicas of TP 2 x PP 1 at $2.50: 6 GPUs x 2.50 = $15.00/h.
  CHECK(size::cost_per_hour(3, shape(2, 1, 1), 2.5) == doctest::Approx(15.0));
  // 1 replica of TP 4 x PP 2 at $3.35: 8 GPUs = $26.80/h.
  CHECK(size::cost_per_hour(1, shape(4, 2, 1), 3.35) == doctest::Approx(26.8));
  // TP 2 x DP 2: two attention ranks of 2 GPUs, 4 GPUs per replica; 2 replicas at $2 = $16/h.
  CHECK(size::cost_per_hour(2, shape(2, 1, 2), 2.0) == doctest::Approx(16.0));
}

TEST_CASE("cost per million output tokens divides the hourly cost by the tokens an hour brings") {
  // 11 req/s x 211 tokens x 3600 s = 8,355,600 tokens per hour; $15 / 8.3556 M = $1.7952 per M.
  CHECK(size::cost_per_million_output_tokens(15.0, 11.0, 211.0) == doctest::Approx(1.795204).epsilon(1e-6));
  // 1 req/s x 1000 tokens x 3600 = 3.6 M tokens/h; $3.60/h -> $1.00 per M.
  CHECK(size::cost_per_million_output_tokens(3.6, 1.0, 1000.0) == doctest::Approx(1.0));
}

TEST_CASE("replicas round the rate ratio up, and an exact multiple needs no extra replica") {
  CHECK(size::replicas_for(11.0, 5.5) == 2);   // exactly 2
  CHECK(size::replicas_for(11.0, 5.4) == 3);   // 2.04 -> 3
  CHECK(size::replicas_for(1.0, 20.0) == 1);   // one replica at least
  CHECK(size::replicas_for(10.0, 10.0) == 1);
  CHECK(size::replicas_for(0.3 * 3, 0.3) == 3);  // 0.9 / 0.3 = 3.0000000000000004 in doubles
  CHECK_THROWS_AS(size::replicas_for(1.0, 0.0), InputError);
}

TEST_CASE("the Pareto frontier keeps options no other option of the same model beats on cost and latency") {
  std::vector<Deployment> v = {
      option("m", 0, 1.0, 10.0),   // A: cheapest of the mid-latency ones -> frontier
      option("m", 0, 2.0, 5.0),    // B: frontier
      option("m", 0, 2.0, 8.0),    // C: B is as cheap and faster -> dominated
      option("m", 0, 3.0, 5.0),    // D: B is cheaper at the same latency -> dominated
      option("m", 0, 0.5, 20.0),   // E: cheapest of all -> frontier
      option("m", 0, 0.1, 1.0, false),  // F: misses the SLO: neither on it nor dominating
      option("n", 1, 9.0, 30.0),   // G: another model, alone on its own frontier
      option("m", 0, 1.0, 10.0),   // H: ties A exactly: neither dominates the other
  };
  size::mark_pareto(v);
  CHECK(v[0].pareto);
  CHECK(v[1].pareto);
  CHECK_FALSE(v[2].pareto);
  CHECK_FALSE(v[3].pareto);
  CHECK(v[4].pareto);
  CHECK_FALSE(v[5].pareto);
  CHECK(v[6].pareto);
  CHECK(v[7].pareto);
}

TEST_CASE("pruning names the first reason in order: weights, KV pool, decode step, prefill") {
  Plan p;
  p.context_tokens = 4096;
  p.memory.usable_bytes = 72'000'000'000;
  p.memory.weights_bytes = 80'000'000'000;
  const Slo slo{2.0, 0.1};
  auto r = size::prune_reason(p, slo);
  REQUIRE(r);
  CHECK(*r == "memory: weights 80.0 GB per GPU exceed the usable 72.0 GB");

  p.memory.weights_bytes = 16'000'000'000;
  p.memory.kv_budget_bytes = 250'000'000;
  p.capacity.max_concurrent_requests = 0;
  r = size::prune_reason(p, slo);
  REQUIRE(r);
  CHECK(*r == "memory: the KV pool (0.25 GB per GPU) holds no request of the p99 context (4096 tokens)");

  p.capacity.max_concurrent_requests = 3;
  p.decode_time.time_s = 0.125;
  r = size::prune_reason(p, slo);
  REQUIRE(r);
  CHECK(*r == "SLO: one decode step at batch 1 takes 125.0 ms > TPOT target 100.0 ms");

  p.decode_time.time_s = 0.02;
  p.prefill_time.time_s = 2.5;
  r = size::prune_reason(p, slo);
  REQUIRE(r);
  CHECK(*r == "SLO: prefill of the p99 prompt alone takes 2.50 s > TTFT target 2.00 s");

  p.prefill_time.time_s = 0.3;
  CHECK_FALSE(size::prune_reason(p, slo));
}

TEST_CASE("enumeration crosses GPUs, TP, weights and KV options in a fixed order") {
  size::SearchSpace s;
  s.models = {io::load_model("llama-3-8b")};
  s.gpus = {io::load_gpu("h100-sxm"), io::load_gpu("l40s")};
  s.tp = size::default_tp_options();
  s.weights = size::default_weight_options();
  s.kv = size::default_kv_options();
  const auto c = size::enumerate(s);
  // 2 GPUs x 4 TP x 3 weight formats x 4 KV formats.
  CHECK(c.size() == 2 * 4 * 3 * 4);
  CHECK(c[0].gpu == 0);
  CHECK(c[0].options.tp == 1);
  CHECK(c[0].options.quantization == WeightQuant::none);
  CHECK_FALSE(c[0].options.kv_cache_dtype.has_value());
  CHECK(c[1].options.kv_cache_dtype == DType::fp8);   // KV varies fastest
  CHECK(c[4].options.quantization == WeightQuant::fp8);
  CHECK(c[12].options.tp == 2);
  CHECK(c[48].gpu == 1);
  for (size_t i = 0; i < c.size(); ++i) CHECK(c[i].index == static_cast<int64_t>(i));
}

TEST_CASE("an empty override list keeps the base option's own value") {
  size::SearchSpace s;
  s.models = {io::load_model("llama-3-8b")};
  s.gpus = {io::load_gpu("h100-sxm")};
  ServingOptions base;
  base.tp = 2;
  base.quantization = WeightQuant::awq;
  s.base = {base};
  const auto c = size::enumerate(s);
  REQUIRE(c.size() == 1);
  CHECK(c[0].options.tp == 2);
  CHECK(c[0].options.quantization == WeightQuant::awq);
}

TEST_CASE("auto resolves per candidate's engine, and a scheduler listed twice is one candidate") {
  // vLLM 0.19 (V1) runs chunked prefill; --engine ideal keeps continuous (sim.h
  // resolve_scheduler). "auto,chunked" on vLLM is chunked twice: one candidate.
  size::SearchSpace s;
  s.models = {io::load_model("llama-3-8b")};
  s.gpus = {io::load_gpu("h100-sxm")};
  ServingOptions vllm;
  vllm.engine = Engine::vllm;
  s.base = {vllm, ServingOptions{}};
  s.schedulers = {sim::Scheduler::automatic, sim::Scheduler::chunked};
  const auto c = size::enumerate(s);
  REQUIRE(c.size() == 3);
  CHECK(c[0].scheduler == sim::Scheduler::chunked);     // vLLM: auto = chunked, chunked again skipped
  CHECK(c[1].scheduler == sim::Scheduler::continuous);  // ideal: auto
  CHECK(c[2].scheduler == sim::Scheduler::chunked);     // ideal: chunked
  for (size_t i = 0; i < c.size(); ++i) CHECK(c[i].index == static_cast<int64_t>(i));
}

TEST_CASE("the workload shape of fixed lengths is exact") {
  const auto s = size::workload_shape(size_test::fixed_lengths(), 0);
  CHECK(s.samples == 1000);
  CHECK(s.prompt_p99_tokens == 100);
  CHECK(s.context_p99_tokens == 150);
  CHECK(s.prompt_mean_tokens == doctest::Approx(100));
  CHECK(s.output_mean_tokens == doctest::Approx(50));
  CHECK(s.rate_per_s == doctest::Approx(11));
}

TEST_CASE("quality notes cite the published cost of int4 weights and low-bit KV, and none for fp8") {
  const ModelConfig m = io::load_model("llama-3-8b");
  ServingOptions o;
  CHECK(size::quality_note(o, m).empty());
  o.kv_cache_dtype = DType::fp8;
  o.quantization = WeightQuant::fp8;
  CHECK(size::quality_note(o, m).empty());
  o.quantization = WeightQuant::awq;
  CHECK(size::quality_note(o, m).find("3.32 -> 3.41") != std::string::npos);
  o.quantization = WeightQuant::none;
  o.kv_cache_dtype = DType::int2;
  o.kv_quant = KvQuant::kvquant;
  CHECK(size::quality_note(o, m).find("5.68 -> 6.01") != std::string::npos);
  o.kv_cache_dtype = DType::int4;
  CHECK(size::quality_note(o, m).find("5.68 -> 5.69") != std::string::npos);
}

TEST_CASE("a search with a hand-made evaluator prices replicas by hand and ranks by cost") {
  // Evaluator: one replica sustains 4 req/s per GPU of its TP group (TP 1: 4/s, TP 2: 8/s,
  // TP 4: 16/s). Workload 11 req/s: TP 1 needs ceil(11/4) = 3 replicas = 3 GPUs;
  // TP 2 needs ceil(11/8) = 2 replicas = 4 GPUs; TP 4 needs 1 replica = 4 GPUs.
  // At $2/GPU-hour: $6, $8, $8 per hour. Output 50 tokens x 11/s x 3600 = 1.98 M tokens/h.
  size::SearchSpace s;
  s.models = {io::load_model("llama-3-8b")};
  s.gpus = {priced("h100-sxm", 2.0)};
  s.tp = {4, 2, 1};
  size::SizeOptions opt;
  opt.threads = 2;
  std::atomic<int> calls{0};
  opt.evaluator = [&calls](const size::Candidate& c, const ModelConfig&, const GpuSpec&, const Workload&,
                           const size::WorkloadShape&) {
    ++calls;
    size::Evaluation e;
    e.found = true;
    e.max_rate_per_s = 4.0 * static_cast<double>(c.options.tp);
    e.binding = size::Binding::bandwidth;
    e.at_max.e2e_p99_s = 10.0 / static_cast<double>(c.options.tp);
    return e;
  };
  const auto r = size::run_search(s, size_test::fixed_lengths(), opt);
  CHECK(calls == 3);
  REQUIRE(r.options.size() == 3);
  CHECK(r.options[0].candidate.options.tp == 1);
  CHECK(r.options[0].replicas == 3);
  CHECK(r.options[0].gpus_total == 3);
  CHECK(*r.options[0].cost_per_hour_usd == doctest::Approx(6.0));
  CHECK(*r.options[0].cost_per_million_output_tokens_usd == doctest::Approx(6.0 / 1.98));
  // $8 each; the tie is broken by p99 e2e latency: TP 4 (2.5 s) before TP 2 (5 s).
  CHECK(r.options[1].candidate.options.tp == 4);
  CHECK(r.options[1].replicas == 1);
  CHECK(*r.options[1].cost_per_hour_usd == doctest::Approx(8.0));
  CHECK(r.options[2].candidate.options.tp == 2);
  CHECK(r.options[2].replicas == 2);
  CHECK(*r.options[2].cost_per_hour_usd == doctest::Approx(8.0));
  // Frontier: TP 1 ($6, 10 s) and TP 4 ($8, 2.5 s); TP 2 ($8, 5 s) is dominated by TP 4.
  CHECK(r.options[0].pareto);
  CHECK(r.options[1].pareto);
  CHECK_FALSE(r.options[2].pareto);
}

TEST_CASE("pruned candidates stay in the result with their reason, after the evaluated ones") {
  // Llama-2-70B in bf16 (~69.0 B parameters x 2 B = ~138 GB of weights). Usable memory is
  // 90 % of what CUDA reports: H200 150.11 GB -> 135.1 GB; L4 23.69 GB -> 21.3 GB.
  // TP 1 fits on neither; TP 2 (~69 GB per GPU) fits on the H200 only; TP 3 does not
  // divide the 64 heads. Only H200 TP 2 reaches the evaluator.
  size::SearchSpace s;
  s.models = {io::load_model("llama-2-70b")};
  s.gpus = {io::load_gpu("l4"), io::load_gpu("h200")};
  s.tp = {1, 2, 3};
  s.weights = {WeightQuant::none};
  size::SizeOptions opt;
  opt.threads = 1;
  opt.evaluator = size::planner_evaluate;
  const auto r = size::run_search(s, size_test::fixed_lengths(), opt);
  REQUIRE(r.options.size() == 6);
  CHECK(r.candidates == 6);
  CHECK(r.evaluated == 1);
  int64_t weights = 0, invalid = 0;
  for (const auto& o : r.options) {
    if (!o.pruned) continue;
    if (o.pruned->rfind("memory: weights", 0) == 0) ++weights;
    if (o.pruned->rfind("invalid:", 0) == 0 && o.pruned->find("--tensor-parallel-size") != std::string::npos) ++invalid;
  }
  CHECK(weights == 3);
  CHECK(invalid == 2);
  CHECK_FALSE(r.options.front().pruned.has_value());
  CHECK(r.options.front().gpu == "h200");
  CHECK(r.options.front().candidate.options.tp == 2);
  CHECK(r.options.back().pruned.has_value());
}

TEST_CASE("the search gives identical JSON on 1 and 2 threads") {
  size::SearchSpace s;
  s.models = {io::load_model("llama-3-8b")};
  s.gpus = {priced("h100-sxm", 3.0), priced("l40s", 1.0)};
  s.tp = {1, 2};
  s.weights = {WeightQuant::none, WeightQuant::fp8};
  s.kv = {{std::nullopt, KvQuant::raw}};
  size::SizeOptions opt;
  opt.requests_per_probe = 1000;
  opt.rel_tolerance = 0.1;
  opt.detail_top = 2;
  opt.threads = 1;
  const auto one = reports::size_json(size::run_search(s, size_test::fixed_lengths(), opt)).dump();
  opt.threads = 2;
  const auto two = reports::size_json(size::run_search(s, size_test::fixed_lengths(), opt)).dump();
  CHECK(one == two);
  const auto j = nlohmann::json::parse(one);
  CHECK(j["options"].size() == 8);
  CHECK(j["options"][0]["meets_slo"] == true);
  // The recommended option's max rate comes with its range over 3 seeds,
  // which contains the rate the search found with seed 0.
  const auto& spread = j["recommendations"][0]["max_rate_spread"];
  CHECK(spread["seeds"] == 3);
  const double found = j["options"][0]["max_rate_per_s"].get<double>();
  CHECK(spread["min_per_s"].get<double>() <= found);
  CHECK(spread["max_per_s"].get<double>() >= found);
  CHECK(spread["max_per_s"].get<double>() > spread["min_per_s"].get<double>());
}

TEST_CASE("at equal cost the option without a quality cost ranks first, whatever its latency") {
  // Both formats sustain 20 req/s on one GPU: 1 replica, $2/h each. AWQ is given the lower
  // latency, yet bf16 weights rank first: equal price, no quality cost.
  size::SearchSpace s;
  s.models = {io::load_model("llama-3-8b")};
  s.gpus = {priced("h100-sxm", 2.0)};
  s.weights = {WeightQuant::awq, WeightQuant::none};
  size::SizeOptions opt;
  opt.threads = 1;
  opt.evaluator = [](const size::Candidate& c, const ModelConfig&, const GpuSpec&, const Workload&,
                     const size::WorkloadShape&) {
    size::Evaluation e;
    e.found = true;
    e.max_rate_per_s = 20;
    e.at_max.e2e_p99_s = c.options.quantization == WeightQuant::awq ? 1.0 : 2.0;
    return e;
  };
  const auto r = size::run_search(s, size_test::fixed_lengths(), opt);
  REQUIRE(r.options.size() == 2);
  CHECK(r.options[0].candidate.options.quantization == WeightQuant::none);
  CHECK_FALSE(r.options[0].changes_quality);
  CHECK(r.options[1].changes_quality);
  CHECK(*r.options[0].cost_per_hour_usd == doctest::Approx(2.0));
}

// ---- what-ifs, the recommendation's numbers, rows of every model

namespace {
//! Every candidate sustains `rate` per replica, binding on max-num-seqs.
size::Evaluator constant_rate(double rate) {
  return [rate](const size::Candidate&, const ModelConfig&, const GpuSpec&, const Workload&,
                const size::WorkloadShape&) {
    size::Evaluation e;
    e.found = true;
    e.max_rate_per_s = rate;
    e.binding = size::Binding::engine_limit;
    return e;
  };
}
}  // namespace

TEST_CASE("size searches only what an engine runs unless --what-if") {
  size::SearchSpace s;
  s.models = {io::load_model("llama-3-8b")};
  s.gpus = {priced("h100-sxm", 2.0)};
  s.tp = {1};
  s.weights = {WeightQuant::none};
  s.kv = size::default_kv_options();  // auto, fp8, int4 kvquant, int2 kvquant
  size::SizeOptions opt;
  opt.threads = 1;
  opt.evaluator = constant_rate(20);
  const auto r = size::run_search(s, size_test::fixed_lengths(), opt);
  CHECK(r.candidates == 2);
  CHECK(r.what_if_skipped == 2);
  for (const auto& o : r.options) CHECK(dtype_bits(o.candidate.options.kv_dtype(s.models[0])) >= 8);
  s.what_if = true;
  const auto w = size::run_search(s, size_test::fixed_lengths(), opt);
  CHECK(w.candidates == 4);
  CHECK(w.what_if_skipped == 0);
  int64_t marked = 0;
  for (const auto& o : w.options) marked += o.what_if.empty() ? 0 : 1;
  CHECK(marked == 2);
}

TEST_CASE("spares for failures: N replicas for the rate plus the k that keep N up for the asked share") {
  size::SearchSpace s;
  s.models = {io::load_model("llama-3-8b")};
  s.gpus = {priced("h100-sxm", 2.0)};
  s.tp = {1};
  s.weights = {WeightQuant::none};
  s.kv = {{std::nullopt, KvQuant::raw}};
  size::SizeOptions opt;
  opt.threads = 1;
  opt.evaluator = constant_rate(5.0);
  // 1 GPU x 3.6869 failures a year x 24 h / 8,760 h = 1/99: each replica down 1 % of the time.
  size::FailureOptions f;
  f.availability = 0.999;
  f.repair_hours = 24;
  f.gpu_failures_per_year = 8760.0 / (99 * 24);
  opt.failures = f;
  const auto r = size::run_search(s, size_test::fixed_lengths(), opt);
  REQUIRE(r.recommendations.size() == 1);
  REQUIRE(r.recommendations[0].failures);
  const size::FailurePlan& p = *r.recommendations[0].failures;
  // 11 requests/s at 5 per replica: N = 3; at 1 % down each, k = 1 keeps 3 up 99.9408 % of
  // the time (tests/size/failures_test.cpp); 4 replicas at $2/h; one down: 11 / 3 each.
  CHECK(p.replica_unavailability == doctest::Approx(0.01));
  CHECK(p.replicas_needed == 3);
  CHECK(p.spares == 1);
  CHECK(p.availability == doctest::Approx(0.99940797).epsilon(1e-9));
  CHECK(*p.cost_per_hour_usd == doctest::Approx(8.0));
  CHECK(p.one_down_share_per_s == doctest::Approx(11.0 / 3));
  CHECK_FALSE(p.one_down);  // not simulated with a fake evaluator
  const std::string text = reports::size_text(r, reports::TextFormat::table);
  CHECK(text.find("Failures (99.9 % of the time asked): a replica of 1 GPU is down 1 % of the time") != std::string::npos);
  CHECK(text.find("3 + 1 replicas ($8.00/h) keep 3 up all but 0.059 % of the time (5.19 h a year); with one down each "
                  "other replica carries 3.67 requests/s.") != std::string::npos);
}

TEST_CASE("the recommendation: costs per input token and request, headroom, N+1, a default max-num-seqs (item 10)") {
  size::SearchSpace s;
  s.models = {io::load_model("llama-3-8b")};
  s.gpus = {priced("h100-sxm", 2.0)};
  s.tp = {1};
  s.weights = {WeightQuant::none};
  s.kv = {{std::nullopt, KvQuant::raw}};
  size::SizeOptions opt;
  opt.threads = 1;
  opt.evaluator = constant_rate(5.0);
  const auto r = size::run_search(s, size_test::fixed_lengths(), opt);
  REQUIRE(r.recommendations.size() == 1);
  const auto& rec = r.recommendations[0];
  const Deployment& o = r.options[rec.option];
  // 11 requests/s at 5 per replica: ceil(2.2) = 3 replicas, $6/h; each replica at
  // 11 / 15 = 73.3 %; N+1 = 4 replicas, $8/h.
  CHECK(o.replicas == 3);
  CHECK(*o.cost_per_hour_usd == doctest::Approx(6.0));
  CHECK(rec.utilization == doctest::Approx(11.0 / 15.0));
  CHECK(rec.replicas_n_plus_one == 4);
  CHECK(*rec.cost_per_hour_n_plus_one_usd == doctest::Approx(8.0));
  // $6/h over 11 x 3600 = 39,600 requests/h: $0.000151515 per request; over 3.96 M
  // prompt tokens/h (100 each): $1.5152 per million input tokens; 1.98 M output
  // tokens/h (50 each): $3.0303 per million.
  CHECK(*o.cost_per_request_usd == doctest::Approx(6.0 / 39600.0));
  CHECK(*o.cost_per_million_input_tokens_usd == doctest::Approx(6.0 / 3.96));
  CHECK(*o.cost_per_million_output_tokens_usd == doctest::Approx(6.0 / 1.98));
  // max-num-seqs binds and the user never set it: the report must say so.
  CHECK(rec.binds_on_default_max_num_seqs);
  const std::string text = reports::size_text(r, reports::TextFormat::table);
  CHECK(text.find("the engine default, not set by you") != std::string::npos);
  CHECK(text.find("max-num-seqs (default)") != std::string::npos);  // the table's "binds" cell too
  CHECK(text.find("$1.52 per million input tokens") != std::string::npos);
  CHECK(text.find("$0.000152 per request") != std::string::npos);
  CHECK(text.find("73 % of its max rate (27 % headroom)") != std::string::npos);
  CHECK(text.find("N+1 = 4 replicas ($8.00/h)") != std::string::npos);
  s.base.front().max_num_seqs_given = true;
  CHECK_FALSE(size::run_search(s, size_test::fixed_lengths(), opt).recommendations[0].binds_on_default_max_num_seqs);
}

TEST_CASE("with two models the table shows each model's best, even past the row limit (item 10)") {
  size::SearchSpace s;
  s.models = {io::load_model("llama-3-8b"), io::load_model("llama-2-7b")};
  s.gpus = {priced("h100-sxm", 2.0), priced("h200", 3.0), priced("l40s", 1.0)};
  s.tp = {1, 2, 4};
  s.weights = {WeightQuant::none, WeightQuant::fp8};
  s.kv = {{std::nullopt, KvQuant::raw}, {DType::fp8, KvQuant::raw}};
  size::SizeOptions opt;
  opt.threads = 1;
  // llama-2-7b sustains less, so all of llama-3-8b's options are cheaper than its best.
  opt.evaluator = [](const size::Candidate& c, const ModelConfig& m, const GpuSpec&, const Workload&,
                     const size::WorkloadShape&) {
    size::Evaluation e;
    e.found = true;
    e.max_rate_per_s = (m.name == "llama-2-7b" ? 0.5 : 20.0) * static_cast<double>(c.options.tp);
    return e;
  };
  const auto r = size::run_search(s, size_test::fixed_lengths(), opt);
  REQUIRE(r.recommendations.size() == 2);
  CHECK(r.recommendations[1].model == "llama-2-7b");
  CHECK(r.recommendations[1].option >= 10);  // ranked after every llama-3-8b option
  const auto t = reports::size_table(r, 10);
  REQUIRE(t.rows.size() == 10);
  int64_t seven = 0;
  for (const auto& row : t.rows) seven += row[1] == "llama-2-7b" ? 1 : 0;
  CHECK(seven == 1);
  CHECK(t.rows.back()[0] == std::to_string(r.recommendations[1].option + 1));  // its overall rank
}

TEST_CASE("a model whose requests are rejected gets no recommendation, and the reason") {
  size::SearchSpace s;
  s.models = {io::load_model("llama-2-7b")};
  s.gpus = {priced("h100-sxm", 2.0)};
  s.tp = {1};
  s.weights = {WeightQuant::none};
  s.kv = {{std::nullopt, KvQuant::raw}};
  size::SizeOptions opt;
  opt.threads = 1;
  // As the simulator reports it: 35 of 1,000 requests past max_model_len, SLO missed.
  opt.evaluator = [](const size::Candidate&, const ModelConfig&, const GpuSpec&, const Workload&,
                     const size::WorkloadShape&) {
    size::Evaluation e;
    e.found = false;
    e.binding = size::Binding::slo;
    e.rejected_at_max = e.rejected_max_model_len_at_max = 35;
    e.requests_at_max = 1000;
    return e;
  };
  const auto r = size::run_search(s, size_test::fixed_lengths(), opt);
  CHECK(r.recommendations.empty());
  REQUIRE(r.unmet.size() == 1);
  CHECK(r.unmet[0].rejections_decide());  // 35 > 1 % of 1,000
  const std::string text = reports::size_text(r, reports::TextFormat::table);
  CHECK(text.find("No option for llama-2-7b meets the SLO: 35 of 1,000 simulated requests have prompts that reach its "
                  "max_model_len") != std::string::npos);
  CHECK(text.find("Recommended for") == std::string::npos);
}

TEST_CASE("--dcp auto: a workload whose requests fit only with the KV sharded is served at TP 8 DCP 8") {
  // The one-KV-head Llama-3.1-8B (tests/fixtures.h): 16,384 B per token per GPU at TP 8,
  // which DCP may shard over 2, 4 or 8 of the GPUs.
  const ModelConfig m = test::llama31_8b_mqa();
  GpuSpec g = test::h100();
  g.price_per_hour_usd = 2.0;
  ServingOptions o;
  o.tp = 8;
  // A KV pool of 1 GB per GPU: the memory the weights, activations and reserve take, + 1e9 B.
  const MemoryBudget full = memory_budget(m, g, o);
  o.gpu_memory_utilization =
      static_cast<double>(full.weights_bytes + full.activation_bytes + full.reserve_bytes + 1'000'000'000) /
      static_cast<double>(g.memory_bytes);
  const int64_t blocks = memory_budget(m, g, o).kv_budget_bytes / (16 * 16384);
  // ~1e9 / 262,144 B = ~3,814 pages per GPU: ~61,000 tokens at DCP 1, ~122,000 at DCP 2,
  // ~244,000 at DCP 4, ~488,000 at DCP 8. Requests of 100,000 + 2,000 tokens fit at DCP 2
  // (1 at a time), 4 (2) and 8 (4), never at DCP 1.
  REQUIRE(blocks * 16 < 102000);
  REQUIRE(blocks * 32 / 102000 == 1);
  REQUIRE(blocks * 128 / 102000 == 4);
  Workload w = size_test::fixed_lengths(200);
  w.prompt_tokens.value = 100000;
  w.output_tokens.value = 2000;
  w.arrival.rate_per_s = 0.3;
  w.slo = {10.0, 0.1};
  size::SearchSpace s;
  s.models = {m};
  s.gpus = {g};
  s.base = {o};
  s.dcp_auto = true;
  const auto c = size::enumerate(s);
  REQUIRE(c.size() == 4);
  for (size_t i = 0; i < c.size(); ++i) CHECK(c[i].options.dcp == std::vector<int64_t>{1, 2, 4, 8}[i]);
  size::SizeOptions opt;
  opt.threads = 1;
  opt.evaluator = size::planner_evaluate;
  const auto r = size::run_search(s, w, opt);
  REQUIRE(r.options.size() == 4);
  // DCP 1 holds no request of the p99 context; DCP 8 holds the most and ranks first.
  const auto at = [&r](int64_t dcp) {
    return *std::find_if(r.options.begin(), r.options.end(),
                         [dcp](const Deployment& d) { return d.candidate.options.dcp == dcp; });
  };
  REQUIRE(at(1).pruned.has_value());
  CHECK(at(1).pruned->find("holds no request of the p99 context") != std::string::npos);
  CHECK(at(8).plan.capacity.max_concurrent_requests == 4);
  CHECK(at(2).plan.capacity.max_concurrent_requests == 1);
  // The pool binds: the more requests it holds, the more decode at once, so the rate one
  // replica sustains grows with DCP. But not as the pool does (1 : 2 : 4): DCP shards the
  // KV, not the prefill, and each 100,000-token prefill takes the replica's time alone.
  // By hand, a floor on that time: Llama-3.1-8B (32 layers, 32 heads of 128, MLP 4,096 x
  // 14,336 gated) attends 100,000 x 100,001 / 2 = 5.00005e9 causal pairs, each 2 x 128
  // (QK) + 2 x 128 (PV) FLOPs x 32 heads x 32 layers = 524,288: 2.6215e15 FLOPs; the MLP
  // adds 3 x 4,096 x 14,336 x 2 x 32 = 1.1275e10 a token, 1.1275e15. 3.749e15 FLOPs over
  // 8 GPUs at the bf16 datasheet peak, 8 x 989.4e12 = 7.915e15 FLOP/s, take >= 0.4737 s,
  // so no replica sustains more than 1 / 0.4737 = 2.111 requests/s.
  CHECK(at(2).eval.max_rate_per_s < at(4).eval.max_rate_per_s);
  CHECK(at(4).eval.max_rate_per_s < at(8).eval.max_rate_per_s);
  CHECK(at(8).eval.max_rate_per_s < 4 * at(2).eval.max_rate_per_s);
  for (const int64_t dcp : {2, 4, 8}) CHECK(at(dcp).eval.max_rate_per_s <= 2.111);
  // 0.3 requests/s: DCP 8 (four at a time) needs one replica, DCP 2 (one at a time) more.
  CHECK(at(2).replicas > 1);
  CHECK(at(8).replicas == 1);
  REQUIRE(r.options.front().meets_slo);
  CHECK(r.options.front().candidate.options.dcp == 8);
  CHECK(reports::option_label(r.options.front()).find("of TP 8, DCP 8)") != std::string::npos);
  CHECK(reports::size_json(r)["options"][0]["dcp"] == 8);
}

TEST_CASE("planner evaluator: a replica prefills one 120,000-token prompt at a time (issue 28)") {
  // docs/long-context.md's DCP example: DeepSeek-V3 (fp8 weights) on 8 H200s, TP 8, DCP 8,
  // vLLM, 120,000-token prompts and 500-token summaries, TTFT 60 s, TPOT 100 ms. Its pool
  // holds 42 such requests, and the evaluator once ran their 42 prefills side by side:
  // 1.26 requests/s, where the simulator sustains 0.06.
  // By hand, a floor on one prompt's prefill (configs/models/deepseek-v3.yaml): MLA
  // decompressed for prefill attends 120,000 x 120,001 / 2 = 7.20006e9 causal pairs, each
  // (2 x 192 QK + 2 x 128 PV) x 128 heads x 61 layers = 4,997,120 FLOPs: 3.59796e16. The
  // MLP: 3 dense layers of 3 x 7,168 x 18,432 x 2 = 7.927e8 FLOPs a token each, and 58 MoE
  // layers of 9 experts (8 routed + 1 shared) x 3 x 7,168 x 2,048 x 2 = 7.927e8 each:
  // 61 x 7.927e8 = 4.8355e10 a token, 5.8026e15 in all. 4.1782e16 FLOPs over 8 GPUs at
  // the fastest datasheet peak (fp8, 1,978.9e12 FLOP/s) take at least 2.639 s, so one
  // replica sustains at most 1 / 2.639 = 0.379 requests/s.
  ServingOptions o;
  o.engine = Engine::vllm;
  o.dcp = 8;
  size::SearchSpace s;
  s.models = {io::load_model("deepseek-v3")};
  s.gpus = {io::load_gpu("h200")};
  s.base = {o};
  s.tp = {8};
  s.weights = {WeightQuant::fp8};
  s.kv = {size::default_kv_options().front()};
  Workload w = size_test::fixed_lengths(200);
  w.prompt_tokens.value = 120000;
  w.output_tokens.value = 500;
  w.arrival.rate_per_s = 1;
  w.slo = {60.0, 0.1};
  size::SizeOptions opt;
  opt.threads = 1;
  opt.evaluator = size::planner_evaluate;
  const auto r = size::run_search(s, w, opt);
  REQUIRE(r.options.size() == 1);
  const Deployment& d = r.options.front();
  REQUIRE_FALSE(d.pruned);
  CHECK(d.plan.capacity.max_concurrent_requests == 42);
  REQUIRE(d.eval.found);
  CHECK(d.eval.max_rate_per_s > 0);
  CHECK(d.eval.max_rate_per_s <= 0.379);
  // The TTFT it states is at least that floor too.
  CHECK(d.eval.at_max.ttft_p99_s >= 2.639);
}
