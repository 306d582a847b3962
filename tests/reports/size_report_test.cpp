// The size reports (reports/size_report.h) and the HTML/SVG blocks (reports/html.h), on a
// result written by hand: no search runs here.
#include <doctest/doctest.h>

// GCC 12 at -O3 (Release) warns falsely that the short strings assigned to a hand-built
// size::Deployment may be used uninitialized (its small-string copy, inlined); the options are
// built in this file, so the pragma covers the whole file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <nlohmann/json.hpp>

#include "reports/html.h"
#include "reports/layout.h"
#include "reports/size_disagg_report.h"
#include "reports/size_report.h"
#include "reports/table.h"

using namespace kvplan;

namespace {

size::Deployment meeting_option(const std::string& gpu, int64_t tp, double cost, bool quality) {
  size::Deployment o;
  o.model = "llama-3-8b";
  o.gpu = gpu;
  o.candidate.options.tp = tp;
  o.candidate.options.quantization = quality ? WeightQuant::awq : WeightQuant::none;
  o.plan_valid = true;
  o.plan.weight_dtype = DType::bf16;
  o.plan.kv_dtype = DType::bf16;
  o.plan.memory = {80'000'000'000, 72'000'000'000, 16'000'000'000, 2'000'000'000, 1'000'000'000, 53'000'000'000, ""};
  o.eval.found = true;
  o.eval.max_rate_per_s = 6.0;
  o.eval.binding = size::Binding::bandwidth;
  o.meets_slo = true;
  o.replicas = 2;
  o.gpus_total = 2 * tp;
  o.cost_per_hour_usd = cost;
  o.cost_per_million_output_tokens_usd = cost / 2.0;
  o.operating = {5.5, 5.5, 1100, 0.4, 0.05, 12.0, true};
  o.pareto = true;
  o.changes_quality = quality;
  o.quality = quality ? "weights int4 (AWQ g128): Llama-2-70B wikitext-2 ppl 3.32 -> 3.41" : "";
  o.capacity_curve = {{512, 800}, {1024, 400}, {2048, 200}, {4096, 100}, {8192, 50}};
  for (const double f : {0.5, 1.0, 1.25})
    o.load_curve.push_back({6 * f, 6 * f, 1200 * f, 0.3 * f * f, 0.04 * f, 10 * f, f <= 1.0});
  return o;
}

size::SizeResult result() {
  size::SizeResult r;
  r.workload.name = "chat <test>";
  r.workload.slo = {2.0, 0.1};
  r.shape = {1000, 7000, 7088, 1150, 210, 11.0};
  r.candidates = 3;
  r.evaluated = 2;
  r.requests_per_probe = 2000;
  r.engine = "ideal";
  r.options.push_back(meeting_option("l40s", 1, 2.66, true));
  r.options.push_back(meeting_option("h100-sxm", 1, 6.70, false));
  size::Deployment pruned;
  pruned.model = "llama-3-8b";
  pruned.gpu = "l4";
  pruned.pruned = "memory: weights 16.1 GB per GPU exceed the usable 15.0 GB";
  r.options.push_back(pruned);
  size::recommend(r);  // the decision lives in size/; reports render it
  return r;
}

}  // namespace

TEST_CASE("html escape replaces the five markup characters") {
  CHECK(reports::html::escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST_CASE("nice ticks step by 1, 2 or 5 times a power of ten") {
  CHECK(reports::html::nice_ticks(0, 10, 5) == std::vector<double>{0, 2, 4, 6, 8, 10});
  CHECK(reports::html::nice_ticks(0, 1, 5) == std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1});
  CHECK(reports::html::nice_ticks(0, 70, 5) == std::vector<double>{0, 20, 40, 60});
  CHECK(reports::html::tick_label(1500) == "1.5k");
  CHECK(reports::html::tick_label(0.25) == "0.25");
  CHECK(reports::html::tick_label(40) == "40");
}

TEST_CASE("the size JSON follows the kvplan.size/1 contract, best first, pruned last") {
  const auto j = reports::size_json(result());
  CHECK(j["schema"] == "kvplan.size/1");
  REQUIRE(j["options"].size() == 3);
  for (const char* key : {"model", "gpu", "gpus", "tp", "pp", "replicas", "kv_dtype", "kv_quant", "weight_dtype",
                          "max_rate_per_s", "meets_slo", "cost_per_hour_usd", "cost_per_million_output_tokens_usd",
                          "ttft_p99_s", "tpot_p99_s"})
    for (const auto& o : j["options"]) CHECK_MESSAGE(o.contains(key), key);
  const auto& best = j["options"][0];
  CHECK(best["gpus"] == 2);
  CHECK(best["replicas"] == 2);
  CHECK(best["weight_dtype"] == "int4 awq");
  CHECK(best["cost_per_hour_usd"] == doctest::Approx(2.66));
  CHECK(best["changes_quality"] == true);
  CHECK(best["binding"] == "bandwidth");
  const auto& last = j["options"][2];
  CHECK(last["meets_slo"] == false);
  CHECK(last["cost_per_hour_usd"].is_null());
  CHECK(last["pruned"] == "memory: weights 16.1 GB per GPU exceed the usable 15.0 GB");
}

TEST_CASE("the text report recommends the cheapest option and the cheapest without a quality cost") {
  const std::string t = reports::size_text(result(), reports::TextFormat::table);
  CHECK(t.find("Recommended for llama-3-8b: llama-3-8b on 2 x l40s (2 replicas of TP 1), int4 awq weights, KV bf16: "
               "$2.66/h") != std::string::npos);
  CHECK(t.find("Without a quality cost: llama-3-8b on 2 x h100-sxm") != std::string::npos);
  CHECK(t.find("Pruned before simulation: memory 1;") != std::string::npos);
  CHECK(t.find("GB = 1e9 bytes, GiB = 2^30 bytes") != std::string::npos);
  const std::string md = reports::size_text(result(), reports::TextFormat::md);
  CHECK(md.rfind("# kvplan size: chat <test>", 0) == 0);
  CHECK(md.find("| # | model") != std::string::npos);
}

TEST_CASE("the CSV lists every option, pruned ones included, as raw numbers with units in the header") {
  const std::string csv = reports::render(reports::size_table_raw(result()), reports::TextFormat::csv);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);  // header + 3
  CHECK(csv.find("cost_per_hour_usd,cost_per_million_output_tokens_usd,ttft_p99_s") != std::string::npos);
  // Rank 1: 2 x l40s (TP 1, PP 1, DCP 1), 2 replicas, $2.66/h, $1.33 per M tokens, TTFT 0.4 s,
  // TPOT 0.05 s, e2e 12 s.
  CHECK(csv.find("1,llama-3-8b,l40s,2,1,1,1,2,int4 awq,bf16,raw,continuous,256,6,true,2.66,1.33,0.4,0.05,12,") !=
        std::string::npos);
  CHECK(csv.find("memory: weights 16.1 GB per GPU exceed the usable 15.0 GB") != std::string::npos);
}

TEST_CASE("the HTML report is one self-contained page with its charts") {
  const std::string h = reports::size_html(result());
  CHECK(h.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(h.find("http://") == std::string::npos);
  CHECK(h.find("https://") == std::string::npos);
  CHECK(h.find("<script") == std::string::npos);
  CHECK(h.find("<link") == std::string::npos);
  CHECK(h.find("<img") == std::string::npos);
  // Five charts: cost/latency, KV capacity, memory breakdown, TTFT and TPOT against
  // throughput; and the one recommendation's layout diagram.
  size_t svgs = 0;
  for (size_t p = h.find("<svg"); p != std::string::npos; p = h.find("<svg", p + 1)) ++svgs;
  CHECK(svgs == 6);
  CHECK(h.find("<h2>Chosen layout</h2>") != std::string::npos);
  CHECK(h.find("KV capacity against context length") != std::string::npos);
  CHECK(h.find("Memory of one GPU: weights, KV pool, activations, reserve") != std::string::npos);
  CHECK(h.find("Throughput against p99 time to first token") != std::string::npos);
  CHECK(h.find("Recommendation for llama-3-8b") != std::string::npos);
  CHECK(h.find("2 × l40s — $2.66/h") != std::string::npos);
  CHECK(h.find("changes quality") != std::string::npos);
  CHECK(h.find("3.32 -&gt; 3.41") != std::string::npos);
  CHECK(h.find("chat &lt;test&gt;") != std::string::npos);  // escaped, never raw markup
  CHECK(h.find("GB = 1e9 bytes, GiB = 2^30 bytes") != std::string::npos);
  CHECK(h.find("FLOPs count 2 per multiply-add") != std::string::npos);
  CHECK(h.find("Validation status") != std::string::npos);
  CHECK(h.find("documented defaults") != std::string::npos);
}

TEST_CASE("a line chart maps data into its frame and draws reference lines") {
  reports::html::Chart c;
  c.title = "t";
  c.x = {"x (s)", false, 0.0, 10.0};
  c.y = {"y (s)", false, 0.0, 10.0};
  c.series.push_back({"s", "#000000", {{0, 0}, {10, 10}}, true, false, {}});
  c.refs.push_back({"SLO", 5});
  const std::string svg = reports::html::line_chart(c);
  // Frame: left 70, top 40, width 640 - 70 - (20 + 230) = 320, height 380 - 40 - 56 = 284.
  // (0, 0) -> (70, 324); (10, 10) -> (390, 40).
  CHECK(svg.find("points=\"70.0,324.0 390.0,40.0 \"") != std::string::npos);
  // y = 5 -> 324 - 142 = 182.
  CHECK(svg.find("y1=\"182.0\"") != std::string::npos);
  CHECK(svg.find(">SLO<") != std::string::npos);
}

namespace {
size_t count(const std::string& h, const std::string& what) {
  size_t n = 0;
  for (size_t p = h.find(what); p != std::string::npos; p = h.find(what, p + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("the layout diagram draws aggregated replicas: one box per replica, one square per GPU") {
  // 3 replicas of TP 2 x PP 2 on H100: 3 boxes, 3 x 2 x 2 = 12 GPU squares, two dashed TP
  // frames per replica, and an arrow from the router to each replica.
  reports::Layout l;
  l.title = "llama-3.1-70b: 12 x h100-sxm";
  l.router = "router";
  l.pools.push_back({reports::PoolRole::replicas, "h100-sxm", 3, 2, 2, "bf16 weights, KV fp8"});
  const std::string svg = reports::layout_svg(l);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("http") == std::string::npos);
  CHECK(count(svg, "class=\"gpu\"") == 12);
  CHECK(count(svg, "stroke-dasharray") == 6);
  CHECK(count(svg, "replica ") == 3);  // "replica 1 · h100-sxm" ...
  CHECK(count(svg, "marker-end") == 3);
  CHECK(svg.find("3 replicas (4 GPUs each: TP 2 x PP 2)") != std::string::npos);
  CHECK(svg.find("KV transfer") == std::string::npos);
  // 20 replicas: six drawn, and the rest counted.
  l.pools[0].instances = 20;
  const std::string many = reports::layout_svg(l);
  CHECK(count(many, "class=\"gpu\"") == 6 * 4);
  CHECK(many.find("… and 14 more alike") != std::string::npos);
}

TEST_CASE("the layout diagram draws xPyD pools of different GPU types joined by the KV link") {
  // 2P1D: two prefill instances of TP 1 on H200, one decode instance of TP 4 on L40S.
  reports::Layout l;
  l.title = "2P1D <mixed>";
  l.pools.push_back({reports::PoolRole::prefill, "h200", 2, 1, 1, ""});
  l.pools.push_back({reports::PoolRole::decode, "l40s", 1, 4, 1, ""});
  l.kv_link = "RDMA, 50 GB/s";
  const std::string svg = reports::layout_svg(l);
  CHECK(count(svg, "class=\"gpu\"") == 2 * 1 + 1 * 4);
  CHECK(svg.find("prefill 1 · h200") != std::string::npos);
  CHECK(svg.find("prefill 2 · h200") != std::string::npos);
  CHECK(svg.find("decode 1 · l40s") != std::string::npos);
  CHECK(svg.find("2 prefill instances (1 GPU each: TP 1)") != std::string::npos);
  CHECK(svg.find("1 decode instance (4 GPUs each: TP 4)") != std::string::npos);
  // The router feeds the two prefill instances; one KV arrow goes on to the decode pool.
  CHECK(count(svg, "marker-end") == 3);
  CHECK(svg.find("KV transfer") != std::string::npos);
  CHECK(svg.find("RDMA, 50 GB/s") != std::string::npos);
  CHECK(svg.find("2P1D &lt;mixed&gt;") != std::string::npos);  // escaped
}

TEST_CASE("a disaggregated winner is drawn in the HTML report as its prefill and decode pools") {
  // Two units of 1P2D: 2 prefill instances of TP 2 on H200, 4 decode instances of TP 1 on
  // L40S = 2 x 2 + 4 x 1 = 8 GPUs, joined by RDMA.
  size::DisaggOption o;
  o.model = "m";
  o.prefill_gpu = "h200";
  o.decode_gpu = "l40s";
  o.prefill_options.tp = 2;
  o.decode_options.tp = 1;
  o.ratio = {1, 2};
  o.units = 2;
  o.gpus_total = 8;
  o.link = "rdma";
  size::DisaggSearchResult d;
  d.options.push_back(o);
  size::DisaggVerdict v;
  v.model = "m";
  v.winner = "disaggregated";
  v.disaggregated = 0;
  d.verdicts.push_back(v);
  const std::string html = reports::disagg_size_html(d);
  CHECK(count(html, "class=\"gpu\"") == 8);
  CHECK(html.find("2 prefill instances (2 GPUs each: TP 2)") != std::string::npos);
  CHECK(html.find("4 decode instances (1 GPU each: TP 1)") != std::string::npos);
  CHECK(html.find("m: 2 x 1P2D (8 GPUs)") != std::string::npos);
  // An aggregated winner draws nothing here (the report's own layout section has it).
  d.verdicts[0].winner = "aggregated";
  CHECK(reports::disagg_size_html(d).find("<svg") == std::string::npos);
}

TEST_CASE("durations read in the unit three significant digits fit, never in exponent form") {
  CHECK(reports::seconds(812e-6) == "812 us");
  CHECK(reports::seconds(999.4e-6) == "999 us");
  CHECK(reports::seconds(999.6e-6) == "1 ms");
  CHECK(reports::seconds(0.0123) == "12.3 ms");
  CHECK(reports::seconds(0.9996) == "1 s");  // was "1e+03 ms"
  CHECK(reports::seconds(4.56) == "4.56 s");
  CHECK(reports::seconds(2610.4) == "2610 s");  // was "2.61e+03 s"
}

TEST_CASE("an axis ends at the upper fence when one value lies far beyond the others") {
  // [1, 2, 3, 4, 100]: Q1 = 2, Q3 = 4 (positions 1 and 3 of 0..4), fence 4 + 1.5 x 2 = 7.
  CHECK(reports::html::upper_fence({1, 2, 3, 4, 100}) == doctest::Approx(7.0));
  CHECK_FALSE(reports::html::upper_fence({1, 2, 3, 4, 5}).has_value());  // 5 <= 7: nothing to cut
  CHECK_FALSE(reports::html::upper_fence({1, 2, 100}).has_value());      // too few for quartiles
  // The cost chart of a result with a 1,000 $/h option among 2.66 to 6.70 $/h ones: its
  // axis stops at the fence and the note says one option lies above it.
  size::SizeResult r = result();
  for (const double cost : {3.0, 4.0, 1000.0}) r.options.push_back(meeting_option("h100-sxm", 2, cost, false));
  // Costs 2.66, 3, 4, 6.70, 1000: Q1 3, Q3 6.70, fence 6.70 + 1.5 x 3.70 = 12.25.
  const std::string h = reports::size_html(r);
  CHECK(h.find("1 option above $12.25/h lies off the chart (the tables list it).") != std::string::npos);
  CHECK(reports::size_html(result()).find("off the chart") == std::string::npos);  // no outlier, no cut
}
