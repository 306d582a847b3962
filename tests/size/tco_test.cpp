// size/tco.h, io/hardware_io.h and reports/buy_report.h: the buy arithmetic worked by
// hand (servers, racks, power, kWh per year, capex, TCO, tokens, break-even), the
// ranking objectives, the purchase catalog and the rendered Buy section.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "io/config_io.h"
#include "io/hardware_io.h"
#include "reports/buy_report.h"
#include "size/tco.h"
#include "tests/fixtures.h"

using namespace kvplan;
using namespace kvplan::size;

namespace {

//! An HGX H100-like server: 8 GPUs on a baseboard bought whole.
ServerSpec hgx() {
  ServerSpec s;
  s.gpu = "h100-sxm";
  s.form = "HGX 8-GPU";
  s.gpu_price_usd = 30000;
  s.gpu_board_power_w = 700;
  s.gpu_idle_power_w = 70;
  s.gpus_per_server = 8;
  s.whole_server = true;
  s.server_price_usd = 77000;
  s.server_power_w = 4600;
  s.server_rack_units = 8;
  return s;
}

ServerSpec pcie() {
  ServerSpec s = hgx();
  s.form = "PCIe 8-slot";
  s.whole_server = false;
  return s;
}

ServingOptions shape(int64_t tp, int64_t pp, int64_t dp = 1) { return kvplan::test::parallel_shape(tp, pp, dp); }

}  // namespace

TEST_CASE("layout: replicas pack whole into servers: TP stays on one fabric, PP splits at stage boundaries") {
  // 3 replicas of TP 2 on 8-GPU servers: floor(8/2) = 4 replicas per server -> 1 server;
  // 6 GPUs used; a baseboard is bought whole (8), PCIe slots are not (6).
  ServerLayout l = layout(3, shape(2, 1), hgx());
  CHECK(l.replicas_per_server == 4);
  CHECK(l.servers == 1);
  CHECK(l.gpus_used == 6);
  CHECK(l.gpus_bought == 8);
  CHECK(layout(3, shape(2, 1), pcie()).gpus_bought == 6);
  // 5 replicas of TP 4: 2 per server -> ceil(5/2) = 3 servers, 20 used, 24 bought.
  l = layout(5, shape(4, 1), hgx());
  CHECK(l.servers == 3);
  CHECK(l.gpus_bought == 24);
  // TP 4 x PP 4 = 16 GPUs: floor(8/4) = 2 stages per server -> ceil(4/2) = 2 servers per
  // replica; 2 replicas -> 4 servers, 32 GPUs.
  l = layout(2, shape(4, 4), hgx());
  CHECK(l.replicas_per_server == 0);
  CHECK(l.servers_per_replica == 2);
  CHECK(l.servers == 4);
  CHECK(l.gpus_bought == 32);
  // TP 8 x PP 3: one stage per server -> 3 servers per replica.
  CHECK(layout(1, shape(8, 3), hgx()).servers_per_replica == 3);
  // TP 16 needs 16 GPUs on one fabric: impossible in 8-GPU servers unless it spans them,
  // then ceil(16/8) = 2 servers.
  CHECK(layout(1, shape(16, 1), hgx()).infeasible.has_value());
  ServerSpec spanning = hgx();
  spanning.tp_across_servers = true;
  l = layout(1, shape(16, 1), spanning);
  CHECK_FALSE(l.infeasible.has_value());
  CHECK(l.servers == 2);
}

TEST_CASE("layout: data-parallel attention ranks are GPUs of the replica, for purchase as for rent") {
  // DeepSeek-style TP 1 x DP 8 (x EP 8): 8 attention ranks of one GPU each, 8 GPUs per
  // replica -> one replica per 8-GPU server; 2 replicas -> 2 servers, 16 GPUs, the same
  // 16 GPUs rent pays for (cost_per_hour = replicas x tp x dp x pp x price).
  ServerLayout l = layout(2, shape(1, 1, 8), hgx());
  CHECK(l.gpus_per_replica == 8);
  CHECK(l.replicas_per_server == 1);
  CHECK(l.servers == 2);
  CHECK(l.gpus_used == 16);
  CHECK(size::cost_per_hour(2, shape(1, 1, 8), 2.0) == doctest::Approx(2 * 8 * 2.0));
  CHECK(static_cast<double>(l.gpus_used) * 2.0 == doctest::Approx(size::cost_per_hour(2, shape(1, 1, 8), 2.0)));
  // TP 2 x DP 4 x PP 2 = 16 GPUs: 8 TP groups of 2, four per server -> 2 servers per replica.
  l = layout(1, shape(2, 2, 4), hgx());
  CHECK(l.gpus_per_replica == 16);
  CHECK(l.servers_per_replica == 2);
}

TEST_CASE("servers per rack: the fewer of the power and the space budget") {
  SiteOptions site;
  site.rack_kw = 40;
  site.rack_units = 42;
  // 10.2 kW, 8U servers: floor(40/10.2) = 3 by power, floor(42/8) = 5 by space -> 3.
  CHECK(servers_per_rack(10200, 8, site) == 3);
  site.rack_kw = 100;  // power allows 9; space 5
  CHECK(servers_per_rack(10200, 8, site) == 5);
  site.rack_kw = 8;  // one server exceeds the rack
  CHECK(servers_per_rack(10200, 8, site) == 0);
}

TEST_CASE("break-even month: the first whole month where capex + opex so far <= rent so far") {
  // Saving 5,000 - 1,000 = 4,000 a month pays 100,000 back in exactly 25 months:
  // month 25: 100,000 + 25,000 = 125,000 <= 125,000; month 24: 124,000 > 120,000.
  CHECK(break_even_month(100000, 1000, 5000) == 25);
  CHECK(break_even_month(100001, 1000, 5000) == 26);
  CHECK(break_even_month(0, 1000, 5000) == 1);
  CHECK_FALSE(break_even_month(100000, 5000, 5000).has_value());  // renting is never dearer
  CHECK_FALSE(break_even_month(100000, 6000, 5000).has_value());
}

TEST_CASE("buy figures of 3 replicas of TP 2 on an HGX H100 server, worked by hand") {
  SiteOptions site;
  site.electricity_usd_per_kwh = 0.10;
  site.pue = 1.5;
  site.amortization_years = 4;
  site.utilization = 0.8;
  site.rack_kw = 40;
  site.rack_units = 42;
  site.network_fraction = 0.10;
  site.support_fraction_per_year = 0.05;
  site.rack_usd_per_month = 1000;
  BuyInputs in;
  in.replicas = 3;
  in.tp = 2;
  in.busy_fraction = 0.5;
  in.rate_per_s = 2;
  in.prompt_mean_tokens = 1000;
  in.output_mean_tokens = 250;
  in.price_per_gpu_hour_usd = 3.0;
  const BuyFigures b = buy_figures(in, hgx(), site);
  REQUIRE_FALSE(b.infeasible.has_value());
  CHECK(b.layout.servers == 1);
  CHECK(b.layout.gpus_used == 6);
  CHECK(b.layout.gpus_bought == 8);
  // Peak: host 4,600 W + 8 x 700 W = 10,200 W.
  CHECK(b.server_power_peak_w == doctest::Approx(10200));
  CHECK(b.power_peak_w == doctest::Approx(10200));
  // A used GPU averages 70 + (700 - 70) x 0.5 busy x 0.8 utilization = 322 W; the two
  // spare GPUs idle at 70 W: 4,600 + 6 x 322 + 2 x 70 = 6,672 W of IT load.
  CHECK(b.power_average_w == doctest::Approx(6672));
  CHECK(b.facility_power_average_w == doctest::Approx(10008));  // x PUE 1.5
  CHECK(b.energy_kwh_per_year == doctest::Approx(87670.08));    // 10.008 kW x 8,760 h
  CHECK(b.servers_per_rack == 3);
  CHECK(b.racks == 1);
  // Capex: 8 x 30,000 + 77,000 = 317,000, plus 10 % network = 348,700.
  CHECK(b.gpu_capex_usd == doctest::Approx(240000));
  CHECK(b.server_capex_usd == doctest::Approx(77000));
  CHECK(b.network_capex_usd == doctest::Approx(31700));
  CHECK(b.capex_usd == doctest::Approx(348700));
  // Opex: energy 87,670.08 kWh x $0.10 = 8,767.008; support 5 % of 317,000 = 15,850;
  // space 1 rack x 1,000 x 12 = 12,000 -> 36,617.008 a year.
  CHECK(b.energy_usd_per_year == doctest::Approx(8767.008));
  CHECK(b.support_usd_per_year == doctest::Approx(15850));
  CHECK(b.space_usd_per_year == doctest::Approx(12000));
  CHECK(b.opex_usd_per_year == doctest::Approx(36617.008));
  // TCO over 4 years: 348,700 + 4 x 36,617.008 = 495,168.032.
  CHECK(b.tco_usd == doctest::Approx(495168.032));
  // Requests over life: 2/s x 0.8 x 3,600 x 8,760 x 4 = 201,830,400 -> 201,830.4 M input
  // tokens (x 1,000) and 50,457.6 M output tokens (x 250).
  CHECK(b.input_tokens_over_life == doctest::Approx(201830400000.0));
  CHECK(b.output_tokens_over_life == doctest::Approx(50457600000.0));
  CHECK(b.usd_per_million_input_tokens == doctest::Approx(495168.032 / 201830.4));
  CHECK(b.usd_per_million_output_tokens == doctest::Approx(495168.032 / 50457.6));
  CHECK(b.usd_per_million_tokens == doctest::Approx(495168.032 / 252288.0));
  // Renting the 6 GPUs: 6 x $3 x 730 h = 13,140 a month, 630,720 over 48 months.
  REQUIRE(b.rent_usd_per_month.has_value());
  CHECK(*b.rent_usd_per_month == doctest::Approx(13140));
  CHECK(*b.rent_usd_over_life == doctest::Approx(630720));
  // Break-even: 348,700 / (13,140 - 36,617.008 / 12 = 10,088.58) = 34.56 -> month 35.
  CHECK(b.break_even_month == 35);
}

TEST_CASE("a server that exceeds the rack's power budget cannot be bought as laid out") {
  SiteOptions site;
  site.rack_kw = 8;  // below one 10.2 kW server
  BuyInputs in;
  in.replicas = 1;
  in.rate_per_s = 1;
  const BuyFigures b = buy_figures(in, hgx(), site);
  REQUIRE(b.infeasible.has_value());
  CHECK(b.infeasible->find("10.2 kW") != std::string::npos);
}

// By hand: one HGX server peaks at 4,600 + 8 x 700 = 10,200 W, so a 40 kW rack holds
// floor(40 / 10.2) = 3 of them (8U each: space for 5). Four replicas of TP 8 are four
// servers: ceil(4 / 3) = 2 racks, 2 x 0.72 = 1.44 m2 of floor, 4 x 10.2 = 40.8 kW at peak.
TEST_CASE("facility: a 40 kW rack holds three HGX servers, and the site's racks, power and cooling refuse a purchase") {
  SiteOptions site;
  site.rack_kw = 40;
  site.rack_units = 42;
  BuyInputs in;
  in.replicas = 4;
  in.tp = 8;
  in.rate_per_s = 1;
  BuyFigures b = buy_figures(in, hgx(), site);
  REQUIRE_FALSE(b.infeasible);
  CHECK(b.servers_per_rack == 3);
  CHECK(b.racks == 2);
  CHECK(b.floor_m2 == doctest::Approx(1.44));
  CHECK(b.power_peak_w == doctest::Approx(40800.0));
  site.site_racks = 1;
  b = buy_figures(in, hgx(), site);
  REQUIRE(b.infeasible);
  CHECK(*b.infeasible == "it needs 2 racks and the site has 1 (--site-racks)");
  site.site_racks.reset();
  site.site_kw = 40;
  b = buy_figures(in, hgx(), site);
  REQUIRE(b.infeasible);
  CHECK(*b.infeasible == "it peaks at 40.8 kW and the site supplies 40 kW (--site-kw)");
  site.site_kw = 40.8;
  CHECK_FALSE(buy_figures(in, hgx(), site).infeasible);
  // A liquid-cooled rack at an air-only site is refused for its cooling, before its
  // power is compared with the rack's.
  ServerSpec nvl = hgx();
  nvl.form = "NVL72 rack";
  nvl.gpus_per_server = 72;
  nvl.liquid_cooled = true;
  site = SiteOptions{};
  site.liquid_cooling = false;
  in.replicas = 1;
  b = buy_figures(in, nvl, site);
  REQUIRE(b.infeasible);
  CHECK(*b.infeasible == "the NVL72 rack is liquid-cooled and the site is air-cooled only (--cooling air)");
  // The catalog's GB200 NVL72 file says so.
  CHECK(io::load_server("gb200-nvl72").liquid_cooled);
  CHECK_FALSE(io::load_server("h100-sxm").liquid_cooled);
}

TEST_CASE("site options: a negative or out-of-range value names its option") {
  const auto message = [](SiteOptions s) {
    try {
      validate(s);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message(SiteOptions{}).empty());
  SiteOptions s;
  s.pue = 0.9;
  CHECK(message(s).find("--pue") != std::string::npos);
  s = {};
  s.electricity_usd_per_kwh = -0.1;
  CHECK(message(s).find("--electricity-usd-per-kwh") != std::string::npos);
  s = {};
  s.utilization = 0;
  CHECK(message(s).find("--utilization") != std::string::npos);
  s = {};
  s.amortization_years = -1;
  CHECK(message(s).find("--amortization-years") != std::string::npos);
  s = {};
  s.network_fraction = -0.5;
  CHECK(message(s).find("--network-fraction") != std::string::npos);
}

TEST_CASE("objectives rank options meeting the SLO by TCO, capex, rent or latency") {
  // Three options: A rents cheapest but costs most to buy; B has the lowest TCO; C the
  // lowest capex and the lowest latency. A fourth misses the SLO and stays last.
  SizeResult r;
  const auto option = [](int64_t index, double rent, double e2e) {
    Deployment o;
    o.candidate.index = index;
    o.meets_slo = true;
    o.cost_per_hour_usd = rent;
    o.operating.e2e_p99_s = e2e;
    o.replicas = 1;
    o.eval.max_rate_per_s = 1.0;
    return o;
  };
  r.options = {option(0, 1.0, 3.0), option(1, 2.0, 2.0), option(2, 3.0, 1.0), Deployment{}};
  r.options[3].candidate.index = 3;
  BuyResult buy;
  const auto figures = [](int64_t index, double tco, double capex) {
    BuyFigures b;
    b.candidate = index;
    b.tco_usd = tco;
    b.capex_usd = capex;
    return b;
  };
  buy.options = {figures(0, 900, 800), figures(1, 500, 400), figures(2, 600, 300)};
  const auto order = [&] {
    std::vector<int64_t> v;
    for (const auto& o : r.options) v.push_back(o.candidate.index);
    return v;
  };
  rank(r, buy, Objective::tco);
  CHECK(order() == std::vector<int64_t>{1, 2, 0, 3});
  CHECK(buy.options.front().candidate == 1);
  // The recommendation follows the objective: the lowest TCO, not the cheapest rent.
  REQUIRE(r.recommendations.size() == 1);
  CHECK(r.recommendations.front().candidate_index == 1);
  CHECK(r.recommendations.front().option == 0);
  rank(r, buy, Objective::capex);
  CHECK(order() == std::vector<int64_t>{2, 1, 0, 3});
  rank(r, buy, Objective::latency);
  CHECK(order() == std::vector<int64_t>{2, 1, 0, 3});
  rank(r, buy, Objective::rent);
  CHECK(order() == std::vector<int64_t>{0, 1, 2, 3});
  // An option that cannot be bought ranks after those that can, by TCO.
  buy.options[1].infeasible = "too big";  // candidate 1
  rank(r, buy, Objective::tco);
  CHECK(order() == std::vector<int64_t>{2, 0, 1, 3});
  CHECK(parse_objective("capex") == Objective::capex);
  CHECK_FALSE(parse_objective("cheapest").has_value());
}

TEST_CASE("busy fraction: the simulated one, else the replica's share of the load over its max rate") {
  Deployment o;
  o.replicas = 2;
  o.eval.max_rate_per_s = 5;
  // Planner evaluator (nothing simulated): 6 requests/s over 2 replicas = 3/s each, of a
  // max of 5/s -> 0.6.
  CHECK(busy_fraction(o, 6.0) == doctest::Approx(0.6));
  CHECK(busy_fraction(o, 20.0) == doctest::Approx(1.0));  // capped
  o.operating.busy_fraction = 0.4;                         // simulated
  CHECK(busy_fraction(o, 6.0) == doctest::Approx(0.4));
}

TEST_CASE("every purchase catalog file parses, names a catalog GPU and matches its file name") {
  const auto servers = io::catalog("servers");
  const auto gpus = io::catalog("gpus");
  REQUIRE(servers.size() >= 5);
  for (const auto& name : servers) {
    CAPTURE(name);
    const ServerSpec s = io::load_server(name);
    CHECK(s.gpu == name);
    CHECK(std::find(gpus.begin(), gpus.end(), name) != gpus.end());
    CHECK(s.gpu_idle_power_w < s.gpu_board_power_w);
  }
  // H100 SXM: 700 W TDP, 8 GPUs per HGX baseboard (H100 datasheet; HGX H100).
  const auto h100 = io::find_server("h100-sxm");
  REQUIRE(h100.has_value());
  CHECK(h100->gpu_board_power_w == 700);
  CHECK(h100->gpus_per_server == 8);
  CHECK(h100->whole_server);
  CHECK_FALSE(io::find_server("no-such-gpu").has_value());
}

TEST_CASE("a purchase file with a missing or negative figure is an InputError naming the key") {
  const std::string good =
      "gpu: x\nserver_form: s\ngpu_price_usd: 1000\ngpu_board_power_w: 300\ngpu_idle_power_w: 30\n"
      "gpus_per_server: 4\nserver_price_usd: 5000\nserver_power_w: 800\nserver_rack_units: 2\ncooling: air\n"
      "host_memory_bytes: 549755813888\n";
  CHECK(io::parse_server(good, "x.yaml").gpus_per_server == 4);
  CHECK_FALSE(io::parse_server(good, "x.yaml").liquid_cooled);
  const auto message = [](const std::string& text) {
    try {
      io::parse_server(text, "x.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string missing = good;
  missing.replace(missing.find("gpu_price_usd: 1000\n"), 20, "");
  CHECK(message(missing).find("gpu_price_usd") != std::string::npos);
  std::string negative = good;
  negative.replace(negative.find("server_power_w: 800"), 19, "server_power_w: -800");
  CHECK(message(negative).find("server_power_w") != std::string::npos);
  std::string huge = good;
  huge.replace(huge.find("gpus_per_server: 4"), 18, "gpus_per_server: 4611686018427387904");
  CHECK(message(huge).find("gpus_per_server") != std::string::npos);
  std::string idle_above = good;
  idle_above.replace(idle_above.find("gpu_idle_power_w: 30"), 20, "gpu_idle_power_w: 400");
  CHECK(message(idle_above).find("gpu_idle_power_w") != std::string::npos);
  // A server whose cooling is not stated could be planned into a site that cannot cool it.
  std::string no_cooling = good;
  no_cooling.replace(no_cooling.find("cooling: air\n"), 13, "");
  CHECK(message(no_cooling) == "x.yaml: key 'cooling': expected a string (the key is required), got nothing");
  std::string water = good;
  water.replace(water.find("cooling: air"), 12, "cooling: water");
  CHECK(message(water) == "x.yaml: key 'cooling': expected air or liquid (what carries the server's heat away), got 'water'");
}

TEST_CASE("the Buy section renders every figure with its unit, a chart, and sits before the assumptions") {
  SizeResult r;
  Deployment o;
  o.candidate.index = 7;
  o.model = "m";
  o.gpu = "h100-sxm";
  o.meets_slo = true;
  o.replicas = 3;
  o.gpus_total = 6;
  o.candidate.options.tp = 2;
  r.options = {o};
  BuyInputs in;
  in.replicas = 3;
  in.tp = 2;
  in.busy_fraction = 0.5;
  in.rate_per_s = 2;
  in.prompt_mean_tokens = 1000;
  in.output_mean_tokens = 250;
  in.price_per_gpu_hour_usd = 3.0;
  BuyResult buy;
  buy.objective = Objective::tco;
  buy.options = {buy_figures(in, hgx(), buy.site)};
  buy.options[0].candidate = 7;
  const auto j = reports::buy_json(r, buy);
  CHECK(j["objective"] == "tco");
  const auto& row = j["options"][0];
  CHECK(row["rank"] == 1);
  for (const char* key : {"capex_usd", "opex_usd_per_year", "tco_usd", "power_peak_w", "power_average_w",
                          "energy_kwh_per_year", "racks", "servers", "break_even_month",
                          "usd_per_million_input_tokens", "usd_per_million_output_tokens", "rent_usd_per_month"})
    CHECK_MESSAGE(row.contains(key), key);
  CHECK(row["gpus_bought"] == 8);
  const auto csv = reports::render(reports::buy_table_raw(r, buy), reports::TextFormat::csv);
  CHECK(csv.find("capex_usd") != std::string::npos);
  CHECK(csv.find("energy_kwh_per_year") != std::string::npos);
  const std::string section = reports::buy_html(r, buy);
  CHECK(section.find("Bill of materials") != std::string::npos);
  CHECK(section.find("Power and racks") != std::string::npos);
  CHECK(section.find("<svg") != std::string::npos);
  const std::string page =
      reports::with_section("<html><body><h2>Options</h2><h2>Assumptions</h2></body></html>", section);
  CHECK(page.find("Bill of materials") < page.find("<h2>Assumptions</h2>"));
  CHECK(page.find("<h2>Options</h2>") < page.find("Bill of materials"));
}

TEST_CASE("a host KV tier takes the server's DRAM: unbuyable beyond a GPU's share, stated per server") {
  // The DGX H100's 2 TiB (h100-sxm.yaml) over 8 GPUs: 2,199,023,255,552 / 8 = 274,877,906,944
  // bytes = 256 GiB per GPU. --kv-offloading-size 512 GiB on one engine of TP 2 is 256 GiB
  // per GPU: it fits; 3 replicas use 6 GPUs of one server, so the tier takes 6 x 256 GiB =
  // 1536 GiB of its 2048 GiB.
  ServerSpec s = hgx();
  s.host_memory_bytes = 2199023255552;
  s.file = "h100-sxm.yaml";
  BuyInputs in;
  in.replicas = 3;
  in.tp = 2;
  in.host_kv.bytes_per_gpu = 274877906944;
  in.host_kv.flag = "--kv-offloading-size";
  const BuyFigures fits = buy_figures(in, s, SiteOptions{});
  CHECK_FALSE(fits.infeasible);
  CHECK(fits.host_kv_bytes_per_server == 6 * 274877906944);
  // The same 512 GiB on TP 1 is 512 GiB per GPU, twice the share: this option cannot be
  // bought (the others of a search still rank), naming the flag, the file, its key and
  // both figures.
  in.tp = 1;
  in.host_kv.bytes_per_gpu = 2 * 274877906944;
  const BuyFigures over = buy_figures(in, s, SiteOptions{});
  REQUIRE(over.infeasible);
  CHECK(*over.infeasible ==
        "--kv-offloading-size 512.00 GiB per GPU (TP 1 x PP 1: 512.00 GiB per engine) is more than a GPU's share "
        "of the server's DRAM, 256.00 GiB (h100-sxm.yaml: host_memory_bytes 2048.00 GiB for 8 GPUs)");
  CHECK(over.capex_usd == 0.0);
}

TEST_CASE("the KV tiers' hardware: DRAM beyond the installed and NVMe drives are a capex line, or not priced") {
  // A DGX H100-like server: 2 TiB installed, upgradable (for this test) to 4 TiB, 8 GPUs.
  // Eight TP-1 replicas fill one server; --kv-offloading-size 384 GiB per GPU takes
  // 8 x 384 = 3072 GiB, 1024 GiB beyond the 2048 installed. A GPU's share of the 4 TiB is
  // 512 GiB >= 384, so it can be bought. Test prices (not quotes): $5/GiB, $100/TB.
  ServerSpec s = hgx();
  s.host_memory_bytes = 2199023255552;      // 2 TiB
  s.host_memory_max_bytes = 4398046511104;  // 4 TiB
  s.file = "dgx.yaml";
  BuyInputs in;
  in.replicas = 8;
  in.host_kv.bytes_per_gpu = 384LL << 30;
  in.host_kv.flag = "--kv-offloading-size";
  in.host_kv.disk_bytes_per_gpu = 2000000000000;  // --kv-disk-size: a 2 TB drive per GPU
  SiteOptions site;
  site.dram_usd_per_gib = 5;
  site.nvme_usd_per_tb = 100;
  const BuyFigures b = buy_figures(in, s, site);
  REQUIRE_FALSE(b.infeasible);
  CHECK(b.host_kv_bytes_per_server == 3072LL << 30);
  CHECK(b.dram_bought_bytes_per_server == 1024LL << 30);
  CHECK(b.dram_capex_usd == doctest::Approx(1024 * 5.0));  // one server
  CHECK(b.nvme_bytes == 16000000000000);                    // 8 drives x 2 TB
  REQUIRE(b.nvme_capex_usd);
  CHECK(*b.nvme_capex_usd == doctest::Approx(16 * 100.0));
  // (8 x 30,000 GPUs + 77,000 server + 5,120 DRAM + 1,600 NVMe) x 1.10 network = 356,092.
  CHECK(b.capex_usd == doctest::Approx(356092));
  // Support, 5 % of the same hardware a year: 323,720 x 0.05 = 16,186.
  CHECK(b.support_usd_per_year == doctest::Approx(16186));

  // No NVMe price: the drives are not priced and not in capex (never a $0 price).
  SiteOptions no_nvme = site;
  no_nvme.nvme_usd_per_tb.reset();
  const BuyFigures u = buy_figures(in, s, no_nvme);
  REQUIRE_FALSE(u.infeasible);
  CHECK_FALSE(u.nvme_capex_usd);
  CHECK(u.capex_usd == doctest::Approx((240000 + 77000 + 5120) * 1.10));

  // No DRAM price: the 1024 GiB cannot be bought, so the option cannot be, saying why.
  SiteOptions no_dram = site;
  no_dram.dram_usd_per_gib.reset();
  const BuyFigures n = buy_figures(in, s, no_dram);
  REQUIRE(n.infeasible);
  CHECK(*n.infeasible ==
        "--kv-offloading-size 384.00 GiB per GPU on 8 GPUs serving takes 3072.00 GiB of a server's DRAM, 1024.00 "
        "GiB beyond the 2048.00 GiB installed (dgx.yaml: host_memory_bytes); more DRAM is not priced: no "
        "dram_usd_per_gib in --prices");
  // Two replicas (2 GPUs serving) take 768 GiB: the installed DRAM holds it, nothing is
  // bought and no price is needed.
  BuyInputs two = in;
  two.replicas = 2;
  const BuyFigures few = buy_figures(two, s, no_dram);
  REQUIRE_FALSE(few.infeasible);
  CHECK(few.dram_bought_bytes_per_server == 0);

  // No maximum stated: the installed 2 TiB is the most, priced or not.
  ServerSpec fixed = s;
  fixed.host_memory_max_bytes = 0;
  REQUIRE(buy_figures(in, fixed, site).infeasible);

  // Beyond the maximum: 640 GiB per GPU > 4096 / 8 = 512 GiB.
  in.host_kv.bytes_per_gpu = 640LL << 30;
  const BuyFigures over = buy_figures(in, s, site);
  REQUIRE(over.infeasible);
  CHECK(*over.infeasible ==
        "--kv-offloading-size 640.00 GiB per GPU (TP 1 x PP 1: 640.00 GiB per engine) is more than a GPU's share "
        "of the server's DRAM, 512.00 GiB (dgx.yaml: host_memory_max_bytes 4096.00 GiB for 8 GPUs)");

  // Within the installed share: nothing bought, $0 being the true cost of no DIMMs.
  in.host_kv.bytes_per_gpu = 256LL << 30;
  const BuyFigures within = buy_figures(in, s, site);
  REQUIRE_FALSE(within.infeasible);
  CHECK(within.dram_bought_bytes_per_server == 0);
  CHECK(within.dram_capex_usd == 0.0);

  // A price set in code is checked as the card's is: never 0 or negative.
  SiteOptions zero = site;
  zero.dram_usd_per_gib = 0;
  CHECK_THROWS_AS(validate(zero), InputError);
}

TEST_CASE("a server file's host_memory_max_bytes is read") {
  const ServerSpec b200 = io::load_server("b200");
  CHECK(b200.host_memory_max_bytes == 2 * b200.host_memory_bytes);  // "2 TB ... (upgradable to 4 TB)"
}
