// The disaggregated search (size/disagg_search.h): ratio parsing, the pools' price, and
// closed forms of the KV transfer worked by hand from the model's shapes and the link
// figures: a link so slow that disaggregation cannot meet the TTFT target (aggregated
// wins), and the catalog H100's NVLink within a node.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "io/config_io.h"
#include "size/disagg_search.h"
#include "size/size.h"
#include "tests/size/workloads.h"

using namespace kvplan;
using size::DisaggRatio;

namespace {

//! Llama-3-8B, bf16 weights and KV, TP 1, on `gpu` only.
size::SearchSpace one_layout_space(const GpuSpec& gpu) {
  size::SearchSpace s;
  s.models = {io::load_model("llama-3-8b")};
  s.gpus = {gpu};
  s.tp = {1};
  s.weights = {WeightQuant::none};
  s.kv = {size::KvOption{}};
  return s;
}

struct Searched {
  size::SizeResult agg;
  size::DisaggSearchResult dis;
};

Searched search(const GpuSpec& gpu, bool prune = false) {
  const auto space = one_layout_space(gpu);
  const auto w = size_test::fixed_lengths();
  size::SizeOptions so;
  so.threads = 1;
  so.requests_per_probe = 1000;
  so.spread_seeds = 1;
  so.detail_top = 0;
  Searched r;
  r.agg = size::run_search(space, w, so);
  size::DisaggSearchOptions d;
  d.ratios = {{1, 1}};
  d.threads = 1;
  d.requests_per_probe = 1000;
  d.prune = prune;
  r.dis = size::run_disagg_search(space, r.agg, w, d);
  return r;
}

// Llama-3-8B keeps K and V for 32 layers x 8 KV heads x 128 dims x 2 bytes (bf16):
// 131,072 bytes per token; a 100-token prompt moves 13,107,200 bytes.
constexpr double kPromptKvBytes = 100.0 * 2 * 32 * 8 * 128 * 2;

}  // namespace

TEST_CASE("xPyD ratios parse with both pools of at least one instance") {
  const auto r = size::parse_disagg_ratio("2P3D");
  REQUIRE(r);
  CHECK(r->prefill == 2);
  CHECK(r->decode == 3);
  CHECK(size::parse_disagg_ratio("1p12d")->decode == 12);
  CHECK(size::to_string(DisaggRatio{1, 2}) == "1P2D");
  for (const char* bad : {"0P1D", "1P0D", "P1D", "1P2", "1x2", "1PD", "-1P2D", "1P2DD", ""})
    CHECK_MESSAGE(!size::parse_disagg_ratio(bad), bad);
}

TEST_CASE("a disaggregated unit costs its prefill GPUs plus its decode GPUs, times the units") {
  GpuSpec p, d;
  p.price_per_hour_usd = 4.0;
  d.price_per_hour_usd = 2.0;
  ServingOptions po, dopt;
  po.tp = 2;
  dopt.tp = 1;
  // 2 units of 1P2D: 2 x (1 x 2 GPUs x $4 + 2 x 1 GPU x $2) = 2 x (8 + 4) = $24/h.
  CHECK(*size::disagg_cost_per_hour(2, {1, 2}, po, p, dopt, d) == doctest::Approx(24.0));
  // 1 unit of 2P3D with PP 2 on decode: 2 x 2 x $4 + 3 x 2 x $2 = 16 + 12 = $28/h.
  dopt.pp = 2;
  CHECK(*size::disagg_cost_per_hour(1, {2, 3}, po, p, dopt, d) == doctest::Approx(28.0));
  d.price_per_hour_usd.reset();
  CHECK_FALSE(size::disagg_cost_per_hour(1, {1, 1}, po, p, dopt, d).has_value());
}

TEST_CASE("a link slower than the TTFT target makes disaggregation lose to the aggregated layout") {
  // Only a 1 MB/s Ethernet between instances, no latency: a 100-token prompt's KV takes
  // 13,107,200 B / 1e6 B/s = 13.1072 s to move, more than the 2 s TTFT target at any
  // rate, while one aggregated H100 serves 100-token prompts in milliseconds.
  GpuSpec g = io::load_gpu("h100-sxm");
  g.price_per_hour_usd = 3.0;
  KvLinks slow;
  slow.gpus_per_node = 8;
  slow.ethernet = KvLink{1e6, 0.0};
  g.kv_links = slow;
  const Searched r = search(g);
  REQUIRE(r.dis.options.size() == 1);
  const auto& o = r.dis.options[0];
  CHECK(o.link == "ethernet");
  CHECK(o.transfer_mean_prompt_s == doctest::Approx(kPromptKvBytes / 1e6));
  CHECK_FALSE(o.found);
  CHECK(o.ttft_p99_s >= kPromptKvBytes / 1e6);
  REQUIRE(r.dis.verdicts.size() == 1);
  CHECK(r.dis.verdicts[0].winner == "aggregated");
  CHECK(r.dis.verdicts[0].why.find("KV transfer over ethernet") != std::string::npos);
}

TEST_CASE("within one node the KV crosses NVLink, and the layout is priced per GPU of both pools") {
  // 1P1D of H100 SXM TP 1: 2 GPUs fit a node of 8, so NVLink: 14.1 us + 13,107,200 B /
  // 450e9 B/s = 14.1 us + 29.127 us = 43.23 us (configs/gpus/h100-sxm.yaml kv_links).
  GpuSpec g = io::load_gpu("h100-sxm");
  g.price_per_hour_usd = 3.0;
  const Searched r = search(g);
  REQUIRE(r.dis.options.size() == 1);
  const auto& o = r.dis.options[0];
  CHECK(o.link == "nvlink");
  CHECK(o.transfer_mean_prompt_s == doctest::Approx(14.1e-6 + kPromptKvBytes / 450e9));
  REQUIRE(o.found);
  // units = ceil(11 / max rate); each unit is 1 + 1 GPUs at $3.
  CHECK(o.units == static_cast<int64_t>(std::ceil(11.0 / o.max_rate_per_s)));
  CHECK(o.gpus_total == 2 * o.units);
  CHECK(*o.cost_per_hour_usd == doctest::Approx(6.0 * static_cast<double>(o.units)));
  REQUIRE(r.dis.verdicts.size() == 1);
  CHECK(r.dis.verdicts[0].winner != "none");
}

TEST_CASE("a layout whose one unit costs at least the aggregated answer is not simulated") {
  // Llama-3-8B at 11 requests/s of 100-token prompts: one H100 TP 1 at $3/h carries it
  // (a decode step of a few ms, TPOT target 100 ms), so the aggregated answer costs $3/h
  // or $6/h with two replicas; a 1P1D unit is 2 GPUs = $6/h, so it cannot win.
  GpuSpec g = io::load_gpu("h100-sxm");
  g.price_per_hour_usd = 3.0;
  const Searched r = search(g, true);
  REQUIRE(r.agg.recommendations.size() == 1);
  const double agg_cost = *r.agg.options[r.agg.recommendations[0].option].cost_per_hour_usd;
  REQUIRE(r.dis.options.size() == 1);
  const auto& o = r.dis.options[0];
  REQUIRE(agg_cost <= 6.0);
  CHECK(o.pruned.has_value());
  CHECK(r.dis.simulated == 0);
  CHECK_FALSE(o.found);
  CHECK(r.dis.verdicts[0].winner == "aggregated");
  CHECK(r.dis.verdicts[0].why.find("1 layouts were not simulated") != std::string::npos);
}

TEST_CASE("a ratio below 1P1D is refused naming --disagg") {
  const auto space = one_layout_space(io::load_gpu("h100-sxm"));
  size::SizeResult agg;
  size::DisaggSearchOptions d;
  d.ratios = {{0, 1}};
  try {
    size::run_disagg_search(space, agg, size_test::fixed_lengths(), d);
    FAIL("no InputError");
  } catch (const InputError& e) {
    CHECK(e.key() == "--disagg");
  }
  d.ratios.clear();
  CHECK_THROWS_AS(size::run_disagg_search(space, agg, size_test::fixed_lengths(), d), InputError);
}
