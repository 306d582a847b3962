#include "cli/buy_options.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "io/config_io.h"
#include "io/demand_io.h"
#include "io/hardware_io.h"
#include "io/yaml_util.h"

namespace kvplan::cli {

namespace {

//! A mapping whose keys are all among `known`: a misspelt key would otherwise drop a
//! price silently.
void only_keys(const YAML::Node& n, std::initializer_list<const char*> known, const std::string& where,
               const std::string& file) {
  for (const auto& kv : n) {
    const auto k = kv.first.as<std::string>();
    if (std::none_of(known.begin(), known.end(), [&](const char* x) { return k == x; })) {
      std::string list;
      for (const char* x : known) list += (list.empty() ? "" : ", ") + std::string(x);
      throw InputError(file, where + k, "one of the keys " + list, "an unknown key");
    }
  }
}

//! The number at n[key] in [lo, hi], the message naming where + key.
double block_num(const YAML::Node& n, const std::string& where, const char* key, double lo, double hi,
                 const std::string& file) {
  const YAML::Node v = n[key];
  const std::string expected = fmt::format("a number in [{:g}, {:g}] (the key is required)", lo, hi);
  if (!v.IsDefined() || !v.IsScalar()) throw InputError(file, where + key, expected, "nothing");
  try {
    return io::req_num(n, key, file, lo, hi);
  } catch (const InputError&) {
    throw InputError(file, where + key, expected, "'" + v.Scalar() + "'");
  }
}

}  // namespace

size::RentPrices parse_prices(const std::string& text, const std::string& file, bool rent) {
  const YAML::Node n = io::parse_yaml_mapping(text, file);
  only_keys(n, {"gpu", "provider", "source", "retrieved", "on_demand_usd_per_gpu_hour", "reserved", "spot",
                "dram_usd_per_gib", "nvme_usd_per_tb"},
           "", file);
  if (!rent) {
    // Without a demand plan nothing rents: a rent price given would be silently unused.
    std::string unused;
    for (const char* key : {"on_demand_usd_per_gpu_hour", "reserved", "spot"})
      if (n[key].IsDefined()) unused += (unused.empty() ? "" : ", ") + std::string(key);
    if (!unused.empty())
      throw InputError(file, unused,
                       "only the KV tiers' prices (dram_usd_per_gib, nvme_usd_per_tb) in a --prices card with --buy "
                       "and no --demand",
                       "rent prices --buy does not use (add --demand to plan with them)");
  }
  size::RentPrices p;
  p.file = file;
  p.gpu = io::req_str(n, "gpu", file);
  p.provider = io::req_str(n, "provider", file);
  // A price without its page and date cannot be checked or refreshed.
  io::req_str(n, "source", file);
  io::req_str(n, "retrieved", file);
  if (rent) p.on_demand_usd_per_gpu_hour = io::req_num(n, "on_demand_usd_per_gpu_hour", file, 1e-6, 1e4);
  if (const YAML::Node r = n["reserved"]; r.IsDefined()) {
    if (!r.IsSequence()) throw InputError(file, "reserved", "a list of {term_months, usd_per_gpu_hour}", "not a list");
    for (size_t i = 0; i < r.size(); ++i) {
      const YAML::Node t = r[i];
      const std::string where = fmt::format("reserved[{}].", i);
      if (!t.IsMap()) throw InputError(file, where, "a mapping {term_months, usd_per_gpu_hour}", "not a mapping");
      only_keys(t, {"term_months", "usd_per_gpu_hour"}, where, file);
      size::ReservedTerm term;
      const double months = block_num(t, where, "term_months", 1, 600, file);
      if (months != std::floor(months))
        throw InputError(file, where + "term_months", "a whole number of months", fmt::format("{:g}", months));
      term.term_months = static_cast<int64_t>(months);
      term.usd_per_gpu_hour = block_num(t, where, "usd_per_gpu_hour", 1e-6, 1e4, file);
      for (const auto& earlier : p.reserved)
        if (earlier.term_months == term.term_months)
          throw InputError(file, where + "term_months", "one price per term", fmt::format("{} twice", term.term_months));
      p.reserved.push_back(term);
    }
  }
  if (const YAML::Node s = n["spot"]; s.IsDefined()) {
    if (!s.IsMap()) throw InputError(file, "spot", "a mapping", "not a mapping");
    only_keys(s, {"usd_per_gpu_hour", "interruptions_per_month", "interruptions_source", "replace_minutes"}, "spot.",
              file);
    size::SpotTerms spot;
    spot.usd_per_gpu_hour = block_num(s, "spot.", "usd_per_gpu_hour", 1e-6, 1e4, file);
    // Reclaims per instance and month, at most one an hour.
    spot.interruptions_per_month = block_num(s, "spot.", "interruptions_per_month", 0, size::kHoursPerMonth, file);
    if (!io::opt_str(s, "interruptions_source", file))
      throw InputError(file, "spot.interruptions_source", "where the interruption rate comes from", "nothing");
    spot.replace_minutes = block_num(s, "spot.", "replace_minutes", 1e-3, 7 * 24 * 60, file);
    p.spot = spot;
  }
  // A price of 0 would present free hardware as priced.
  const auto price = [&](const char* key, double max) {
    const auto v = io::opt_num(n, key, file, 0, max);
    if (v && !(*v > 0)) throw InputError(file, key, "a price > 0", "0");
    return v;
  };
  p.dram_usd_per_gib = price("dram_usd_per_gib", 1e6);
  p.nvme_usd_per_tb = price("nvme_usd_per_tb", 1e7);
  return p;
}

void add_buy_options(po::options_description& desc) {
  const auto s = [] { return po::value<std::string>(); };
  desc.add_options()
      ("buy", po::bool_switch(), "also price buying the hardware: servers, racks, power, capex, opex, TCO, break-even")
      ("objective", s(), "rank by rent ($/h) | tco | capex | latency (default: tco with --buy, else rent)")
      ("electricity-usd-per-kwh", s(), "with --buy: electricity price (default 0.10)")
      ("pue", s(), "with --buy: the site's power usage effectiveness (default 1.58)")
      ("amortization-years", s(), "with --buy: years the hardware is paid off over (default 4)")
      ("utilization", s(), "with --buy: fraction of the time at the workload's rate (default 1)")
      ("rack-kw", s(), "with --buy: power budget per rack in kW (default 40)")
      ("rack-units", s(), "with --buy: usable height of a rack in U (default 42)")
      ("network-fraction", s(), "with --buy: network and installation, fraction of hardware price (default 0.10)")
      ("support-fraction-per-year", s(), "with --buy: support per year, fraction of hardware price (default 0.05)")
      ("rack-usd-per-month", s(), "with --buy: space per rack and month (default 0: owned)")
      ("cooling", s(), "with --buy: the site's cooling, air (air-cooled servers only) | liquid (both; default)")
      ("site-kw", s(), "with --buy: IT power the site supplies in kW; a purchase peaking above it is refused")
      ("site-racks", s(), "with --buy: racks the site has; a purchase needing more is refused")
      ("rack-floor-m2", s(), "with --buy: floor one rack takes in m2 (default 0.72: 600 x 1,200 mm)")
      ("servers", s(), "with --buy: purchase files (your quotes) overriding configs/servers per GPU, comma-separated")
      ("demand", s(), "plan the fleet over months from FILE.csv (hour,model,requests_per_s): servers bought for the "
                      "base, GPUs rented for the peaks (site options as --buy's)")
      ("horizon-months", s(), "with --demand: months planned (default 12)")
      ("growth-per-month", s(), "with --demand: demand growth per month, compounded (default 0; 0.05 = +5 %)")
      ("purchase-lead-months", s(), "with --demand: months from order to servers serving, rented meanwhile (default 0)")
      ("prices", s(), "with --demand: rent price files (one provider's on-demand, reserved terms and spot per GPU; "
                      "docs/formats.md \"Rent prices\"), comma-separated; with --buy alone: cards giving only the "
                      "KV tiers' DRAM and NVMe prices")
      ("availability", s(), "plan spare replicas: the replicas the rate needs are up this share of the time "
                            "(e.g. 0.999); needs --repair-hours")
      ("repair-hours", s(), "with --availability: hours a failed replica is out of service (no default)")
      ("gpu-failures-per-year", s(), "with --availability: failures per GPU-year, all causes (default 0.173: "
                                     "Llama 3's 419 interruptions in 54 days on 16,384 H100s)");
}

BuyRequest parse_buy_options(const po::variables_map& vm) {
  BuyRequest req;
  req.buy = vm.count("buy") && vm["buy"].as<bool>();
  auto& site = req.site;
  const auto num = [&](const char* name, double& out, double min_value, double max_value) {
    if (vm.count(name)) out = parse_num_option(vm[name].as<std::string>(), std::string("--") + name, min_value, max_value);
  };
  num("electricity-usd-per-kwh", site.electricity_usd_per_kwh, 0, 1e3);
  num("pue", site.pue, 1, 10);
  num("amortization-years", site.amortization_years, 1.0 / 12, 30);
  num("utilization", site.utilization, 1e-6, 1);
  num("rack-kw", site.rack_kw, 1e-3, 1e4);
  num("network-fraction", site.network_fraction, 0, 10);
  num("support-fraction-per-year", site.support_fraction_per_year, 0, 10);
  num("rack-usd-per-month", site.rack_usd_per_month, 0, 1e9);
  num("rack-floor-m2", site.rack_floor_m2, 1e-3, 1e3);
  if (vm.count("rack-units")) site.rack_units = parse_int_option(vm["rack-units"].as<std::string>(), "--rack-units");
  if (vm.count("cooling")) {
    const std::string c = vm["cooling"].as<std::string>();
    if (c != "air" && c != "liquid")
      throw InputError("command line", "--cooling", "air (air-cooled servers only) or liquid (both)", "'" + c + "'");
    site.liquid_cooling = c == "liquid";
  }
  if (vm.count("site-kw")) site.site_kw = parse_num_option(vm["site-kw"].as<std::string>(), "--site-kw", 1e-3, 1e7);
  if (vm.count("site-racks"))
    site.site_racks = parse_int_option(vm["site-racks"].as<std::string>(), "--site-racks");
  size::validate(site);
  if (vm.count("servers"))
    for (const auto& name : split_list(vm["servers"].as<std::string>(), "--servers"))
    {
      ServerSpec spec = io::load_server(name);
      for (const auto& earlier : req.servers)
        if (earlier.gpu == spec.gpu)
          throw InputError("command line", "--servers", "one purchase file per GPU",
                           "two for '" + spec.gpu + "' (" + earlier.file + ", " + spec.file + ")");
      req.servers.push_back(std::move(spec));
    }
  const bool site_given = vm.count("electricity-usd-per-kwh") || vm.count("pue") || vm.count("amortization-years") ||
                          vm.count("utilization") || vm.count("rack-kw") || vm.count("rack-units") ||
                          vm.count("network-fraction") || vm.count("support-fraction-per-year") ||
                          vm.count("rack-usd-per-month") || vm.count("servers") || vm.count("cooling") ||
                          vm.count("site-kw") || vm.count("site-racks") || vm.count("rack-floor-m2");
  if (vm.count("objective")) {
    const std::string o = vm["objective"].as<std::string>();
    const auto parsed = size::parse_objective(o);
    if (!parsed) throw InputError("command line", "--objective", size::kObjectiveNames.expected(), "'" + o + "'");
    req.objective = *parsed;
    // Ranking by what buying costs needs the buy figures.
    if (req.objective == size::Objective::tco || req.objective == size::Objective::capex) req.buy = true;
  } else if (req.buy) {
    req.objective = size::Objective::tco;
  }
  // With --demand a card prices renting and the KV tiers; with --buy alone, the tiers only.
  const bool rent = vm.count("demand") > 0;
  if (vm.count("prices") && !rent && !req.buy)
    throw InputError("command line", "--prices", "--demand FILE.csv or --buy as well", "--prices alone");
  if (vm.count("prices"))
    for (const auto& name : split_list(vm["prices"].as<std::string>(), "--prices")) {
      const std::string file = io::resolve("prices", name).string();
      size::RentPrices p = parse_prices(io::read_file(file), file, rent);
      for (const auto& earlier : req.prices)
        if (earlier.gpu == p.gpu)
          throw InputError("command line", "--prices", "one price file per GPU",
                           "two for '" + p.gpu + "' (" + earlier.file + ", " + p.file + ")");
      // The tiers' hardware is priced once for the whole purchase: cards that disagree
      // would price the same DIMMs twice over.
      const auto tier_price = [&](const std::optional<double>& v, std::optional<double>& site_v, const char* key) {
        if (!v) return;
        if (site_v && *site_v != *v)
          throw InputError(file, key, "the same price as " + req.site.tier_prices_file, fmt::format("{:g}", *v));
        site_v = v;
        req.site.tier_prices_file = file;
      };
      tier_price(p.dram_usd_per_gib, req.site.dram_usd_per_gib, "dram_usd_per_gib");
      tier_price(p.nvme_usd_per_tb, req.site.nvme_usd_per_tb, "nvme_usd_per_tb");
      req.prices.push_back(std::move(p));
    }
  if (vm.count("demand")) {
    size::DemandOptions d;
    d.curve = io::load_demand(vm["demand"].as<std::string>());
    if (vm.count("horizon-months"))
      d.horizon_months = parse_int_option(vm["horizon-months"].as<std::string>(), "--horizon-months");
    if (vm.count("growth-per-month"))
      d.growth_per_month = parse_num_option(vm["growth-per-month"].as<std::string>(), "--growth-per-month", -0.99, 10);
    if (vm.count("purchase-lead-months"))
      d.purchase_lead_months =
          parse_int_option(vm["purchase-lead-months"].as<std::string>(), "--purchase-lead-months", 0);
    d.prices = req.prices;
    size::validate(d);
    req.demand = std::move(d);
  } else {
    for (const char* name : {"horizon-months", "growth-per-month", "purchase-lead-months"})
      if (vm.count(name))
        throw InputError("command line", std::string("--") + name, "--demand FILE.csv as well",
                         std::string("--") + name + " alone");
  }
  if (vm.count("availability")) {
    size::FailureOptions f;
    f.availability = parse_num_option(vm["availability"].as<std::string>(), "--availability", 0, 1);
    if (!vm.count("repair-hours"))
      throw InputError("command line", "--repair-hours",
                       "the hours a failed replica is out of service with --availability (no default: it is your site's)",
                       "nothing");
    f.repair_hours = parse_num_option(vm["repair-hours"].as<std::string>(), "--repair-hours", 1e-6, 1e5);
    if (vm.count("gpu-failures-per-year"))
      f.gpu_failures_per_year =
          parse_num_option(vm["gpu-failures-per-year"].as<std::string>(), "--gpu-failures-per-year", 0, 1e3);
    size::validate(f);
    req.failures = f;
  } else {
    for (const char* name : {"repair-hours", "gpu-failures-per-year"})
      if (vm.count(name))
        throw InputError("command line", std::string("--") + name, "--availability as well",
                         std::string("--") + name + " alone");
  }
  if (site_given && !req.buy && !req.demand)
    throw InputError("command line", "--buy", "--buy, --demand or --objective tco|capex with the site options",
                     "site options alone");
  return req;
}

void set_buy_options(const BuyRequest& req, const std::vector<GpuSpec>& gpus, size::SizeOptions& opt) {
  opt.objective = req.objective;
  opt.failures = req.failures;
  if (!req.buy && !req.demand) return;
  size::BuyOptions buy;
  buy.site = req.site;
  buy.servers = req.servers;
  for (const GpuSpec& g : gpus) {
    const bool given =
        std::any_of(buy.servers.begin(), buy.servers.end(), [&](const ServerSpec& s) { return s.gpu == g.name; });
    if (!given)
      if (auto s = io::find_server(g.name)) buy.servers.push_back(std::move(*s));
  }
  for (const auto& p : req.prices)
    if (std::none_of(gpus.begin(), gpus.end(), [&](const GpuSpec& g) { return g.name == p.gpu; }))
      throw InputError(p.file, "gpu", "a GPU searched (--gpus)", "'" + p.gpu + "'");
  if (req.demand) {
    opt.demand = req.demand;
    opt.demand->buy = buy;
  }
  if (req.buy) opt.buy = std::move(buy);
}

}  // namespace kvplan::cli
