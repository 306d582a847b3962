// `kvplan size --demand` as a user runs it: the over_time object of the JSON, each figure
// recomputed here from the prices and max rates the JSON states, and the text section.
#include <doctest/doctest.h>

#include "tests/run_kvplan.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using kvplan_test::Run;

// The planner evaluator keeps these runs to a fraction of a second.
const std::string kSize = "size --model llama-3-8b --workload chat --gpus h100-sxm,l40s --evaluator planner ";

std::string demand_file() {
  const auto p = std::filesystem::temp_directory_path() / "kvplan_over_time_cli_demand.csv";
  std::ofstream(p) << "hour,model,requests_per_s\n0,llama-3-8b,20\n12,llama-3-8b,90\n";
  return p.string();
}

}  // namespace

TEST_CASE("size --demand --format json: replicas, rented GPU-hours and totals follow from the stated rates and prices") {
  const Run r = kvplan_test::run_kvplan(kSize + "--demand " + demand_file() + " --horizon-months 3 --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& ot = j.at("over_time");
  CHECK(ot.at("horizon_months") == 3);
  CHECK(ot.at("period_h") == 12);
  CHECK(ot.at("cycle_h") == 24);
  REQUIRE(ot.at("models").size() == 1);
  const auto& m = ot.at("models")[0];
  CHECK(m.at("model") == "llama-3-8b");
  const double max_rate = m.at("max_rate_per_replica_per_s").get<double>();
  const auto gpr = m.at("gpus_per_replica").get<int64_t>();
  const double price = m.at("price_per_gpu_hour_usd").get<double>();
  // Each 12-hour period of the 24-hour cycle lasts 730 / 2 = 365 h a month.
  const double need0 = std::ceil(20 / max_rate), need1 = std::ceil(90 / max_rate);
  CHECK(m.at("periods")[0].at("replicas") == static_cast<int64_t>(need0));
  CHECK(m.at("periods")[1].at("replicas") == static_cast<int64_t>(need1));
  CHECK(m.at("replicas_peak") == static_cast<int64_t>(need1));
  const double needed_gpu_h = 3 * (need0 + need1) * static_cast<double>(gpr) * 365;
  CHECK(m.at("gpu_hours_needed").get<double>() == doctest::Approx(needed_gpu_h));
  CHECK(m.at("all_rented_total_usd").get<double>() == doctest::Approx(needed_gpu_h * price));
  const auto owned = m.at("owned_replicas").get<double>();
  const double rented_gpu_h =
      3 * (std::max(0.0, need0 - owned) + std::max(0.0, need1 - owned)) * static_cast<double>(gpr) * 365;
  CHECK(m.at("rented_gpu_hours").at("on_demand").get<double>() == doctest::Approx(rented_gpu_h));
  double total = 0;
  for (const auto& month : m.at("months")) total += month.at("cost_usd").get<double>();
  CHECK(m.at("total_usd").get<double>() == doctest::Approx(total));
  CHECK(ot.at("total_usd").get<double>() == doctest::Approx(total));
  // The split is the cheapest of the servers tried, the pure alternatives among them.
  CHECK(m.at("total_usd").get<double>() <= m.at("all_rented_total_usd").get<double>());
  CHECK(m.at("total_usd").get<double>() <= m.at("all_owned_total_usd").get<double>());
}

TEST_CASE("size --demand: the text names the plan: a curve for a model not searched exits 2") {
  Run r = kvplan_test::run_kvplan(kSize + "--demand " + demand_file() + " --top 1");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("Over time (owned base, rented peaks):") != std::string::npos);
  CHECK(r.out.find("cumulative all rented") != std::string::npos);
  r = kvplan_test::run_kvplan("size --model qwen3-0.6b --workload chat --gpus l40s --evaluator planner --demand " +
                              demand_file());
  CHECK(r.code == 2);
  CHECK(r.err.find("key 'model': expected models searched (qwen3-0.6b), got 'llama-3-8b'") != std::string::npos);
}

// With the servers kept, rent enters the total linearly: rent x 1.25 adds a quarter of
// every month's rent, x 0.75 takes a quarter off; the range spans every factor's sides.
TEST_CASE("size --demand --format json: the sensitivity follows from the months the JSON states") {
  const Run r = kvplan_test::run_kvplan(kSize + "--demand " + demand_file() + " --horizon-months 3 --format json");
  REQUIRE(r.code == 0);
  const auto ot = nlohmann::json::parse(r.out).at("over_time");
  double rent = 0;
  for (const auto& month : ot.at("models")[0].at("months")) rent += month.at("rented_usd").get<double>();
  const double total = ot.at("total_usd").get<double>();
  const nlohmann::json* rent_factor = nullptr;
  double lo = total, hi = total, last_swing = 1e300;
  for (const auto& x : ot.at("sensitivity")) {
    if (x.at("factor") == "rent price per GPU-hour") rent_factor = &x;
    lo = std::min(lo, x.at("low").at("total_usd").get<double>());
    hi = std::max(hi, x.at("high").at("total_usd").get<double>());
    CHECK(x.at("swing_usd").get<double>() <= last_swing);  // largest first
    last_swing = x.at("swing_usd").get<double>();
  }
  REQUIRE(rent_factor != nullptr);
  CHECK(rent_factor->at("low").at("setting") == "x 0.75");
  CHECK(rent_factor->at("low").at("total_usd").get<double>() == doctest::Approx(total - 0.25 * rent));
  CHECK(rent_factor->at("high").at("total_usd").get<double>() == doctest::Approx(total + 0.25 * rent));
  CHECK(ot.at("total_range_usd")[0].get<double>() == doctest::Approx(lo));
  CHECK(ot.at("total_range_usd")[1].get<double>() == doctest::Approx(hi));
  // The planner evaluator has no calibration profile: no measured error, no such factor.
  CHECK(ot.at("models")[0].at("time_model_error").is_null());
  CHECK(ot.at("confident_totals").empty());
}

TEST_CASE("size --demand --report: the finance summary comes before the recommendations") {
  const auto html = std::filesystem::temp_directory_path() / "kvplan_over_time_cli_report.html";
  std::filesystem::remove(html);
  const Run r = kvplan_test::run_kvplan(kSize + "--demand " + demand_file() + " --report " + html.string());
  REQUIRE(r.code == 0);
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto finance = page.find("For finance: the fleet over 12 months");
  const auto rec = page.find("Recommendation for llama-3-8b");
  REQUIRE(finance != std::string::npos);
  REQUIRE(rec != std::string::npos);
  CHECK(finance < rec);
  CHECK(page.find("What moves the total over 12 months") != std::string::npos);
  CHECK(page.find("Cash out by month") != std::string::npos);
}
