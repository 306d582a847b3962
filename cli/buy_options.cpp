#include "cli/buy_options.h"

#include <algorithm>
#include <string>

#include "io/demand_io.h"
#include "io/hardware_io.h"

namespace kvplan::cli {

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
      ("servers", s(), "with --buy: purchase files (your quotes) overriding configs/servers per GPU, comma-separated")
      ("demand", s(), "plan the fleet over months from FILE.csv (hour,model,requests_per_s): servers bought for the "
                      "base, GPUs rented for the peaks (site options as --buy's)")
      ("horizon-months", s(), "with --demand: months planned (default 12)")
      ("growth-per-month", s(), "with --demand: demand growth per month, compounded (default 0; 0.05 = +5 %)")
      ("purchase-lead-months", s(), "with --demand: months from order to servers serving, rented meanwhile (default 0)")
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
  if (vm.count("rack-units")) site.rack_units = parse_int_option(vm["rack-units"].as<std::string>(), "--rack-units");
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
                          vm.count("rack-usd-per-month") || vm.count("servers");
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
  if (req.demand) {
    opt.demand = req.demand;
    opt.demand->buy = buy;
  }
  if (req.buy) opt.buy = std::move(buy);
}

}  // namespace kvplan::cli
