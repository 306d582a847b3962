#include "size/tco.h"

#include "planner/units.h"
#include "size/size.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace kvplan::size {

namespace {

constexpr double kMonthsPerYear = 12;
constexpr double kSecondsPerHour = 3600;
constexpr double kBytesPerTB = 1e12;  // drives are sold in decimal TB

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void require(bool ok, const std::string& option, const std::string& expected, double got) {
  if (!ok) throw InputError("command line", option, expected, fmt::format("{}", got));
}

}  // namespace

void validate(const SiteOptions& s) {
  const auto finite = [](double v) { return std::isfinite(v); };
  require(finite(s.electricity_usd_per_kwh) && s.electricity_usd_per_kwh >= 0, "--electricity-usd-per-kwh",
          "a price >= 0", s.electricity_usd_per_kwh);
  require(finite(s.pue) && s.pue >= 1, "--pue", "a power usage effectiveness >= 1", s.pue);
  require(finite(s.amortization_years) && s.amortization_years > 0 && s.amortization_years <= 30,
          "--amortization-years", "years in (0, 30]", s.amortization_years);
  require(finite(s.utilization) && s.utilization > 0 && s.utilization <= 1, "--utilization", "a fraction in (0, 1]",
          s.utilization);
  require(finite(s.rack_kw) && s.rack_kw > 0, "--rack-kw", "kilowatts > 0", s.rack_kw);
  require(s.rack_units >= 1, "--rack-units", "an integer >= 1", static_cast<double>(s.rack_units));
  require(finite(s.network_fraction) && s.network_fraction >= 0, "--network-fraction", "a fraction >= 0",
          s.network_fraction);
  require(finite(s.support_fraction_per_year) && s.support_fraction_per_year >= 0, "--support-fraction-per-year",
          "a fraction >= 0", s.support_fraction_per_year);
  require(finite(s.rack_usd_per_month) && s.rack_usd_per_month >= 0, "--rack-usd-per-month", "a price >= 0",
          s.rack_usd_per_month);
  if (s.site_kw) require(finite(*s.site_kw) && *s.site_kw > 0, "--site-kw", "kilowatts > 0", *s.site_kw);
  if (s.site_racks)
    require(*s.site_racks >= 1, "--site-racks", "an integer >= 1", static_cast<double>(*s.site_racks));
  require(finite(s.rack_floor_m2) && s.rack_floor_m2 > 0, "--rack-floor-m2", "square metres > 0", s.rack_floor_m2);
  if (s.dram_usd_per_gib)
    require(finite(*s.dram_usd_per_gib) && *s.dram_usd_per_gib > 0, "--prices dram_usd_per_gib", "a price > 0",
            *s.dram_usd_per_gib);
  if (s.nvme_usd_per_tb)
    require(finite(*s.nvme_usd_per_tb) && *s.nvme_usd_per_tb > 0, "--prices nvme_usd_per_tb", "a price > 0",
            *s.nvme_usd_per_tb);
}

std::optional<std::string> site_refusal(const ServerSpec& s, int64_t racks, double peak_w, const SiteOptions& site) {
  if (s.liquid_cooled && !site.liquid_cooling)
    return fmt::format("the {} is liquid-cooled and the site is air-cooled only (--cooling air)", s.form);
  if (site.site_racks && racks > *site.site_racks)
    return fmt::format("it needs {} racks and the site has {} (--site-racks)", racks, *site.site_racks);
  if (site.site_kw && peak_w > *site.site_kw * 1000.0)
    return fmt::format("it peaks at {:.1f} kW and the site supplies {:g} kW (--site-kw)", peak_w / 1000.0,
                       *site.site_kw);
  return std::nullopt;
}

ServerLayout layout(int64_t replicas, const ServingOptions& o, const ServerSpec& s) {
  ServerLayout l;
  const int64_t tp = o.tp;
  if (replicas < 1 || tp < 1 || o.dp < 1 || o.pp < 1 || s.gpus_per_server < 1)
    throw std::invalid_argument("layout: replicas, TP, DP, PP and GPUs per server must be >= 1");
  const int64_t n = s.gpus_per_server;
  l.gpus_per_replica = o.gpus_per_replica();
  l.gpus_used = replicas * l.gpus_per_replica;
  if (tp > n && !s.tp_across_servers) {
    l.infeasible = fmt::format("TP {} needs {} GPUs on one fabric; a {} holds {} and its fabric does not span servers",
                               tp, tp, s.form, n);
    return l;
  }
  if (l.gpus_per_replica <= n) {
    l.replicas_per_server = n / l.gpus_per_replica;
    l.servers_per_replica = 1;
    l.servers = ceil_div(replicas, l.replicas_per_server);
  } else {
    // A fabric that spans servers takes the replica's GPUs in any grouping; otherwise
    // whole TP groups (dp x pp of them: attention ranks and pipeline stages) fill each server.
    l.servers_per_replica = s.tp_across_servers ? ceil_div(l.gpus_per_replica, n) : ceil_div(o.dp * o.pp, n / tp);
    l.servers = replicas * l.servers_per_replica;
  }
  l.gpus_bought = s.whole_server ? l.servers * n : l.gpus_used;
  return l;
}

int64_t servers_per_rack(double server_peak_w, int64_t server_rack_units, const SiteOptions& site) {
  const auto by_power = static_cast<int64_t>(std::floor(site.rack_kw * 1000.0 / server_peak_w));
  const int64_t by_space = site.rack_units / std::max<int64_t>(server_rack_units, 1);
  return std::max<int64_t>(0, std::min(by_power, by_space));
}

std::optional<int64_t> break_even_month(double capex_usd, double opex_usd_per_month, double rent_usd_per_month) {
  const double saving_per_month = rent_usd_per_month - opex_usd_per_month;
  if (!(saving_per_month > 0)) return std::nullopt;
  const double m = std::ceil(capex_usd / saving_per_month);
  if (!(m < 1e12)) return std::nullopt;  // effectively never
  return std::max<int64_t>(1, static_cast<int64_t>(m));
}

BuyFigures buy_figures(const BuyInputs& in, const ServerSpec& s, const SiteOptions& site) {
  BuyFigures b;
  b.server = s;
  b.amortization_years = site.amortization_years;
  ServingOptions shape;
  shape.tp = in.tp;
  shape.dp = in.dp;
  shape.pp = in.pp;
  b.layout = layout(in.replicas, shape, s);
  if (b.layout.infeasible) {
    b.infeasible = b.layout.infeasible;
    return b;
  }
  const ServerLayout& l = b.layout;
  b.busy_fraction = std::clamp(in.busy_fraction, 0.0, 1.0);

  // The host KV tier lives in the server's DRAM. Each engine's share is its GPUs' share of
  // the server (an engine of tp x pp GPUs on an 8-GPU server gets tp x pp / 8 of it), and
  // the tier's bytes per engine are its bytes per GPU x tp x pp, so the test is per GPU,
  // against the most DRAM the server takes. A tier beyond the share makes this option
  // unbuyable, as a rack limit does; the search's other layouts (a larger TP spreads the
  // same tier over more GPUs) are still ranked. What the GPUs serving on a server take
  // beyond its installed DRAM is bought at the card's price per GiB (DIMM sizes not rounded
  // to); without a price the option cannot be bought, as its capex would leave out memory
  // it needs.
  if (in.host_kv.bytes_per_gpu > 0) {
    const bool upgradable = s.host_memory_max_bytes > s.host_memory_bytes;
    const int64_t most_bytes = upgradable ? s.host_memory_max_bytes : s.host_memory_bytes;
    const int64_t share_bytes = most_bytes / s.gpus_per_server;
    const auto gib = [](int64_t bytes) { return static_cast<double>(bytes) / kBytesPerGiB; };
    if (in.host_kv.bytes_per_gpu > share_bytes) {
      b.infeasible = fmt::format(
          "{} {:.2f} GiB per GPU (TP {} x PP {}: {:.2f} GiB per engine) is more than a GPU's share of the "
          "server's DRAM, {:.2f} GiB ({}: {} {:.2f} GiB for {} GPUs)",
          in.host_kv.flag, gib(in.host_kv.bytes_per_gpu), in.tp, in.pp, gib(in.host_kv.bytes_per_gpu * in.tp * in.pp),
          gib(share_bytes), s.file, upgradable ? "host_memory_max_bytes" : "host_memory_bytes", gib(most_bytes),
          s.gpus_per_server);
      return b;
    }
    // The fullest server sets the DIMMs every server gets.
    const int64_t serving = ceil_div(l.gpus_used, l.servers);
    const int64_t tier_bytes = in.host_kv.bytes_per_gpu * serving;
    const int64_t extra_bytes = std::max<int64_t>(0, tier_bytes - s.host_memory_bytes);
    if (extra_bytes > 0 && !site.dram_usd_per_gib) {
      b.infeasible = fmt::format(
          "{} {:.2f} GiB per GPU on {} GPUs serving takes {:.2f} GiB of a server's DRAM, {:.2f} GiB beyond the "
          "{:.2f} GiB installed ({}: host_memory_bytes); more DRAM is not priced: no dram_usd_per_gib in --prices",
          in.host_kv.flag, gib(in.host_kv.bytes_per_gpu), serving, gib(tier_bytes), gib(extra_bytes),
          gib(s.host_memory_bytes), s.file);
      return b;
    }
    b.host_kv_bytes_per_server = tier_bytes;
    b.dram_bought_bytes_per_server = extra_bytes;
    if (extra_bytes > 0) {
      b.dram_capex_usd =
          static_cast<double>(l.servers) * gib(extra_bytes) * *site.dram_usd_per_gib;
    }
  }
  if (in.host_kv.disk_bytes_per_gpu > 0) {
    b.nvme_bytes = in.host_kv.disk_bytes_per_gpu * l.gpus_used;
    if (site.nvme_usd_per_tb)
      b.nvme_capex_usd = static_cast<double>(b.nvme_bytes) / kBytesPerTB * *site.nvme_usd_per_tb;
  }

  // Power. A busy GPU is counted at its board power (an upper bound: memory-bound
  // decode draws less), an idle one at its idle power; the host at its full figure.
  const int64_t gpus_per_server_installed = ceil_div(l.gpus_bought, l.servers);
  b.server_power_peak_w = s.server_power_w + static_cast<double>(gpus_per_server_installed) * s.gpu_board_power_w;
  b.power_peak_w = static_cast<double>(l.servers) * s.server_power_w +
                   static_cast<double>(l.gpus_bought) * s.gpu_board_power_w;
  const double gpu_used_average_w =
      s.gpu_idle_power_w + (s.gpu_board_power_w - s.gpu_idle_power_w) * b.busy_fraction * site.utilization;
  b.power_average_w = static_cast<double>(l.servers) * s.server_power_w +
                      static_cast<double>(l.gpus_used) * gpu_used_average_w +
                      static_cast<double>(l.gpus_bought - l.gpus_used) * s.gpu_idle_power_w;
  b.facility_power_average_w = b.power_average_w * site.pue;
  b.energy_kwh_per_year = b.facility_power_average_w * kHoursPerYear / 1000.0;

  // Cooling first: an NVL72 rack at an air-only site is refused for that, whatever it draws.
  if (auto why = site_refusal(s, 0, 0.0, site)) {
    b.infeasible = std::move(why);
    return b;
  }
  b.servers_per_rack = servers_per_rack(b.server_power_peak_w, s.server_rack_units, site);
  if (b.servers_per_rack == 0) {
    b.infeasible = fmt::format("one {} peaks at {:.1f} kW and {}U, more than a rack's {:.1f} kW and {}U", s.form,
                               b.server_power_peak_w / 1000.0, s.server_rack_units, site.rack_kw, site.rack_units);
    return b;
  }
  b.racks = ceil_div(l.servers, b.servers_per_rack);
  b.floor_m2 = static_cast<double>(b.racks) * site.rack_floor_m2;
  if (auto why = site_refusal(s, b.racks, b.power_peak_w, site)) {
    b.infeasible = std::move(why);
    return b;
  }

  // Money.
  b.gpu_capex_usd = static_cast<double>(l.gpus_bought) * s.gpu_price_usd;
  b.server_capex_usd = static_cast<double>(l.servers) * s.server_price_usd;
  // The tiers' memory and drives are server hardware: network, installation and support
  // scale with them as with the rest of the server.
  const double hardware_usd = b.gpu_capex_usd + b.server_capex_usd + b.dram_capex_usd + b.nvme_capex_usd.value_or(0);
  b.network_capex_usd = hardware_usd * site.network_fraction;
  b.capex_usd = hardware_usd + b.network_capex_usd;
  b.energy_usd_per_year = b.energy_kwh_per_year * site.electricity_usd_per_kwh;
  b.support_usd_per_year = hardware_usd * site.support_fraction_per_year;
  b.space_usd_per_year = static_cast<double>(b.racks) * site.rack_usd_per_month * kMonthsPerYear;
  b.opex_usd_per_year = b.energy_usd_per_year + b.support_usd_per_year + b.space_usd_per_year;
  b.tco_usd = b.capex_usd + b.opex_usd_per_year * site.amortization_years;

  // Tokens served over the hardware's life at the workload's rate and utilization.
  const double requests = in.rate_per_s * site.utilization * kSecondsPerHour * kHoursPerYear * site.amortization_years;
  b.input_tokens_over_life = requests * in.prompt_mean_tokens;
  b.output_tokens_over_life = requests * in.output_mean_tokens;
  const auto per_million = [&](double tokens) { return tokens > 0 ? b.tco_usd / tokens * 1e6 : 0.0; };
  b.usd_per_million_input_tokens = per_million(b.input_tokens_over_life);
  b.usd_per_million_output_tokens = per_million(b.output_tokens_over_life);
  b.usd_per_million_tokens = per_million(b.input_tokens_over_life + b.output_tokens_over_life);

  if (in.price_per_gpu_hour_usd) {
    b.rent_usd_per_month = static_cast<double>(l.gpus_used) * *in.price_per_gpu_hour_usd * kHoursPerYear / kMonthsPerYear;
    b.rent_usd_over_life = *b.rent_usd_per_month * kMonthsPerYear * site.amortization_years;
    b.break_even_month = break_even_month(b.capex_usd, b.opex_usd_per_year / kMonthsPerYear, *b.rent_usd_per_month);
  }
  return b;
}

double busy_fraction(const Deployment& o, double rate_per_s) {
  if (o.operating.busy_fraction > 0) return std::min(1.0, o.operating.busy_fraction);
  if (!(o.eval.max_rate_per_s > 0) || o.replicas < 1) return 1.0;
  return std::min(1.0, rate_per_s / static_cast<double>(o.replicas) / o.eval.max_rate_per_s);
}

HostKvTierUse host_kv_tier_use(const Deployment& o) {
  if (!o.plan_valid || !o.plan.host_tier) return {};
  return {o.plan.host_tier->bytes_per_gpu, host_kv_tier_flag(o.candidate.options), o.plan.host_tier->disk_bytes_per_gpu};
}

BuyResult plan_purchase(const SizeResult& r, const std::vector<ServerSpec>& servers, const SiteOptions& site) {
  validate(site);
  BuyResult out;
  out.site = site;
  for (const auto& o : r.options) {
    if (!o.meets_slo) continue;
    const auto it = std::find_if(servers.begin(), servers.end(), [&](const ServerSpec& s) { return s.gpu == o.gpu; });
    if (it == servers.end()) {
      if (std::find(out.gpus_without_data.begin(), out.gpus_without_data.end(), o.gpu) == out.gpus_without_data.end())
        out.gpus_without_data.push_back(o.gpu);
      continue;
    }
    BuyInputs in;
    in.replicas = o.replicas;
    in.tp = o.candidate.options.tp;
    in.dp = o.candidate.options.dp;
    in.pp = o.candidate.options.pp;
    in.busy_fraction = busy_fraction(o, r.shape.rate_per_s);
    in.rate_per_s = r.shape.rate_per_s;
    in.prompt_mean_tokens = r.shape.prompt_mean_tokens;
    in.output_mean_tokens = r.shape.output_mean_tokens;
    if (o.cost_per_hour_usd && o.gpus_total > 0)
      in.price_per_gpu_hour_usd = *o.cost_per_hour_usd / static_cast<double>(o.gpus_total);
    in.host_kv = host_kv_tier_use(o);
    BuyFigures b = buy_figures(in, *it, site);
    b.candidate = o.candidate.index;
    b.busy_fraction_simulated = o.operating.busy_fraction > 0;
    out.options.push_back(std::move(b));
  }
  return out;
}

void rank(SizeResult& r, BuyResult& buy, Objective o) {
  buy.objective = o;
  // Key per option: tier (0 = rankable by the objective, 1 = meets the SLO but has no
  // figure for it, 2 = the rest in their order), then the objective's figure.
  const auto key = [&](const Deployment& x) -> std::pair<int, double> {
    if (!x.meets_slo) return {2, 0.0};
    const BuyFigures* b = buy.find(x.candidate.index);
    const bool bought = b != nullptr && !b->infeasible;
    switch (o) {
      case Objective::rent: return x.cost_per_hour_usd ? std::pair{0, *x.cost_per_hour_usd} : std::pair{1, 0.0};
      case Objective::tco: return bought ? std::pair{0, b->tco_usd} : std::pair{1, 0.0};
      case Objective::capex: return bought ? std::pair{0, b->capex_usd} : std::pair{1, 0.0};
      case Objective::latency: return {0, x.operating.e2e_p99_s};
    }
    return {1, 0.0};
  };
  std::stable_sort(r.options.begin(), r.options.end(), [&](const Deployment& a, const Deployment& b) {
    const auto ka = key(a), kb = key(b);
    if (ka.first != kb.first) return ka.first < kb.first;
    return ka.first == 0 && ka.second < kb.second;
  });
  std::map<int64_t, size_t> position;
  for (size_t i = 0; i < r.options.size(); ++i) position[r.options[i].candidate.index] = i;
  recommend(r);
  std::stable_sort(buy.options.begin(), buy.options.end(), [&](const BuyFigures& a, const BuyFigures& b) {
    return position[a.candidate] < position[b.candidate];
  });
}

}  // namespace kvplan::size
