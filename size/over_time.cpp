#include "size/over_time.h"

#include "size/size.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace kvplan::size {

namespace {

constexpr double kMonthsPerYear = 12;
constexpr double kSecondsPerHour = 3600;

void require(bool ok, const std::string& option, const std::string& expected, double got) {
  if (!ok) throw InputError("command line", option, expected, fmt::format("{}", got));
}

int64_t replicas_needed(double rate_per_s, double max_rate_per_s) {
  if (!(rate_per_s > 0)) return 0;
  return static_cast<int64_t>(std::ceil(rate_per_s / max_rate_per_s));
}

//! Replicas `servers` servers hold (whole replicas only).
int64_t owned_replicas(const ServerLayout& one, int64_t servers) {
  return one.replicas_per_server > 0 ? servers * one.replicas_per_server : servers / one.servers_per_replica;
}

}  // namespace

void validate(const DemandOptions& d) {
  require(d.horizon_months >= 1 && d.horizon_months <= 600, "--horizon-months", "months in [1, 600]",
          static_cast<double>(d.horizon_months));
  require(std::isfinite(d.growth_per_month) && d.growth_per_month > -1 && d.growth_per_month <= 10,
          "--growth-per-month", "a fraction in (-1, 10]", d.growth_per_month);
  require(d.purchase_lead_months >= 0 && d.purchase_lead_months <= 600, "--purchase-lead-months",
          "months in [0, 600]", static_cast<double>(d.purchase_lead_months));
  if (d.curve.hours.empty() || d.curve.models.empty())
    throw InputError(d.curve.file, "", "at least one period and model", "none");
  for (const RentPrices& p : d.prices) {
    const auto bad = [&](const std::string& key, const std::string& expected) {
      throw InputError(p.file.empty() ? "--prices" : p.file, key, expected, "out of range");
    };
    if (!(p.on_demand_usd_per_gpu_hour > 0)) bad("on_demand_usd_per_gpu_hour", "a price > 0");
    for (const ReservedTerm& t : p.reserved)
      if (t.term_months < 1 || !(t.usd_per_gpu_hour > 0)) bad("reserved", "terms >= 1 month at a price > 0");
    if (p.spot && (!(p.spot->usd_per_gpu_hour > 0) || !(p.spot->interruptions_per_month >= 0) ||
                   !(p.spot->replace_minutes > 0)))
      bad("spot", "a price > 0, interruptions >= 0 and replace minutes > 0");
  }
  if (d.curve.cycle_h() > kHoursPerMonth)
    throw InputError(d.curve.file, "hour", fmt::format("a cycle of at most a month ({} h)", kHoursPerMonth),
                     fmt::format("{} h", d.curve.cycle_h()));
}

std::optional<double> spot_effective_usd_per_gpu_hour(const MixInputs& in) {
  if (!in.spot) return std::nullopt;
  const SpotTerms& s = *in.spot;
  const double per_hour = s.interruptions_per_month / kHoursPerMonth;
  const double covered_h = s.replace_minutes / 60.0 + in.e2e_p99_s / kSecondsPerHour;
  return s.usd_per_gpu_hour + per_hour * covered_h * in.price_per_gpu_hour_usd;
}

namespace {

//! The price of a GPU-hour above the owned and reserved replicas: spot where it costs
//! less with its interruptions, else on demand.
struct PeakPrice {
  double usd_per_gpu_hour = 0;
  bool spot = false;
};
PeakPrice peak_price(const MixInputs& in) {
  const auto spot = spot_effective_usd_per_gpu_hour(in);
  if (spot && *spot < in.price_per_gpu_hour_usd) return {*spot, true};
  return {in.price_per_gpu_hour_usd, false};
}

//! Replicas `servers` servers of this option hold (0 for none); throws
//! std::invalid_argument when they cannot be bought.
int64_t owned_replica_count(const MixInputs& in, int64_t servers) {
  if (servers <= 0) return 0;
  if (!in.server) throw std::invalid_argument("mix_cost: servers bought without purchase data");
  const ServerLayout one = layout(1, in.shape, *in.server);
  if (one.infeasible) throw std::invalid_argument("mix_cost: " + *one.infeasible);
  const int64_t n = owned_replicas(one, servers);
  if (n < 1) throw std::invalid_argument("mix_cost: the servers hold no whole replica");
  return n;
}

double hours_per_period(const DemandCurve& curve) { return curve.period_h * kHoursPerMonth / curve.cycle_h(); }

}  // namespace

namespace {

//! Servers serving in each month of the horizon (0-based) under a schedule.
std::vector<int64_t> servers_by_month(const std::vector<Tranche>& tranches, const DemandOptions& d) {
  std::vector<int64_t> v(static_cast<size_t>(d.horizon_months), 0);
  for (const Tranche& t : tranches) {
    if (t.order_month < 1 || t.servers < 1)
      throw std::invalid_argument("mix_cost: a tranche needs an order month >= 1 and servers >= 1");
    for (int64_t m = t.order_month - 1 + d.purchase_lead_months; m < d.horizon_months; ++m)
      v[static_cast<size_t>(m)] += t.servers;
  }
  return v;
}

//! What buy_figures reads of `replicas` replicas of this option.
BuyInputs buy_inputs(const MixInputs& in, int64_t replicas) {
  BuyInputs b;
  b.replicas = replicas;
  b.tp = in.shape.tp;
  b.dp = in.shape.dp;
  b.pp = in.shape.pp;
  b.host_kv = in.host_kv;
  return b;
}

//! The figures of `servers` servers of this option at the site (empty for none).
BuyFigures owned_figures(const MixInputs& in, int64_t servers, const SiteOptions& site) {
  if (servers <= 0) return {};
  BuyFigures f = buy_figures(buy_inputs(in, owned_replica_count(in, servers)), *in.server, site);
  if (f.infeasible) throw std::invalid_argument("mix_cost: " + *f.infeasible);
  return f;
}

//! An owned month's cost but its energy: the capex spread over the amortization, support
//! and space.
double owned_fixed_usd_per_month(const BuyFigures& f, const SiteOptions& site) {
  return f.capex_usd / (site.amortization_years * kMonthsPerYear) +
         (f.support_usd_per_year + f.space_usd_per_year) / kMonthsPerYear;
}

//! An owned month's energy: hosts at full power and GPUs bought at idle all month, plus
//! (board - idle) over the busy replica-hours, x PUE x the price; and the IT watt-hours.
std::pair<double, double> owned_energy(const MixInputs& in, int64_t servers, int64_t gpus_bought,
                                       double busy_replica_hours, const SiteOptions& site) {
  const ServerSpec& s = *in.server;
  const double idle_wh =
      (static_cast<double>(servers) * s.server_power_w + static_cast<double>(gpus_bought) * s.gpu_idle_power_w) *
      kHoursPerMonth;
  const double busy_wh = (s.gpu_board_power_w - s.gpu_idle_power_w) *
                         static_cast<double>(in.shape.gpus_per_replica()) * busy_replica_hours;
  return {(idle_wh + busy_wh) / 1000.0 * site.pue * site.electricity_usd_per_kwh, idle_wh + busy_wh};
}

}  // namespace

MixCost mix_cost(const MixInputs& in, const DemandCurve::Series& demand, const DemandCurve& curve,
                 const DemandOptions& d, const SiteOptions& site, int64_t servers, const Reservation& r) {
  std::vector<Tranche> t;
  if (servers > 0) t.push_back({1, servers, 0});
  return mix_cost(in, demand, curve, d, site, t, r);
}

MixCost mix_cost(const MixInputs& in, const DemandCurve::Series& demand, const DemandCurve& curve,
                 const DemandOptions& d, const SiteOptions& site, const std::vector<Tranche>& tranches,
                 const Reservation& r) {
  if (!(in.max_rate_per_replica_per_s > 0)) throw std::invalid_argument("mix_cost: max rate per replica must be > 0");
  MixCost c;
  const std::vector<int64_t> counts = servers_by_month(tranches, d);
  c.servers = counts.empty() ? 0 : counts.back();
  const BuyFigures last = owned_figures(in, c.servers, site);
  c.replicas = owned_replica_count(in, c.servers);
  c.gpus_bought = last.layout.gpus_bought;
  c.capex_usd = last.capex_usd;
  c.racks = last.racks;
  c.floor_m2 = last.floor_m2;
  c.power_peak_w = last.power_peak_w;
  int64_t cumulative = 0;
  double capex_before = 0;
  for (const Tranche& t : tranches) {
    if (t.order_month - 1 + d.purchase_lead_months >= d.horizon_months) continue;  // delivered after the horizon
    cumulative += t.servers;
    const double capex = owned_figures(in, cumulative, site).capex_usd;
    c.tranches.push_back({t.order_month, t.servers, capex - capex_before});
    capex_before = capex;
  }
  double owned_wh = 0, owned_h = 0;
  const ReservedTerm* term = nullptr;
  if (r.term_months > 0) {
    for (const ReservedTerm& t : in.reserved)
      if (t.term_months == r.term_months) term = &t;
    if (term == nullptr) throw std::invalid_argument("mix_cost: a reservation for a term without a price");
    c.reserved_term_months = r.term_months;
    c.reserved_replicas = r.replicas;
  }
  const PeakPrice peak = peak_price(in);
  const auto gpr = static_cast<double>(in.shape.gpus_per_replica());
  const double hours = hours_per_period(curve);
  BuyFigures owned;  // of the servers serving in the month, and the replicas they hold
  int64_t serving = 0;
  for (int64_t m = 0; m < d.horizon_months; ++m) {
    MonthCost mc;
    mc.month = m + 1;
    mc.growth_factor = std::pow(1 + d.growth_per_month, static_cast<double>(m));
    mc.servers_owned = counts[static_cast<size_t>(m)];
    mc.owned_serving = mc.servers_owned > 0;
    if (m == 0 || mc.servers_owned != counts[static_cast<size_t>(m) - 1]) {
      owned = owned_figures(in, mc.servers_owned, site);
      serving = owned_replica_count(in, mc.servers_owned);
    }
    if (term != nullptr) {
      const auto window = static_cast<size_t>(m / r.term_months);
      if (window < r.replicas.size()) mc.reserved_replicas = r.replicas[window];
    }
    double busy_replica_hours = 0, all_rented_gpu_hours = 0;
    for (const double base : demand.requests_per_s) {
      const double rate = base * mc.growth_factor;
      const int64_t need = replicas_needed(rate, in.max_rate_per_replica_per_s);
      mc.replicas_peak = std::max(mc.replicas_peak, need);
      const int64_t rented = std::max<int64_t>(0, need - serving - mc.reserved_replicas);
      mc.rented_gpu_hours += static_cast<double>(rented) * gpr * hours;
      all_rented_gpu_hours += static_cast<double>(need) * gpr * hours;
      // Owned replicas take the load first, each up to its max rate.
      const double owned_load = std::min(rate, static_cast<double>(serving) * in.max_rate_per_replica_per_s);
      busy_replica_hours += owned_load / in.max_rate_per_replica_per_s * in.busy_fraction_at_max * hours;
    }
    if (term != nullptr)
      mc.reserved_usd = static_cast<double>(mc.reserved_replicas) * gpr * kHoursPerMonth * term->usd_per_gpu_hour;
    if (peak.spot) {
      mc.spot_gpu_hours = mc.rented_gpu_hours;
      mc.spot_usd = mc.spot_gpu_hours * peak.usd_per_gpu_hour;
    }
    mc.rented_usd = mc.reserved_usd + mc.rented_gpu_hours * peak.usd_per_gpu_hour;
    mc.all_rented_usd = all_rented_gpu_hours * in.price_per_gpu_hour_usd;
    double running_usd = 0;
    if (mc.owned_serving) {
      const auto [energy_usd, wh] = owned_energy(in, mc.servers_owned, owned.layout.gpus_bought, busy_replica_hours, site);
      mc.energy_usd = energy_usd;
      owned_wh += wh;
      owned_h += kHoursPerMonth;
      mc.owned_usd = owned_fixed_usd_per_month(owned, site) + mc.energy_usd;
      running_usd = (owned.support_usd_per_year + owned.space_usd_per_year) / kMonthsPerYear + mc.energy_usd;
    }
    // A purchase order is paid when placed: the servers are rented around meanwhile, the
    // money is gone from the order month (accrual still starts at delivery).
    for (const Tranche& t : c.tranches)
      if (t.order_month == mc.month) mc.capex_paid_usd += t.capex_usd;
    mc.cost_usd = mc.owned_usd + mc.rented_usd;
    mc.cash_usd = mc.capex_paid_usd + running_usd + mc.rented_usd;
    c.total_usd += mc.cost_usd;
    c.cash_usd += mc.cash_usd;
    c.rented_gpu_hours += mc.rented_gpu_hours;
    c.reserved_gpu_hours += static_cast<double>(mc.reserved_replicas) * gpr * kHoursPerMonth;
    c.spot_gpu_hours += mc.spot_gpu_hours;
    c.months.push_back(mc);
  }
  if (owned_h > 0) c.power_mean_w = owned_wh / owned_h;
  return c;
}

namespace {

//! Each month's costs (0-based rows) that a schedule and a reservation add up: the owned
//! servers' with k x step servers serving (k = 0 up to max_servers / step; infinite above
//! 0 before the lead time: nothing delivered yet) and the rent at the peak price with c
//! replicas covered by owned or reserved ones (c = 0 up to the horizon's peak: none rented
//! beyond it). Owned replicas take the load first whatever is reserved, so their energy
//! depends on k alone.
struct MonthTables {
  std::vector<int64_t> replicas;           //!< held by k x step servers
  std::vector<std::vector<double>> owned;  //!< [month][k]
  std::vector<std::vector<double>> rent;   //!< [month][c]
  size_t levels() const { return replicas.size(); }
  size_t covered_levels() const { return rent.empty() ? 1 : rent.front().size(); }
  double at(size_t m, size_t k, int64_t reserved) const {
    const auto c = std::min<size_t>(static_cast<size_t>(replicas[k] + reserved), covered_levels() - 1);
    return owned[m][k] + rent[m][c];
  }
};

MonthTables month_tables(const MixInputs& in, const DemandCurve::Series& demand, const DemandOptions& d,
                         const SiteOptions& site, int64_t step, int64_t max_servers) {
  const auto levels = static_cast<size_t>(max_servers / step) + 1;
  MonthTables t;
  std::vector<BuyFigures> fig(levels);
  t.replicas.assign(levels, 0);
  for (size_t k = 1; k < levels; ++k) {
    const auto n = static_cast<int64_t>(k) * step;
    fig[k] = owned_figures(in, n, site);
    t.replicas[k] = owned_replica_count(in, n);
  }
  const PeakPrice peak = peak_price(in);
  const auto gpr = static_cast<double>(in.shape.gpus_per_replica());
  const double hours = hours_per_period(d.curve);
  const double max_rate = in.max_rate_per_replica_per_s;
  const auto months = static_cast<size_t>(d.horizon_months);
  std::vector<std::vector<double>> rates(months, std::vector<double>(demand.requests_per_s.size()));
  std::vector<std::vector<int64_t>> needs(months, std::vector<int64_t>(demand.requests_per_s.size()));
  int64_t peak_need = 0;
  for (size_t m = 0; m < months; ++m) {
    const double g = std::pow(1 + d.growth_per_month, static_cast<double>(m));
    for (size_t i = 0; i < rates[m].size(); ++i) rates[m][i] = demand.requests_per_s[i] * g;
    std::sort(rates[m].begin(), rates[m].end());
    for (size_t i = 0; i < rates[m].size(); ++i) needs[m][i] = replicas_needed(rates[m][i], max_rate);
    if (!needs[m].empty()) peak_need = std::max(peak_need, needs[m].back());
  }
  t.owned.assign(months, std::vector<double>(levels, std::numeric_limits<double>::infinity()));
  t.rent.assign(months, std::vector<double>(static_cast<size_t>(peak_need) + 1, 0));
  std::vector<double> rate_sum;
  std::vector<int64_t> need_sum;
  for (size_t m = 0; m < months; ++m) {
    const auto& r = rates[m];
    const auto& n = needs[m];
    rate_sum.assign(r.size() + 1, 0);
    need_sum.assign(n.size() + 1, 0);
    for (size_t i = 0; i < r.size(); ++i) {
      rate_sum[i + 1] = rate_sum[i] + r[i];
      need_sum[i + 1] = need_sum[i] + n[i];
    }
    for (size_t c = 0; c < t.rent[m].size(); ++c) {
      // Periods needing more than c replicas rent the rest.
      const auto cov = static_cast<int64_t>(c);
      const auto over = static_cast<size_t>(std::upper_bound(n.begin(), n.end(), cov) - n.begin());
      const int64_t rented = need_sum.back() - need_sum[over] - cov * static_cast<int64_t>(n.size() - over);
      t.rent[m][c] = static_cast<double>(rented) * gpr * hours * peak.usd_per_gpu_hour;
    }
    t.owned[m][0] = 0;
    if (static_cast<int64_t>(m) < d.purchase_lead_months) continue;
    for (size_t k = 1; k < levels; ++k) {
      // Periods at a rate above the owned replicas' max load them fully.
      const double cap = static_cast<double>(t.replicas[k]) * max_rate;
      const auto full = static_cast<size_t>(std::upper_bound(r.begin(), r.end(), cap) - r.begin());
      const double load = rate_sum[full] + cap * static_cast<double>(r.size() - full);
      const double busy_replica_hours = load / max_rate * in.busy_fraction_at_max * hours;
      t.owned[m][k] = owned_fixed_usd_per_month(fig[k], site) +
                      owned_energy(in, static_cast<int64_t>(k) * step, fig[k].layout.gpus_bought, busy_replica_hours,
                                   site)
                          .first;
    }
  }
  return t;
}

//! Each month's cost (rows) with k x step servers serving (columns) and the rest rented at
//! the peak price, no reservation.
std::vector<std::vector<double>> month_cost_table(const MonthTables& t) {
  std::vector<std::vector<double>> table(t.owned.size(), std::vector<double>(t.levels()));
  for (size_t m = 0; m < table.size(); ++m)
    for (size_t k = 0; k < t.levels(); ++k) table[m][k] = t.at(m, k, 0);
  return table;
}

//! The purchases that give the owned level of each month (0-based; levels of `step`
//! servers): a tranche wherever the level rises, ordered the lead time before.
std::vector<Tranche> tranches_of(const std::vector<size_t>& levels, const DemandOptions& d, int64_t step) {
  std::vector<Tranche> out;
  size_t level = 0;
  for (size_t m = 0; m < levels.size(); ++m) {
    if (levels[m] > level)
      out.push_back({static_cast<int64_t>(m) - d.purchase_lead_months + 1, static_cast<int64_t>(levels[m] - level) * step,
                     0});
    level = levels[m];
  }
  return out;
}

//! The cheapest non-decreasing path through the table's columns (best_schedule).
std::vector<Tranche> schedule_from_table(const std::vector<std::vector<double>>& table, const DemandOptions& d,
                                         int64_t step, double& total_usd) {
  if (table.empty()) return {};
  const size_t levels = table.front().size();
  constexpr double kNone = std::numeric_limits<double>::infinity();
  // total[k]: the cheapest cost of the months so far ending at level k; from[m][k]: the
  // level of month m - 1 on that path.
  std::vector<double> total(levels, kNone), next(levels, kNone);
  total[0] = 0;
  std::vector<size_t> from(table.size() * levels, 0);
  for (size_t m = 0; m < table.size(); ++m) {
    // The owned count never falls: month m at level k follows the cheapest level <= k
    // (ties to the lower: purchases as late as they can be).
    double best = kNone;
    size_t arg = 0;
    for (size_t k = 0; k < levels; ++k) {
      if (total[k] < best) best = total[k], arg = k;
      from[m * levels + k] = arg;
      next[k] = best + table[m][k];
    }
    std::swap(total, next);
  }
  size_t k = 0;
  for (size_t j = 1; j < levels; ++j)
    if (total[j] < total[k]) k = j;
  total_usd = total[k];
  std::vector<size_t> path(table.size());
  for (size_t m = table.size(); m-- > 0;) {
    path[m] = k;
    k = from[m * levels + k];
  }
  return tranches_of(path, d, step);
}

//! A schedule and a reservation chosen together (joint_schedule).
struct JointChoice {
  std::vector<Tranche> tranches;
  Reservation reservation;
};

//! Above this many states (months x owned levels x reserved levels) the joint search is
//! not run (its back-pointers alone would take 4 bytes each): the schedule and the
//! reservation are then chosen in turn.
constexpr size_t kMaxJointStates = 30'000'000;

//! The cheapest schedule of purchases (non-decreasing owned levels, as schedule_from_table)
//! together with a reservation of `term`: whole terms from month 1, each reserving a level
//! of 0 up to the horizon's peak replicas for all its months; months after the last whole
//! term reserve none. Exact: dynamic programming over months with the state (owned level,
//! the current term's reserved level); the reserved level may change only where a term
//! starts. Ties go to fewer servers, later purchases and fewer reserved replicas. Empty
//! when no whole term fits the horizon or the states exceed kMaxJointStates.
std::optional<JointChoice> joint_schedule(const MonthTables& t, const ReservedTerm& term, const DemandOptions& d,
                                          double gpus_per_replica, int64_t step) {
  const int64_t terms = d.horizon_months / term.term_months;
  const size_t months = t.owned.size(), levels = t.levels(), reserved_levels = t.covered_levels();
  if (terms < 1 || months == 0 || months * levels * reserved_levels > kMaxJointStates) return std::nullopt;
  const double reserved_usd = gpus_per_replica * kHoursPerMonth * term.usd_per_gpu_hour;  // a replica a month
  constexpr double kNone = std::numeric_limits<double>::infinity();
  const size_t states = levels * reserved_levels;  // state k x reserved_levels + j
  std::vector<double> total(states, kNone), next(states, kNone), by_owned(levels);
  std::vector<size_t> by_owned_j(levels);
  total[0] = 0;
  std::vector<uint32_t> from(months * states, 0);  // the state of month m - 1 on the path
  for (size_t m = 0; m < months; ++m) {
    const auto month = static_cast<int64_t>(m);
    const bool starts = month % term.term_months == 0;  // a term starts, or the months after the last
    const size_t jn = month < terms * term.term_months ? reserved_levels : 1;
    std::fill(next.begin(), next.end(), kNone);
    if (starts)  // the level reserved before is free to change: the cheapest per owned level
      for (size_t k = 0; k < levels; ++k) {
        by_owned[k] = kNone;
        for (size_t j = 0; j < reserved_levels; ++j)
          if (total[k * reserved_levels + j] < by_owned[k]) by_owned[k] = total[k * reserved_levels + j], by_owned_j[k] = j;
      }
    for (size_t j = 0; j < jn; ++j) {
      // The owned count never falls: the cheapest level <= k (ties to the lower).
      double best = kNone;
      size_t arg = 0;
      for (size_t k = 0; k < levels; ++k) {
        const size_t prev = starts ? k * reserved_levels + by_owned_j[k] : k * reserved_levels + j;
        const double v = starts ? by_owned[k] : total[prev];
        if (v < best) best = v, arg = prev;
        const size_t s = k * reserved_levels + j;
        from[m * states + s] = static_cast<uint32_t>(arg);
        next[s] = best + t.at(m, k, static_cast<int64_t>(j)) + static_cast<double>(j) * reserved_usd;
      }
    }
    std::swap(total, next);
  }
  size_t s = 0;
  for (size_t x = 1; x < states; ++x)
    if (total[x] < total[s]) s = x;
  if (!(total[s] < kNone)) return std::nullopt;
  std::vector<size_t> owned(months), reserved(months);
  for (size_t m = months; m-- > 0;) {
    owned[m] = s / reserved_levels;
    reserved[m] = s % reserved_levels;
    s = from[m * states + s];
  }
  JointChoice c;
  c.tranches = tranches_of(owned, d, step);
  for (int64_t w = 0; w < terms; ++w)
    c.reservation.replicas.push_back(static_cast<int64_t>(reserved[static_cast<size_t>(w * term.term_months)]));
  if (std::any_of(c.reservation.replicas.begin(), c.reservation.replicas.end(), [](int64_t n) { return n > 0; }))
    c.reservation.term_months = term.term_months;
  else
    c.reservation.replicas.clear();
  return c;
}

}  // namespace

std::vector<Tranche> best_schedule(const MixInputs& in, const DemandCurve::Series& demand, const DemandOptions& d,
                                   const SiteOptions& site, int64_t step, int64_t max_servers) {
  if (!in.server || step < 1 || max_servers < step || !(in.max_rate_per_replica_per_s > 0)) return {};
  double total_usd = 0;
  return schedule_from_table(month_cost_table(month_tables(in, demand, d, site, step, max_servers)), d, step,
                             total_usd);
}

Reservation best_reservation(const MixInputs& in, const DemandCurve::Series& demand, const DemandCurve& curve,
                             const DemandOptions& d, int64_t servers) {
  std::vector<Tranche> t;
  if (servers > 0) t.push_back({1, servers, 0});
  return best_reservation(in, demand, curve, d, t);
}

Reservation best_reservation(const MixInputs& in, const DemandCurve::Series& demand, const DemandCurve& curve,
                             const DemandOptions& d, const std::vector<Tranche>& tranches) {
  Reservation best;
  if (in.reserved.empty() || !(in.max_rate_per_replica_per_s > 0)) return best;
  std::vector<int64_t> owned = servers_by_month(tranches, d);
  for (int64_t& n : owned) n = owned_replica_count(in, n);
  const double hours = hours_per_period(curve);
  const double peak_usd = peak_price(in).usd_per_gpu_hour;
  // Each month's needs, sorted: the hours a replica level l is needed are the periods
  // needing at least l replicas.
  std::vector<std::vector<int64_t>> needs(static_cast<size_t>(d.horizon_months));
  int64_t peak = 0;
  for (int64_t m = 0; m < d.horizon_months; ++m) {
    const double g = std::pow(1 + d.growth_per_month, static_cast<double>(m));
    auto& v = needs[static_cast<size_t>(m)];
    for (const double base : demand.requests_per_s) v.push_back(replicas_needed(base * g, in.max_rate_per_replica_per_s));
    std::sort(v.begin(), v.end());
    peak = std::max(peak, v.empty() ? 0 : v.back());
  }
  const auto hours_at_least = [&](int64_t m, int64_t level) {
    const auto& v = needs[static_cast<size_t>(m)];
    return static_cast<double>(v.end() - std::lower_bound(v.begin(), v.end(), level)) * hours;
  };
  // The levels above the owned ones are independent: with the servers fixed, reserving
  // level j of a term saves its rent for the hours it is needed and costs the whole term.
  // Those hours fall as j rises, so the levels worth reserving are the lowest ones.
  double best_saving_per_gpu = 0;
  for (const ReservedTerm& t : in.reserved) {
    const int64_t terms = d.horizon_months / t.term_months;
    if (terms < 1) continue;
    const double term_usd = static_cast<double>(t.term_months) * kHoursPerMonth * t.usd_per_gpu_hour;
    Reservation r;
    r.term_months = t.term_months;
    double saving = 0;
    for (int64_t w = 0; w < terms; ++w) {
      int64_t k = 0;
      for (int64_t j = 1; j <= peak; ++j) {
        double used_h = 0;
        for (int64_t m = w * t.term_months; m < (w + 1) * t.term_months; ++m) {
          used_h += hours_at_least(m, owned[static_cast<size_t>(m)] + j);
        }
        const double gain = used_h * peak_usd - term_usd;
        if (!(gain > 0)) break;
        saving += gain;
        k = j;
      }
      r.replicas.push_back(k);
    }
    if (saving > best_saving_per_gpu) {
      best_saving_per_gpu = saving;
      best = std::move(r);
    }
  }
  return best;
}

namespace {

ModelPlan plan_option(const Deployment& o, const DemandCurve::Series& demand, const DemandOptions& d,
                      const BuyOptions& buy, const SiteOptions& site) {
  MixInputs in;
  in.max_rate_per_replica_per_s = o.eval.max_rate_per_s;
  in.shape = o.candidate.options;
  in.busy_fraction_at_max = o.eval.at_max.busy_fraction > 0 ? std::min(1.0, o.eval.at_max.busy_fraction) : 1.0;
  in.price_per_gpu_hour_usd = *o.cost_per_hour_usd / static_cast<double>(o.gpus_total);
  in.e2e_p99_s = o.eval.at_max.e2e_p99_s;
  in.host_kv = host_kv_tier_use(o);
  const auto it = std::find_if(buy.servers.begin(), buy.servers.end(), [&](const ServerSpec& s) { return s.gpu == o.gpu; });
  if (it != buy.servers.end()) in.server = *it;
  const auto pr =
      std::find_if(d.prices.begin(), d.prices.end(), [&](const RentPrices& x) { return x.gpu == o.gpu; });
  if (pr != d.prices.end()) {
    in.price_per_gpu_hour_usd = pr->on_demand_usd_per_gpu_hour;
    in.reserved = pr->reserved;
    in.spot = pr->spot;
  }
  ModelPlan p = plan_model(in, demand, d, site);
  if (pr != d.prices.end()) {
    p.prices_file = pr->file;
    p.prices_provider = pr->provider;
  }
  p.model = o.model;
  p.candidate = o.candidate.index;
  p.gpu = o.gpu;
  return p;
}

}  // namespace

ModelPlan plan_model(const MixInputs& given, const DemandCurve::Series& demand, const DemandOptions& d,
                     const SiteOptions& site) {
  ModelPlan p;
  p.inputs = given;
  p.demand = demand;
  p.site = site;
  MixInputs in = given;
  std::optional<ServerLayout> one;
  if (in.server) {
    const BuyFigures f = buy_figures(buy_inputs(in, 1), *in.server, site);
    if (f.infeasible) {
      in.server.reset();  // cannot be built as laid out or placed (size/tco.h): rented only
      p.site_limit = "no server: " + *f.infeasible;
    } else {
      one = f.layout;
      p.servers_per_rack = f.servers_per_rack;
      p.server_form = in.server->form;
    }
  }
  p.max_rate_per_replica_per_s = in.max_rate_per_replica_per_s;
  p.gpus_per_replica = in.shape.gpus_per_replica();
  p.price_per_gpu_hour_usd = in.price_per_gpu_hour_usd;
  p.spot_effective_usd_per_gpu_hour = spot_effective_usd_per_gpu_hour(in);
  for (size_t i = 0; i < d.curve.hours.size(); ++i)
    p.periods.push_back({d.curve.hours[i], demand.requests_per_s[i],
                         replicas_needed(demand.requests_per_s[i], in.max_rate_per_replica_per_s)});
  const Reservation rented_reservation = best_reservation(in, demand, d.curve, d, 0);
  p.all_rented = mix_cost(in, demand, d.curve, d, site, 0, rented_reservation);
  // The GPU-hours needed are those rented with nothing owned or reserved.
  std::optional<MixCost> unreserved;
  if (rented_reservation.term_months > 0) unreserved = mix_cost(in, demand, d.curve, d, site, 0);
  const MixCost& on_demand = unreserved ? *unreserved : p.all_rented;
  for (const auto& m : on_demand.months) p.replicas_peak = std::max(p.replicas_peak, m.replicas_peak);
  p.gpu_hours_needed = on_demand.rented_gpu_hours;
  p.replicas_mean = p.gpu_hours_needed / static_cast<double>(p.gpus_per_replica) /
                    (static_cast<double>(d.horizon_months) * kHoursPerMonth);
  p.best = p.all_rented;
  if (one && p.replicas_peak > 0) {
    // Servers in steps that hold whole replicas, up to those the horizon's peak needs.
    const int64_t step = one->replicas_per_server > 0 ? 1 : one->servers_per_replica;
    const int64_t peak_servers = layout(p.replicas_peak, in.shape, *in.server).servers;
    int64_t max_servers = 0;  // the most the site holds, up to the peak's
    for (int64_t s = step; s <= peak_servers; s += step) {
      // The site's power and racks stop the servers bought; more would not fit either.
      if (const BuyFigures f = buy_figures(buy_inputs(in, owned_replica_count(in, s)), *in.server, site);
          f.infeasible) {
        p.site_limit = fmt::format("at most {} servers: {} would not fit, {}", s - step, s, *f.infeasible);
        break;
      }
      max_servers = s;
    }
    if (max_servers > 0) {
      const auto with_reservation = [&](int64_t s) {
        return mix_cost(in, demand, d.curve, d, site, s, best_reservation(in, demand, d.curve, d, s));
      };
      const MonthTables tables = month_tables(in, demand, d, site, step, max_servers);
      const std::vector<std::vector<double>> table = month_cost_table(tables);
      // The best single purchase's total in the table (infinite: costed with reservations).
      double single_usd = std::numeric_limits<double>::infinity();
      if (in.reserved.empty()) {
        // Without reservations a single purchase's total is its column of the table from
        // delivery: only the cheapest is costed in full.
        double best_usd = 0;
        for (const auto& row : table) best_usd += row[0];
        int64_t best_servers = 0;
        for (size_t k = 1; k < table.front().size(); ++k) {
          double usd = 0;
          for (size_t m = 0; m < table.size(); ++m) usd += table[m][static_cast<int64_t>(m) < d.purchase_lead_months ? 0 : k];
          if (usd < best_usd) best_usd = usd, best_servers = static_cast<int64_t>(k) * step;
        }
        if (best_servers > 0) p.best = mix_cost(in, demand, d.curve, d, site, best_servers);
        single_usd = best_usd;
      } else {
        for (int64_t s = step; s <= max_servers; s += step)
          if (MixCost c = with_reservation(s); c.total_usd < p.best.total_usd) p.best = std::move(c);
      }
      if (!p.site_limit)
        p.all_owned = p.best.servers == max_servers && p.best.tranches.size() == 1 ? p.best : with_reservation(max_servers);
      // Tranches as demand grows: the cheapest schedule, with the reservation it leaves
      // worth making, replaces the single purchase when it costs less (by more than the
      // rounding of the two sums).
      double staged_usd = 0;
      const std::vector<Tranche> t = schedule_from_table(table, d, step, staged_usd);
      if (!t.empty() && (t.size() > 1 || t.front().order_month > 1) && staged_usd < single_usd * (1 - 1e-12)) {
        MixCost c = mix_cost(in, demand, d.curve, d, site, t, best_reservation(in, demand, d.curve, d, t));
        if (c.total_usd < p.best.total_usd * (1 - 1e-12)) p.best = std::move(c);
      }
      // Purchases and reservations chosen together, one term length at a time: a schedule
      // that pays only with a reservation beside it (or a reservation only with servers
      // bought later) is found here, not by choosing one after the other.
      for (const ReservedTerm& term : in.reserved)
        if (const auto j =
                joint_schedule(tables, term, d, static_cast<double>(in.shape.gpus_per_replica()), step)) {
          MixCost c = mix_cost(in, demand, d.curve, d, site, j->tranches, j->reservation);
          if (c.total_usd < p.best.total_usd * (1 - 1e-12)) p.best = std::move(c);
        }
    }
  }
  // Every plan compares with the cheapest rented mix, reservations and spot included.
  for (MixCost* c : {&p.best, &p.all_rented, p.all_owned ? &*p.all_owned : nullptr})
    if (c != nullptr)
      for (size_t k = 0; k < c->months.size(); ++k) c->months[k].all_rented_usd = p.all_rented.months[k].cost_usd;
  if (p.best.servers > 0) {
    double mix = 0, rent = 0;
    for (size_t k = 0; k < p.best.months.size(); ++k) {
      mix += p.best.months[k].cash_usd;
      rent += p.all_rented.months[k].cash_usd;
      if (static_cast<int64_t>(k) >= d.purchase_lead_months && mix <= rent) {
        p.break_even_month = static_cast<int64_t>(k) + 1;
        break;
      }
    }
  }
  return p;
}

OverTimePlan plan_over_time(const SizeResult& r, const DemandOptions& d) {
  const BuyOptions& buy = d.buy;
  validate(d);
  validate(buy.site);
  OverTimePlan out;
  out.options = d;
  out.site = buy.site;
  std::vector<std::string> searched;
  for (const auto& o : r.options)
    if (std::find(searched.begin(), searched.end(), o.model) == searched.end()) searched.push_back(o.model);
  const auto series = [&](const std::string& model) -> const DemandCurve::Series* {
    for (const auto& s : d.curve.models)
      if (s.model == model) return &s;
    return nullptr;
  };
  for (const auto& s : d.curve.models)
    if (std::find(searched.begin(), searched.end(), s.model) == searched.end())
      throw InputError(d.curve.file, "model", fmt::format("models searched ({})", fmt::join(searched, ", ")),
                       "'" + s.model + "'");
  out.cost_by_month_usd.assign(static_cast<size_t>(d.horizon_months), 0.0);
  out.cash_by_month_usd.assign(static_cast<size_t>(d.horizon_months), 0.0);
  double all_owned = 0;
  bool all_owned_known = true;
  SiteOptions left = buy.site;  // what the models planned so far leave of the site
  for (const auto& model : searched) {
    const DemandCurve::Series* demand = series(model);
    if (demand == nullptr)
      throw InputError(d.curve.file, "model", "a curve for every model searched", "none for '" + model + "'");
    std::optional<ModelPlan> best;
    for (const auto& o : r.options) {
      if (o.model != model || !o.meets_slo || !o.cost_per_hour_usd || o.gpus_total < 1 || !(o.eval.max_rate_per_s > 0))
        continue;
      ModelPlan p = plan_option(o, *demand, d, buy, left);
      if (!best || p.best.total_usd < best->best.total_usd) best = std::move(p);
    }
    if (!best) {
      out.models_without_plan.push_back(model);
      continue;
    }
    if (left.site_kw) left.site_kw = std::max(0.0, *left.site_kw - best->best.power_peak_w / 1000.0);
    if (left.site_racks) left.site_racks = std::max<int64_t>(0, *left.site_racks - best->best.racks);
    out.racks += best->best.racks;
    out.floor_m2 += best->best.floor_m2;
    out.power_peak_kw += best->best.power_peak_w / 1000.0;
    out.power_mean_kw += best->best.power_mean_w / 1000.0;
    out.total_usd += best->best.total_usd;
    out.all_rented_total_usd += best->all_rented.total_usd;
    if (best->all_owned) all_owned += best->all_owned->total_usd;
    else if (best->replicas_peak > 0) all_owned_known = false;
    for (size_t k = 0; k < best->best.months.size(); ++k) {
      out.cost_by_month_usd[k] += best->best.months[k].cost_usd;
      out.cash_by_month_usd[k] += best->best.months[k].cash_usd;
    }
    out.models.push_back(std::move(*best));
  }
  if (all_owned_known && !out.models.empty()) out.all_owned_total_usd = all_owned;
  return out;
}

ScenarioCost cost_under(const OverTimePlan& p, const Shift& s) {
  DemandOptions d = p.options;
  if (s.growth_per_month) d.growth_per_month = *s.growth_per_month;
  d.purchase_lead_months += s.extra_lead_months;
  ScenarioCost c;
  for (const ModelPlan& m : p.models) {
    SiteOptions site = m.site;
    site.electricity_usd_per_kwh *= s.electricity;
    MixInputs in = m.inputs;
    in.price_per_gpu_hour_usd *= s.rent;
    for (ReservedTerm& t : in.reserved) t.usd_per_gpu_hour *= s.rent;
    if (in.spot) in.spot->usd_per_gpu_hour *= s.rent;
    if (in.server) {
      in.server->gpu_price_usd *= s.purchase;
      in.server->server_price_usd *= s.purchase;
    }
    if (s.probability)
      for (const RateAtProbability& r : m.confident_rates)
        if (r.q == *s.probability && r.max_rate_per_s > 0) in.max_rate_per_replica_per_s = r.max_rate_per_s;
    DemandCurve::Series demand = m.demand;
    for (double& v : demand.requests_per_s) v *= s.demand;
    // The servers bought and the replicas reserved are kept, but they hold only what an
    // unshifted plan bought them for.
    c.total_usd +=
        mix_cost(in, demand, d.curve, d, site, m.best.tranches, {m.best.reserved_term_months, m.best.reserved_replicas})
            .total_usd;
    const ModelPlan re = plan_model(in, demand, d, site);
    c.replanned_total_usd += re.best.total_usd;
    c.replanned_servers += re.best.servers;
  }
  return c;
}

namespace {

std::string times(double f) { return fmt::format("x {:g}", f); }

}  // namespace

void add_sensitivity(OverTimePlan& p) {
  p.sensitivity.clear();
  p.confident_totals.clear();
  const auto add = [&](std::string factor, std::string basis, Shift a, std::string sa, Shift b, std::string sb) {
    Sensitivity x;
    x.factor = std::move(factor);
    x.basis = std::move(basis);
    x.low = cost_under(p, a);
    x.low.setting = std::move(sa);
    x.high = cost_under(p, b);
    x.high.setting = std::move(sb);
    if (x.high.total_usd < x.low.total_usd) std::swap(x.low, x.high);
    p.sensitivity.push_back(std::move(x));
  };
  Shift lo, hi;
  lo.rent = 0.75;
  hi.rent = 1.25;
  add("rent price per GPU-hour", "kvplan's range, +-25 %: the catalog gives one provider's on-demand price", lo,
      times(lo.rent), hi, times(hi.rent));
  bool bought = false;
  for (const ModelPlan& m : p.models) bought = bought || m.best.servers > 0;
  if (bought) {
    lo = hi = Shift{};
    lo.purchase = 0.75;
    hi.purchase = 1.25;
    add("purchase price (GPUs and servers)",
        "kvplan's range, +-25 %: street prices of an H100 ran $25k-$40k against its $30k list (configs/servers)", lo,
        times(lo.purchase), hi, times(hi.purchase));
    lo = hi = Shift{};
    lo.electricity = 0.5;
    hi.electricity = 1.5;
    add("electricity price", "kvplan's range, x 0.5 to x 1.5: industrial prices differ by more than that between sites",
        lo, times(lo.electricity), hi, times(hi.electricity));
    lo = hi = Shift{};
    hi.extra_lead_months = 3;
    add("purchase lead time", "kvplan's range: servers delivered 3 months late, rented meanwhile", lo,
        fmt::format("{} months", p.options.purchase_lead_months), hi,
        fmt::format("{} months", p.options.purchase_lead_months + hi.extra_lead_months));
  }
  lo = hi = Shift{};
  lo.demand = 0.8;
  hi.demand = 1.2;
  add("demand level", "kvplan's range, +-20 % on every period: the forecast's error", lo, times(lo.demand), hi,
      times(hi.demand));
  // The same range read as a distribution: the demand factor uniform on it (a range with no
  // stated shape). The plan as bought never costs less as demand rises (the replicas needed
  // and their rent are non-decreasing in the rate), so its total's q-quantile is its total
  // at the factor's q-quantile.
  p.demand_quantile_totals.clear();
  for (const double q : {0.1, 0.5, 0.9}) {
    Shift s;
    s.demand = lo.demand + (hi.demand - lo.demand) * q;
    p.demand_quantile_totals.emplace_back(q, cost_under(p, s).total_usd);
  }
  const double g = p.options.growth_per_month;
  if (g != 0) {
    lo = hi = Shift{};
    lo.growth_per_month = 0.0;
    hi.growth_per_month = 2 * g;
    add("demand growth", "no growth, and twice the planned growth", lo, "0 % a month", hi,
        fmt::format("{:g} % a month", 200 * g));
  }
  bool measured = !p.models.empty();
  for (const ModelPlan& m : p.models) measured = measured && !m.confident_rates.empty();
  if (measured) {
    for (const double q : {0.9, 0.99}) {
      Shift s;
      s.probability = q;
      ScenarioCost c = cost_under(p, s);
      c.setting = fmt::format("SLO held with probability {:g}", q);
      p.confident_totals.emplace_back(q, c);
    }
    lo = hi = Shift{};
    hi.probability = 0.9;
    add("time model's error", "replicas sized at the max rate that meets the SLO with probability 0.9 under the "
        "profile's measured error on held-out runs", lo, "as predicted", hi, "probability 0.9");
  }
  std::stable_sort(p.sensitivity.begin(), p.sensitivity.end(),
                   [](const Sensitivity& a, const Sensitivity& b) { return a.swing_usd() > b.swing_usd(); });
  p.range_low_usd = p.range_high_usd = p.total_usd;
  for (const Sensitivity& x : p.sensitivity) {
    p.range_low_usd = std::min(p.range_low_usd, x.low.total_usd);
    p.range_high_usd = std::max(p.range_high_usd, x.high.total_usd);
  }
}

}  // namespace kvplan::size
