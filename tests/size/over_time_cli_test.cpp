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
#include <unistd.h>

namespace {

using kvplan_test::Run;

// The planner evaluator keeps these runs to a fraction of a second.
const std::string kSize = "size --model llama-3-8b --workload chat --gpus h100-sxm,l40s --evaluator planner ";

// One file per process: ctest runs this file's cases in parallel processes, and one
// truncating the file while another's kvplan reads it made that run fail.
std::string demand_file() {
  const auto p = std::filesystem::temp_directory_path() /
                 ("kvplan_over_time_cli_demand." + std::to_string(getpid()) + ".csv");
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
  const auto html =
      std::filesystem::temp_directory_path() / ("kvplan_over_time_cli_report." + std::to_string(getpid()) + ".html");
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

// tests/data/prices/example-h100-sxm.yaml: on demand $3.35, 12-month reservation $1.90,
// spot $2.00 reclaimed 0.5 times a month with 20 minutes to replace. Over 12 months the
// card's figures must rebuild each month's rent: reserved replicas x GPUs x 730 h x $1.90,
// plus the rented GPU-hours at spot's effective price (2.00 + 0.5 / 730 x (20/60 + the
// option's p99 e2e latency in hours) x 3.35, below 3.35), on demand for none.
TEST_CASE("size --demand --prices: reserved and spot priced from the card") {
  const Run r = kvplan_test::run_kvplan("size --model llama-3-8b --workload chat --gpus h100-sxm --evaluator planner "
                                        "--demand " + demand_file() +
                                        " --prices tests/data/prices/example-h100-sxm.yaml --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& m = j.at("over_time").at("models")[0];
  REQUIRE(m.at("rent_prices").is_object());
  CHECK(m.at("rent_prices").at("provider") == "Example Cloud (illustrative)");
  CHECK(m.at("price_per_gpu_hour_usd").get<double>() == doctest::Approx(3.35));
  const auto& option = j.at("options")[m.at("rank").get<size_t>() - 1];
  const double e2e_h = option.at("at_max_rate").at("e2e_p99_s").get<double>() / 3600;
  const double spot = 2.00 + 0.5 / 730 * (20.0 / 60 + e2e_h) * 3.35;
  CHECK(m.at("rent_prices").at("spot").at("effective_usd_per_gpu_hour").get<double>() == doctest::Approx(spot));
  const auto gpr = m.at("gpus_per_replica").get<double>();
  CHECK(m.at("rented_gpu_hours").at("on_demand").get<double>() == doctest::Approx(0.0));
  for (const auto& month : m.at("months")) {
    const double reserved = month.at("reserved_replicas").get<double>() * gpr * 730 * 1.90;
    CHECK(month.at("reserved_usd").get<double>() == doctest::Approx(reserved));
    CHECK(month.at("spot_gpu_hours").get<double>() == doctest::Approx(month.at("rented_gpu_hours").get<double>()));
    CHECK(month.at("rented_usd").get<double>() ==
          doctest::Approx(reserved + month.at("rented_gpu_hours").get<double>() * spot));
  }
  // The replica levels the low period (20/s) needs run around the clock: a year of spot
  // (8,760 h x ~$2.0008) costs more than a 12-month reservation (8,760 h x $1.90), so
  // those above the owned ones are reserved; the peak's levels run 4,380 h a year
  // (~$8,763 on spot against $16,644 reserved) and stay on spot.
  const double max_rate = m.at("max_rate_per_replica_per_s").get<double>();
  const auto base = static_cast<int64_t>(std::ceil(20 / max_rate)) - m.at("owned_replicas").get<int64_t>();
  if (base > 0) {
    REQUIRE(m.at("reserved").is_object());
    CHECK(m.at("reserved").at("term_months") == 12);
    CHECK(m.at("reserved").at("replicas_by_term") == nlohmann::json::array({base}));
  } else {
    CHECK(m.at("reserved").is_null());
  }
  const Run text = kvplan_test::run_kvplan("size --model llama-3-8b --workload chat --gpus h100-sxm --evaluator planner "
                                           "--demand " + demand_file() +
                                           " --prices tests/data/prices/example-h100-sxm.yaml --top 1");
  REQUIRE(text.code == 0);
  CHECK(text.out.find("rent prices from tests/data/prices/example-h100-sxm.yaml (Example Cloud (illustrative))") !=
        std::string::npos);
}

// A server peaks at its host plus every GPU at board power (configs/servers): an 8-GPU
// L40S server 2,000 + 8 x 350 W = 4.8 kW, an HGX H100 4,600 + 8 x 700 W = 10.2 kW. A
// 12 kW site holds two of the first or one of the second; the plan stays within it and
// its site totals add up.
TEST_CASE("size --demand --site-kw: the servers bought fit the site's power, the totals say how much") {
  const Run r = kvplan_test::run_kvplan(kSize + "--demand " + demand_file() + " --site-kw 12 --format json");
  REQUIRE(r.code == 0);
  const auto ot = nlohmann::json::parse(r.out).at("over_time");
  const auto& m = ot.at("models")[0];
  const double per_server_kw = m.at("gpu") == "l40s" ? 4.8 : 10.2;
  const auto servers = m.at("owned_servers").get<double>();
  CHECK(m.at("power_peak_kw").get<double>() == doctest::Approx(servers * per_server_kw));
  CHECK(m.at("power_peak_kw").get<double>() <= 12.0);
  CHECK(m.at("power_mean_kw").get<double>() <= m.at("power_peak_kw").get<double>());
  CHECK(ot.at("site").at("power_peak_kw").get<double>() == doctest::Approx(m.at("power_peak_kw").get<double>()));
  CHECK(ot.at("site").at("floor_m2").get<double>() == doctest::Approx(0.72 * m.at("racks").get<double>()));
  if (!m.at("site_limit").is_null())
    CHECK(m.at("site_limit").get<std::string>().find("(--site-kw)") != std::string::npos);
}

// Staged purchases in the JSON: the tranches add up to the servers and capex bought, and
// the months show each tranche's servers serving from its serving month (order month + the
// lead time) and its capex paid in its order month (an order is paid when placed).
TEST_CASE("size --demand --format json: the purchases schedule agrees with the months") {
  const Run r = kvplan_test::run_kvplan(kSize + "--demand " + demand_file() +
                                        " --horizon-months 8 --growth-per-month 0.3 --purchase-lead-months 1 "
                                        "--format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& m = j.at("over_time").at("models").at(0);
  CHECK(m.at("months").size() == 8);
  const auto& purchases = m.at("purchases");
  REQUIRE_FALSE(purchases.empty());
  int64_t servers = 0;
  double capex = 0;
  for (const auto& t : purchases) {
    CHECK(t.at("serving_from_month") == t.at("order_month").get<int64_t>() + 1);
    servers += t.at("servers_added").get<int64_t>();
    capex += t.at("capex_usd").get<double>();
  }
  CHECK(m.at("owned_servers") == servers);
  CHECK(m.at("capex_usd").get<double>() == doctest::Approx(capex));
  for (const auto& month : m.at("months")) {
    int64_t serving = 0;
    double paid = 0;
    for (const auto& t : purchases) {
      if (t.at("serving_from_month").get<int64_t>() <= month.at("month").get<int64_t>())
        serving += t.at("servers_added").get<int64_t>();
      if (t.at("order_month") == month.at("month")) paid += t.at("capex_usd").get<double>();
    }
    CHECK(month.at("owned_servers") == serving);
    CHECK(month.at("capex_paid_usd").get<double>() == doctest::Approx(paid));
  }
}

// configs/servers/h100-sxm.yaml: 2 TiB of DRAM over 8 GPUs = 256 GiB per GPU, as
// buy_cli_test.cpp checks for --buy. --kv-offloading-size 512 is 512 GiB per GPU at TP 1:
// the plan buys no server (rented only) and says why; at TP 2 it is 256 GiB per GPU, the
// share exactly, and the tier does not stop the purchase.
TEST_CASE("size --demand: a host KV tier beyond a GPU's share of the server's DRAM buys no server, as --buy") {
  const std::string size = "size --model llama-3-8b --workload chat --gpus h100-sxm --evaluator planner --demand " +
                           demand_file() + " --kv-offloading-size 512 --format json --tp ";
  Run r = kvplan_test::run_kvplan(size + "1");
  REQUIRE(r.code == 0);
  auto m = nlohmann::json::parse(r.out).at("over_time").at("models")[0];
  CHECK(m.at("owned_servers") == 0);
  REQUIRE(m.at("site_limit").is_string());
  const std::string why = m.at("site_limit").get<std::string>();  // the server file's path as found
  CHECK(why.rfind("no server: --kv-offloading-size 512.00 GiB per GPU (TP 1 x PP 1: 512.00 GiB per engine) is more "
                  "than a GPU's share of the server's DRAM, 256.00 GiB (",
                  0) == 0);
  CHECK(why.find("configs/servers/h100-sxm.yaml: host_memory_bytes 2048.00 GiB for 8 GPUs)") != std::string::npos);
  r = kvplan_test::run_kvplan(size + "2");
  REQUIRE(r.code == 0);
  m = nlohmann::json::parse(r.out).at("over_time").at("models")[0];
  if (!m.at("site_limit").is_null())
    CHECK(m.at("site_limit").get<std::string>().find("DRAM") == std::string::npos);
}
