// `kvplan size --buy` as a user runs it: exit codes for bad site options, and the JSON
// and CSV carrying the buy figures in the objective's order.
#include <doctest/doctest.h>

#include "tests/run_kvplan.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using kvplan_test::Run;

Run kvplan(const std::string& args) { return kvplan_test::run_kvplan(args); }

// The planner evaluator keeps these runs to a fraction of a second.
const std::string kSize = "size --model llama-3-8b --workload chat --gpus h100-sxm,l40s --evaluator planner ";

}  // namespace

TEST_CASE("size --buy: a negative, unknown or orphan site option exits 2 naming it") {
  for (const char* flags : {"--buy --pue -1", "--buy --electricity-usd-per-kwh -0.2", "--buy --utilization 0",
                                 "--buy --amortization-years -3", "--buy --rack-kw -40", "--buy --network-fraction -1"}) {
    const std::string bad(flags);
    CAPTURE(bad);
    const Run r = kvplan(kSize + bad);
    CHECK(r.code == 2);
    const std::string option = bad.substr(6, bad.find(' ', 6) - 6);
    CHECK(r.err.find(option) != std::string::npos);
  }
  Run r = kvplan(kSize + "--objective cheapest");
  CHECK(r.code == 2);
  CHECK(r.err.find("--objective") != std::string::npos);
  r = kvplan(kSize + "--buy --rack-watts 40");
  CHECK(r.code == 2);
  CHECK(r.err.find("rack-watts") != std::string::npos);
  r = kvplan(kSize + "--pue 1.2");  // a site option without --buy would be ignored silently
  CHECK(r.code == 2);
  CHECK(r.err.find("--buy") != std::string::npos);
}

TEST_CASE("size --buy --format json: buy figures with units, ranked by TCO by default") {
  const Run r = kvplan(kSize + "--buy --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& buy = j.at("buy");
  CHECK(buy.at("objective") == "tco");
  CHECK(buy.at("site").at("pue") == doctest::Approx(1.58));
  const auto& opts = buy.at("options");
  REQUIRE(opts.size() >= 2);
  double last = 0;
  int64_t last_rank = 0;
  for (const auto& o : opts) {
    if (!o.at("infeasible").is_null()) continue;
    // Non-decreasing TCO down the ranking, and each option's TCO is capex + opex x years.
    CHECK(o.at("tco_usd").get<double>() >= last);
    last = o.at("tco_usd").get<double>();
    CHECK(o.at("rank").get<int64_t>() > last_rank);
    last_rank = o.at("rank").get<int64_t>();
    CHECK(o.at("tco_usd").get<double>() ==
          doctest::Approx(o.at("capex_usd").get<double>() + 4 * o.at("opex_usd_per_year").get<double>()));
    CHECK(o.at("gpus_bought").get<int64_t>() >= o.at("gpus_used").get<int64_t>());
  }
  // The recommendation follows the objective: the first option overall is the first bought.
  CHECK(j.at("options").at(0).at("rank") == opts.at(0).at("rank"));
}

TEST_CASE("size --objective capex --format csv prints the buy table with units in the columns") {
  const Run r = kvplan(kSize + "--objective capex --utilization 0.5 --format csv");
  REQUIRE(r.code == 0);
  const std::string header = r.out.substr(0, r.out.find('\n'));
  for (const char* col : {"capex_usd", "opex_usd_per_year", "tco_usd", "power_peak_w", "energy_kwh_per_year",
                          "break_even_month", "usd_per_million_output_tokens"})
    CHECK_MESSAGE(header.find(col) != std::string::npos, col);
}

TEST_CASE("size --buy --servers: the user's purchase file replaces the catalog's for its GPU") {
  const auto path = std::filesystem::temp_directory_path() / ("kvplan_buy_quote." + std::to_string(getpid()) + ".yaml");
  {
    std::ofstream f(path);
    f << "gpu: l40s\nserver_form: quoted 4-GPU server\ngpu_price_usd: 7000\ngpu_board_power_w: 350\n"
         "gpu_idle_power_w: 30\ngpus_per_server: 4\nserver_price_usd: 12000\nserver_power_w: 900\n"
         "server_rack_units: 2\ncooling: air\nhost_memory_bytes: 549755813888\n";
  }
  const Run r = kvplan(kSize + "--buy --format json --servers " + path.string());
  std::filesystem::remove(path);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  bool saw_l40s = false, saw_h100 = false;
  for (const auto& o : j.at("buy").at("options")) {
    if (o.at("gpu") == "l40s") {
      saw_l40s = true;
      CHECK(o.at("gpu_price_usd") == 7000.0);
      CHECK(o.at("server_form") == "quoted 4-GPU server");
      // TP 8 needs 8 GPUs on one fabric: a 4-GPU server cannot hold the group.
      CHECK(o.at("infeasible").is_null() == (o.at("tp").get<int64_t>() <= 4));
      if (!o.at("infeasible").is_null()) continue;
      // 7,000 per GPU bought + 12,000 per server, plus 10 % network.
      CHECK(o.at("capex_usd").get<double>() ==
            doctest::Approx(1.1 * (7000.0 * o.at("gpus_bought").get<double>() + 12000.0 * o.at("servers").get<double>())));
    } else {
      saw_h100 = true;
      CHECK(o.at("gpu_price_usd") == 30000.0);  // configs/servers/h100-sxm.yaml
    }
  }
  CHECK(saw_l40s);
  CHECK(saw_h100);
}

// configs/servers/gb200-nvl72.yaml says `cooling: liquid`: at an air-only site every
// option on it is refused for that reason, and the site's options are in the JSON.
TEST_CASE("size --buy --cooling air: a liquid-cooled NVL72 rack cannot be placed, and the JSON says why") {
  const Run r = kvplan("size --model llama-3-8b --workload chat --gpus gb200-nvl72 --evaluator planner --buy "
                       "--cooling air --site-racks 3 --format json");
  REQUIRE(r.code == 0);
  const auto b = nlohmann::json::parse(r.out).at("buy");
  CHECK(b.at("site").at("cooling") == "air");
  CHECK(b.at("site").at("site_racks") == 3);
  CHECK(b.at("site").at("site_kw").is_null());
  REQUIRE_FALSE(b.at("options").empty());
  for (const auto& o : b.at("options")) {
    REQUIRE(o.at("infeasible").is_string());
    CHECK(o.at("infeasible").get<std::string>().find("is liquid-cooled and the site is air-cooled only (--cooling air)") !=
          std::string::npos);
  }
}

TEST_CASE("size --buy: a host KV tier beyond a GPU's share of DRAM makes that option unbuyable, not the search") {
  // configs/servers/h100-sxm.yaml: 2 TiB over 8 GPUs = 256 GiB per GPU. --kv-offloading-size
  // 512 GiB is 512 GiB per GPU at TP 1 (twice the share: cannot be bought) and 256 GiB per
  // GPU at TP 2 (exactly the share: bought).
  const Run r = kvplan(
      "size --model llama-3-8b --workload chat --gpus h100-sxm --tp 1,2 --evaluator planner --buy "
      "--kv-offloading-size 512 --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  int unbuyable = 0, bought = 0;
  for (const auto& o : j.at("buy").at("options")) {
    if (o.at("infeasible").is_null()) {
      ++bought;
      CHECK(o.at("host_kv_bytes_per_server").get<int64_t>() > 0);
    } else {
      ++unbuyable;
      CHECK(o.at("infeasible").get<std::string>().find("more than a GPU's share of the server's DRAM, 256.00 GiB") !=
            std::string::npos);
    }
  }
  CHECK(unbuyable >= 1);
  CHECK(bought >= 1);
}

namespace {

// The DRAM and NVMe capex of each option bought at the tier flags of the two tests below,
// worked by hand.
void check_tier_capex(const nlohmann::json& buy) {
  // configs/servers/b200.yaml: 2 TiB installed, upgradable to 4 TiB, 8 GPUs. --kv-offloading-size
  // 384 GiB at TP 1 is 384 GiB per GPU: beyond the installed share (256 GiB), within the
  // upgraded one (512 GiB). tests/data/prices/example-b200-tiers.yaml and
  // example-b200-tiers-only.yaml: $5/GiB, $100/TB.
  // --kv-disk-size 2000 GiB at TP 1 is a 2000 x 2^30 byte drive per GPU serving. At
  // --rate 800 a server holds 6 or more GPUs serving: 6 x 384 = 2304 GiB > 2048.
  CHECK(buy.at("site").at("dram_usd_per_gib") == 5);
  CHECK(buy.at("site").at("nvme_usd_per_tb") == 100);
  int bought = 0, with_dram = 0;
  for (const auto& o : buy.at("options")) {
    if (!o.at("infeasible").is_null()) continue;
    ++bought;
    with_dram += o.at("dram_bought_bytes_per_server").get<int64_t>() > 0;
    const auto servers = o.at("servers").get<int64_t>();
    const auto used = o.at("gpus_used").get<int64_t>();
    // Per server: 384 GiB x the GPUs serving there, less the 2048 GiB installed.
    const int64_t serving = (used + servers - 1) / servers;
    const int64_t extra = std::max<int64_t>(0, serving * 384 - 2048) << 30;
    CHECK(o.at("dram_bought_bytes_per_server").get<int64_t>() == extra);
    CHECK(o.at("dram_capex_usd").get<double>() == doctest::Approx(static_cast<double>(servers * (extra >> 30)) * 5));
    CHECK(o.at("nvme_bytes").get<int64_t>() == used * (2000LL << 30));
    CHECK(o.at("nvme_capex_usd").get<double>() == doctest::Approx(static_cast<double>(used) * 2000 * 1.073741824 * 100 / 1000));
    // Capex = (GPUs + servers + DRAM + NVMe) x 1.10.
    const double hw = o.at("gpu_capex_usd").get<double>() + o.at("server_capex_usd").get<double>() +
                      o.at("dram_capex_usd").get<double>() + o.at("nvme_capex_usd").get<double>();
    CHECK(o.at("capex_usd").get<double>() == doctest::Approx(hw * 1.10));
  }
  CHECK(bought >= 1);
  CHECK(with_dram >= 1);
}

}  // namespace

TEST_CASE("size --buy --prices: DRAM beyond the installed and the disk tier's drives are a capex line") {
  const auto p = std::filesystem::temp_directory_path() / ("kvplan_buy_tiers." + std::to_string(getpid()) + ".csv");
  std::ofstream(p) << "hour,model,requests_per_s\n0,llama-3-8b,20\n";
  const std::string cmd = "size --model llama-3-8b --workload chat --gpus b200 --tp 1 --evaluator planner --buy "
                          "--rate 800 --kv-offloading-size 384 --kv-disk-size 2000 --demand " + p.string() +
                          " --horizon-months 1 --format json";
  const Run priced = kvplan(cmd + " --prices tests/data/prices/example-b200-tiers.yaml");
  REQUIRE(priced.code == 0);
  const auto j = nlohmann::json::parse(priced.out).at("buy");
  check_tier_capex(j);
  // The text names the cost line and the card's prices.
  const std::string text_cmd = cmd.substr(0, cmd.find(" --format json"));
  const Run text = kvplan(text_cmd + " --prices tests/data/prices/example-b200-tiers.yaml");
  REQUIRE(text.code == 0);
  CHECK(text.out.find("GiB more DRAM per server") != std::string::npos);
  CHECK(text.out.find("TB of NVMe drives") != std::string::npos);
  CHECK(text.out.find("$5 per GiB (dram_usd_per_gib, ") != std::string::npos);
  // Without the card, at the workload's own rate (one GPU serving: the installed DRAM
  // holds the tier), the drives are named as not priced.
  std::string low_rate = text_cmd;
  low_rate.erase(low_rate.find("--rate 800 "), 11);
  const Run none = kvplan(low_rate);
  REQUIRE(none.code == 0);
  CHECK(none.out.find("not priced (no nvme_usd_per_tb in --prices)") != std::string::npos);

  // Without the card: the DRAM cannot be bought (every TP-1 option is unbuyable, saying
  // why) and nothing is priced at $0.
  const Run plain = kvplan(cmd);
  REQUIRE(plain.code == 0);
  const auto k = nlohmann::json::parse(plain.out).at("buy");
  CHECK(k.at("site").at("dram_usd_per_gib").is_null());
  REQUIRE_FALSE(k.at("options").empty());
  int refused = 0;
  for (const auto& o : k.at("options")) {
    if (o.at("infeasible").is_null()) {
      CHECK(o.at("dram_bought_bytes_per_server") == 0);  // the installed DRAM held the tier
      CHECK(o.at("nvme_capex_usd").is_null());
      continue;
    }
    ++refused;
    CHECK(o.at("infeasible").get<std::string>().find("more DRAM is not priced: no dram_usd_per_gib in --prices") !=
          std::string::npos);
  }
  CHECK(refused >= 1);
  std::filesystem::remove(p);
}

TEST_CASE("size --buy --prices without --demand: a tiers-only card prices the DRAM and the drives") {
  // The flags of the test above, with no demand plan: tests/data/prices/example-b200-tiers-only.yaml
  // gives the same $5/GiB and $100/TB and no rent price, so the capex lines are the same hand figures.
  const Run r = kvplan("size --model llama-3-8b --workload chat --gpus b200 --tp 1 --evaluator planner --buy "
                       "--rate 800 --kv-offloading-size 384 --kv-disk-size 2000 --format json "
                       "--prices tests/data/prices/example-b200-tiers-only.yaml");
  REQUIRE(r.code == 0);
  check_tier_capex(nlohmann::json::parse(r.out).at("buy"));
}
