// kvplan size: buying instead of renting. Pure arithmetic from the sizing
// result, the purchase catalog (configs/servers) and the site's options: GPUs -> servers
// -> racks, peak and average power from the simulated busy time, capital cost, yearly
// running cost, total cost of ownership over the amortization period, cost per million
// tokens over the hardware's life, and the month where buying beats renting.
//
// Layout rule: a tensor-parallel group exchanges an all-reduce every layer, so it stays
// on one server's GPU fabric (NVLink/NVSwitch, Infinity Fabric or PCIe) unless the
// catalog says the fabric spans servers (tp_across_servers, e.g. an NVLink Switch
// system). Pipeline stages pass only activations between them, so a replica whose
// TP x PP exceeds one server splits at stage boundaries: floor(GPUs per server / TP)
// stages per server. Replicas that fit in one server are packed floor(GPUs per server /
// (TP x PP)) to a server and never straddle two.
//
// The result types are plain values, so reports/ can render them without linking this
// library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/hardware.h"
#include "planner/names.h"
#include "planner/types.h"

namespace kvplan::size {

inline constexpr double kHoursPerYear = 8760;  //!< 365 x 24; leap days ignored (energy, rent, repairs)

struct Deployment;      // size/size.h, which includes this header: the search prices purchases
struct SizeResult;  // with the options below and ranks by the objective it is given

//! What the user's site costs and allows. Every default is printed in the report's
//! assumptions; each has a command-line option (cli/cmd_size.cpp).
struct SiteOptions {
  //! US industrial average retail price 2024, about 8 cents/kWh (EIA Electric Power
  //! Monthly table 5.6.A); 0.10 leaves room for demand charges. Override with your tariff.
  double electricity_usd_per_kwh = 0.10;
  //! Uptime Institute Global Data Center Survey: industry average PUE 1.58 (2023),
  //! 1.55-1.59 since 2020; new large facilities reach 1.3 or better.
  double pue = 1.58;
  //! A common straight-line life for accelerator servers; hyperscalers book servers
  //! over 5-6 years, which GPU generations rarely last at full value.
  double amortization_years = 4;
  //! Fraction of the time the workload arrives at its full rate; the rest of the time
  //! the GPUs idle (they are bought, so they draw idle power and still cost).
  double utilization = 1.0;
  //! Power one rack may draw (IT load at the PDU). 40 kW is a high-density air-cooled
  //! rack: three 10.2 kW 8-GPU HGX H100 servers (DGX H100 datasheet; four would need
  //! 40.8 kW); older enterprise racks give 8-15 kW.
  double rack_kw = 40;
  int64_t rack_units = 42;  //!< usable height of a rack (a standard 42U rack)
  //! Network (switches, optics, cables) and installation, as a fraction of the GPU and
  //! server price, paid up front. kvplan's assumption: no public figure; override it.
  double network_fraction = 0.10;
  //! Support contracts, spares and administration per year, as a fraction of the GPU
  //! and server price. kvplan's assumption; override it.
  double support_fraction_per_year = 0.05;
  //! Colocation or floor space per rack and month; 0 = the site is already owned.
  double rack_usd_per_month = 0;
  //! The site can take liquid-cooled servers (cold plates, coolant distribution); false:
  //! air only, and a server with `cooling: liquid` (an NVL72 rack) cannot be placed.
  bool liquid_cooling = true;
  //! What the site supplies, when stated: IT power in kW (at the servers' peak) and racks.
  //! A purchase above either cannot be placed.
  std::optional<double> site_kw;
  std::optional<int64_t> site_racks;
  //! Floor taken by one rack: 0.6 m x 1.2 m, the footprint of a standard 42U server rack
  //! (APC NetShelter SX AR3300, 600 mm x 1,200 mm), aisles not included.
  double rack_floor_m2 = 0.72;
  //! Prices of the KV tiers' hardware, from the --prices cards (dram_usd_per_gib,
  //! nvme_usd_per_tb); none: DRAM beyond the installed cannot be bought and the disk tier
  //! is not priced. No default: memory and drive prices move month to month.
  std::optional<double> dram_usd_per_gib, nvme_usd_per_tb;
  std::string tier_prices_file;  //!< the card they came from, for the report
};

//! Why a purchase cannot be placed at the site (cooling, the site's power or racks), or
//! empty when it can: `racks` racks of servers drawing `peak_w` at most.
std::optional<std::string> site_refusal(const ServerSpec& s, int64_t racks, double peak_w, const SiteOptions& site);

//! Throws InputError naming the command-line option of the first bad value.
void validate(const SiteOptions& s);

//! What the ranking of `kvplan size` follows.
enum class Objective { rent, tco, capex, latency };
inline constexpr NameTable<Objective, 4> kObjectiveNames{{{
    {"rent", Objective::rent},
    {"tco", Objective::tco},
    {"capex", Objective::capex},
    {"latency", Objective::latency},
}}};
inline std::optional<Objective> parse_objective(std::string_view s) { return kObjectiveNames.parse(s); }
inline std::string_view to_string(Objective o) { return kObjectiveNames.name(o); }

//! What the search needs to price buying the hardware (SizeOptions::buy).
struct BuyOptions {
  SiteOptions site;
  //! Purchase data, matched to the searched GPUs by name (configs/servers, or the user's).
  std::vector<ServerSpec> servers;
};

//! How a deployment's replicas map onto servers (see the layout rule above).
struct ServerLayout {
  std::optional<std::string> infeasible;  //!< why it cannot be built, or empty
  int64_t gpus_per_replica = 0;           //!< TP x DP x PP (ServingOptions::gpus_per_replica)
  int64_t replicas_per_server = 0;        //!< 0 when a replica spans servers
  int64_t servers_per_replica = 0;        //!< 1 when replicas share servers
  int64_t servers = 0;
  int64_t gpus_used = 0;                  //!< replicas x GPUs per replica
  int64_t gpus_bought = 0;                //!< whole servers round this up
};
//! A replica is dp x pp TP groups of tp GPUs; a TP group never spans servers unless the
//! fabric does (tp_across_servers).
ServerLayout layout(int64_t replicas, const ServingOptions& o, const ServerSpec& s);

//! Servers one rack holds: the fewer of floor(rack power / server peak power) and
//! floor(rack units / server units); 0 when one server exceeds the rack.
int64_t servers_per_rack(double server_peak_w, int64_t server_rack_units, const SiteOptions& site);

//! The first whole month m >= 1 where capex + opex_per_month x m <= rent_per_month x m,
//! or nullopt when renting costs no more than running bought hardware.
std::optional<int64_t> break_even_month(double capex_usd, double opex_usd_per_month, double rent_usd_per_month);

//! The host KV tier an option's engines keep in their servers' DRAM: its bytes per GPU
//! (0: none) and the flag that sized it, for the message when the DRAM cannot hold it.
struct HostKvTierUse {
  int64_t bytes_per_gpu = 0;
  std::string flag;
  int64_t disk_bytes_per_gpu = 0;  //!< the disk tier below it (--kv-disk-size), 0: none
};
//! The tier of a priced option (its plan's host_tier), the one source --buy and --demand
//! read it from.
HostKvTierUse host_kv_tier_use(const Deployment& o);

//! What the arithmetic needs about one option, apart from its server and the site.
struct BuyInputs {
  int64_t replicas = 0, tp = 1, dp = 1, pp = 1;  //!< dp: data-parallel attention ranks (ServingOptions::dp)
  double busy_fraction = 0;              //!< of one replica's time at its share of the load
  double rate_per_s = 0;                 //!< the workload's rate (all replicas)
  double prompt_mean_tokens = 0, output_mean_tokens = 0;
  std::optional<double> price_per_gpu_hour_usd;  //!< the GPU catalog's rent price
  HostKvTierUse host_kv;
};

//! Every figure of one option bought; units in the names, as in the JSON and CSV.
struct BuyFigures {
  int64_t candidate = -1;                //!< Candidate::index of the option
  ServerSpec server;
  std::optional<std::string> infeasible; //!< why it cannot be bought as laid out
  ServerLayout layout;
  int64_t servers_per_rack = 0, racks = 0;
  double floor_m2 = 0;                   //!< racks x the rack footprint
  double busy_fraction = 0;
  bool busy_fraction_simulated = false;  //!< false: estimated as load / max rate
  double server_power_peak_w = 0;        //!< one server, all its GPUs at board power
  double power_peak_w = 0;               //!< IT load, every GPU at board power
  double power_average_w = 0;            //!< IT load, busy vs idle from the simulation
  double facility_power_average_w = 0;   //!< x PUE
  double energy_kwh_per_year = 0;        //!< facility energy
  double gpu_capex_usd = 0, server_capex_usd = 0, network_capex_usd = 0, capex_usd = 0;
  double energy_usd_per_year = 0, support_usd_per_year = 0, space_usd_per_year = 0, opex_usd_per_year = 0;
  double amortization_years = 0;
  double tco_usd = 0;                    //!< capex + opex x years
  std::optional<double> rent_usd_per_month;  //!< the same GPUs rented around the clock
  std::optional<double> rent_usd_over_life;
  std::optional<int64_t> break_even_month;
  double input_tokens_over_life = 0, output_tokens_over_life = 0;
  double usd_per_million_input_tokens = 0;   //!< TCO over input tokens alone
  double usd_per_million_output_tokens = 0;  //!< TCO over output tokens alone
  double usd_per_million_tokens = 0;         //!< TCO over input + output tokens
  //! DRAM the host KV tier takes on one server: its bytes per GPU x the GPUs serving there
  //! (0: no tier). The server's own DRAM is server.host_memory_bytes.
  int64_t host_kv_bytes_per_server = 0;
  //! DRAM bought beyond the installed for the tier: host_kv_bytes_per_server minus
  //! host_memory_bytes (0 when the installed DRAM holds it), at site.dram_usd_per_gib.
  int64_t dram_bought_bytes_per_server = 0;
  double dram_capex_usd = 0;
  //! The disk tier's drives: one per GPU serving, each the tier's bytes per GPU, at
  //! site.nvme_usd_per_tb; nullopt while the card gives no NVMe price (not priced, and
  //! not in capex).
  int64_t nvme_bytes = 0;
  std::optional<double> nvme_capex_usd;
};
//! A host KV tier beyond a GPU's share of the most DRAM the server takes
//! (host_memory_max_bytes, else the installed) makes the option infeasible (naming
//! in.host_kv.flag), as a rack limit does; so does one whose GPUs serving on a server
//! need more than the installed DRAM while site.dram_usd_per_gib is not given.
BuyFigures buy_figures(const BuyInputs& in, const ServerSpec& s, const SiteOptions& site);

struct BuyResult {
  SiteOptions site;
  Objective objective = Objective::rent;
  std::vector<BuyFigures> options;       //!< options meeting the SLO, in ranked order
  std::vector<std::string> gpus_without_data;  //!< GPUs with no configs/servers entry
  //! The figures of the option with this candidate index, or nullptr.
  const BuyFigures* find(int64_t candidate) const {
    for (const auto& b : options)
      if (b.candidate == candidate) return &b;
    return nullptr;
  }
};

//! One replica's busy fraction at its operating point: the simulated one when there
//! is one, else its share of the load over its max rate (capped at 1).
double busy_fraction(const Deployment& o, double rate_per_s);

//! Buy figures for every option of `r` meeting the SLO whose GPU has purchase data in
//! `servers` (matched by GPU name).
BuyResult plan_purchase(const SizeResult& r, const std::vector<ServerSpec>& servers, const SiteOptions& site);

//! Re-ranks the options meeting the SLO by `o` (stable: ties keep the search's order;
//! options that cannot be bought or priced follow those that can), the others after
//! them as before, orders `buy.options` the same way and recommends again (recommend()
//! in size/size.h) from the new order. run_search calls it with SizeOptions::objective.
void rank(SizeResult& r, BuyResult& buy, Objective o);

}  // namespace kvplan::size
