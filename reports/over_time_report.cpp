#include "reports/over_time_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#include "reports/html.h"

namespace kvplan::reports {

using size::ModelPlan;
using size::MonthCost;
using size::OverTimePlan;
using size::SizeResult;

namespace {

std::string usd(double v) { return "$" + count(std::llround(v)); }

std::pair<const size::Deployment*, size_t> option_of(const SizeResult& r, int64_t candidate) {
  for (size_t i = 0; i < r.options.size(); ++i)
    if (r.options[i].candidate.index == candidate) return {&r.options[i], i + 1};
  throw std::logic_error("an over-time plan for a candidate the sizing result does not hold");
}

std::string option_words(const SizeResult& r, const ModelPlan& m) {
  const auto [o, rank] = option_of(r, m.candidate);
  std::string s = fmt::format("option #{} {} TP {}", rank, m.gpu, o->candidate.options.tp);
  if (o->candidate.options.pp > 1) s += fmt::format(" x PP {}", o->candidate.options.pp);
  return s;
}

std::string owned_words(const ModelPlan& m, int64_t lead_months) {
  if (m.best.servers == 0)
    return m.server_form ? "buys nothing (renting every period is cheapest)" : "rents only (no purchase data)";
  std::string s = fmt::format("buys {} server{} ({}, {} GPUs, {} replicas, capex {})", m.best.servers,
                              m.best.servers == 1 ? "" : "s", *m.server_form, m.best.gpus_bought, m.best.replicas,
                              usd(m.best.capex_usd));
  if (m.best.tranches.size() == 1 && m.best.tranches.front().order_month == 1) return s;
  std::vector<std::string> steps;
  for (const size::Tranche& t : m.best.tranches)
    steps.push_back(fmt::format("month {}: +{} ({}, serving from month {})", t.order_month, t.servers,
                                usd(t.capex_usd), t.order_month + lead_months));
  return s + fmt::format(" ordered in {} tranche{} as demand grows: {}", steps.size(), steps.size() == 1 ? "" : "s",
                         fmt::join(steps, "; "));
}

std::string headline(const OverTimePlan& p) {
  const auto& d = p.options;
  return fmt::format("demand {} ({} periods of {:g} h, repeated over {:g} months), growth {:g} % a month, "
                     "purchase lead time {} month{}",
                     d.curve.file, d.curve.hours.size(), d.curve.period_h, static_cast<double>(d.horizon_months),
                     d.growth_per_month * 100, d.purchase_lead_months, d.purchase_lead_months == 1 ? "" : "s");
}

//! The servers bought at the site (racks, floor, power) and what limited them.
std::vector<std::string> site_sentences(const OverTimePlan& p) {
  std::vector<std::string> out;
  if (p.racks > 0)
    out.push_back(fmt::format("At the site: {} rack{} ({:.1f} m2 of floor, aisles not included), {:.1f} kW of IT power "
                              "at peak, {:.1f} kW mean.",
                              p.racks, p.racks == 1 ? "" : "s", p.floor_m2, p.power_peak_kw, p.power_mean_kw));
  for (const ModelPlan& m : p.models)
    if (m.site_limit) out.push_back(fmt::format("{}: {}.", m.model, *m.site_limit));
  return out;
}

//! What a --prices card did to one model's plan, in one sentence.
std::string rent_mix_words(const ModelPlan& m) {
  std::string out = fmt::format("rent prices from {} ({}): on demand ${:.2f}/GPU-h", m.prices_file, m.prices_provider,
                                m.inputs.price_per_gpu_hour_usd);
  const size::MixCost& b = m.best;
  if (b.reserved_term_months > 0)
    out += fmt::format("; reserves {} replica(s) on {}-month terms ({} GPU-hours)", fmt::join(b.reserved_replicas, "/"),
                       b.reserved_term_months, count(std::llround(b.reserved_gpu_hours)));
  else if (!m.inputs.reserved.empty())
    out += "; no reservation pays (or no whole term fits the horizon)";
  if (m.spot_effective_usd_per_gpu_hour)
    out += fmt::format("; spot ${:.2f}/GPU-h with its interruptions ({:g} a month, {:g} min to replace){}",
                       *m.spot_effective_usd_per_gpu_hour, m.inputs.spot->interruptions_per_month,
                       m.inputs.spot->replace_minutes,
                       b.spot_gpu_hours > 0 ? fmt::format(": {} GPU-hours", count(std::llround(b.spot_gpu_hours)))
                                            : std::string(": dearer than on demand, not used"));
  return out + ".";
}

std::vector<std::string> assumptions(const OverTimePlan& p) {
  return {
      fmt::format("A month is {:g} h; the curve's cycle ({:g} h) repeats through it; the rates of month m (1, 2, ...) "
                  "are the curve's x (1 + growth)^(m - 1).",
                  size::kHoursPerMonth, p.options.curve.cycle_h()),
      std::string("Each period needs ceil(rate / max rate per replica) replicas, the max rate the search simulated "
                  "for the option (no simulation per period)."),
      std::string("Servers bought serve the base from delivery (after the lead time); every replica beyond them, and "
                  "all of them before delivery, is rented on demand at the GPU catalog's price per GPU-hour."),
      std::string("Servers may be bought at once or in tranches as demand grows (each ordered a lead time before it "
                  "serves): the cheapest schedule over the horizon, found exactly over months and owned counts up to "
                  "the peak's servers, is kept when it costs less than one purchase."),
      fmt::format("Owned cost per month: capex / ({:g} years x 12) from delivery (the value left at the horizon's end "
                  "is not counted), support and space as in the Buy figures, and energy (hosts at full power, bought "
                  "GPUs at idle power plus board power while busy) x PUE {:g} x ${:g}/kWh.",
                  p.site.amortization_years, p.site.pue, p.site.electricity_usd_per_kwh),
      std::string("Cash: each tranche's capex paid in the month it is ordered (a lead time before it serves). Break-even: the first month whose cumulative cash is at "
                  "most renting everything's."),
      std::string("Each model's option is the one whose cheapest owned/rented split costs least over the horizon; "
                  "everything owned buys servers for the horizon's peak of that option, everything rented buys none.")};
}

//! The assumptions of the plan over time, with those of the --prices cards when any.
std::vector<std::string> all_assumptions(const OverTimePlan& p) {
  std::vector<std::string> out = assumptions(p);
  if (p.options.prices.empty()) return out;
  out.push_back(
      "With --prices, a GPU's card replaces the catalog's on-demand price. A reservation runs whole terms from month 1 "
      "that end inside the horizon, paid every hour of the term; each term reserves the replica levels above the "
      "owned ones whose rent for the hours they are needed costs more (the term length saving most wins); with "
      "servers bought in tranches, the schedule and each term length's reservation are also chosen together. Spot "
      "takes the rented peaks when, with its interruptions, it costs less than on demand: per GPU-hour the spot price "
      "+ interruptions per month / 730 x (replace minutes / 60 + the p99 end-to-end latency in hours: the work in "
      "flight re-prefilled) x the on-demand price.");
  return out;
}

nlohmann::json month_json(const MonthCost& m) {
  return {{"month", m.month},           {"growth_factor", m.growth_factor},   {"replicas_peak", m.replicas_peak},
          {"owned_serving", m.owned_serving}, {"owned_servers", m.servers_owned},
          {"capex_paid_usd", m.capex_paid_usd}, {"owned_usd", m.owned_usd},    {"energy_usd", m.energy_usd},
          {"rented_usd", m.rented_usd}, {"rented_gpu_hours", m.rented_gpu_hours}, {"cost_usd", m.cost_usd},
          {"cash_usd", m.cash_usd},     {"all_rented_usd", m.all_rented_usd},
          {"reserved_replicas", m.reserved_replicas}, {"reserved_usd", m.reserved_usd},
          {"spot_gpu_hours", m.spot_gpu_hours}, {"spot_usd", m.spot_usd}};
}

//! The rent prices a model's plan used: a --prices file's card, or null (the GPU catalog's
//! on-demand price alone).
nlohmann::json prices_json(const ModelPlan& m) {
  if (m.prices_file.empty()) return nullptr;
  nlohmann::json j = {{"file", m.prices_file},
                      {"provider", m.prices_provider},
                      {"on_demand_usd_per_gpu_hour", m.inputs.price_per_gpu_hour_usd},
                      {"reserved", nlohmann::json::array()},
                      {"spot", nullptr}};
  for (const auto& t : m.inputs.reserved)
    j["reserved"].push_back({{"term_months", t.term_months}, {"usd_per_gpu_hour", t.usd_per_gpu_hour}});
  if (m.inputs.spot)
    j["spot"] = {{"usd_per_gpu_hour", m.inputs.spot->usd_per_gpu_hour},
                 {"interruptions_per_month", m.inputs.spot->interruptions_per_month},
                 {"replace_minutes", m.inputs.spot->replace_minutes},
                 {"effective_usd_per_gpu_hour", *m.spot_effective_usd_per_gpu_hour}};
  return j;
}

nlohmann::json scenario_json(const size::ScenarioCost& c) {
  return {{"setting", c.setting},
          {"total_usd", c.total_usd},
          {"replanned_total_usd", c.replanned_total_usd},
          {"replanned_servers", c.replanned_servers}};
}

std::string pct(double v, double base) { return fmt::format("{:+.1f} %", base != 0 ? 100 * (v / base - 1) : 0.0); }

//! "If demand grows twice as fast", "with probability 0.9": the sentences the finance
//! summary and the text share.
std::vector<std::string> risk_sentences(const OverTimePlan& p) {
  std::vector<std::string> out;
  for (const auto& x : p.sensitivity)
    if (x.factor == "demand growth")
      for (const auto* c : {&x.low, &x.high})
        if (c->setting != "0 % a month")
          out.push_back(fmt::format("If demand grows twice as fast ({}), the plan as bought costs {} ({}); "
                                    "re-planned for it, {} with {} server{}.",
                                    c->setting, usd(c->total_usd), pct(c->total_usd, p.total_usd),
                                    usd(c->replanned_total_usd), c->replanned_servers,
                                    c->replanned_servers == 1 ? "" : "s"));
  if (p.demand_quantile_totals.size() == 3) {
    const auto& q = p.demand_quantile_totals;
    out.push_back(fmt::format(
        "With demand x 0.8 to x 1.2 of the forecast, uniform (the range states no shape), the plan as bought costs at "
        "most {} with probability {:g}, {} with {:g} and {} with {:g}; demand above the forecast is rented, so the SLO "
        "rests on the time model's error and on GPUs to rent, not on the forecast.",
        usd(q[0].second), q[0].first, usd(q[1].second), q[1].first, usd(q[2].second), q[2].first));
  }
  if (p.confident_totals.empty()) {
    std::vector<std::string> unmeasured;
    for (const ModelPlan& m : p.models)
      if (m.error_runs == 0) unmeasured.push_back(m.gpu);
    if (!unmeasured.empty())
      out.push_back(fmt::format("The time model's error is not measured for {} (no held-out runs in the profile): "
                                "the plan's replicas rest on its predictions alone.",
                                fmt::join(unmeasured, ", ")));
  } else {
    std::string s = "Under the time model's measured error on held-out runs, ";
    for (size_t i = 0; i < p.models.size(); ++i)
      s += fmt::format("{}{}'s busiest replicas meet the SLO with probability {:.0f} % ({} runs{})",
                       i == 0 ? "" : "; ", p.models[i].model, 100 * p.models[i].slo_probability_at_max,
                       p.models[i].error_runs, p.models[i].error_on_gpu ? " on its GPU" : ", every GPU's");
    s += "; sized to hold it";
    for (size_t i = 0; i < p.confident_totals.size(); ++i) {
      const auto& [q, c] = p.confident_totals[i];
      s += fmt::format("{} with probability {:g} the plan costs {} ({})", i == 0 ? "" : " and", q,
                       usd(c.replanned_total_usd), pct(c.replanned_total_usd, p.total_usd));
    }
    out.push_back(s + ".");
  }
  return out;
}

}  // namespace

nlohmann::json over_time_json(const SizeResult& r, const OverTimePlan& p) {
  const auto& d = p.options;
  nlohmann::json j;
  j["demand_file"] = d.curve.file;
  j["period_h"] = d.curve.period_h;
  j["cycle_h"] = d.curve.cycle_h();
  j["hours_per_month"] = size::kHoursPerMonth;
  j["horizon_months"] = d.horizon_months;
  j["growth_per_month"] = d.growth_per_month;
  j["purchase_lead_months"] = d.purchase_lead_months;
  j["periods"] = d.curve.hours;
  j["models"] = nlohmann::json::array();
  for (const ModelPlan& m : p.models) {
    const auto [o, rank] = option_of(r, m.candidate);
    nlohmann::json x;
    x["model"] = m.model;
    x["rank"] = rank;
    x["candidate"] = m.candidate;
    x["gpu"] = m.gpu;
    x["tp"] = o->candidate.options.tp;
    x["dp"] = o->candidate.options.dp;
    x["pp"] = o->candidate.options.pp;
    x["max_rate_per_replica_per_s"] = m.max_rate_per_replica_per_s;
    x["gpus_per_replica"] = m.gpus_per_replica;
    x["price_per_gpu_hour_usd"] = m.price_per_gpu_hour_usd;
    x["server"] = m.server_form ? nlohmann::json(*m.server_form) : nlohmann::json(nullptr);
    x["servers_per_rack"] = m.servers_per_rack;
    x["racks"] = m.best.racks;
    x["floor_m2"] = m.best.floor_m2;
    x["power_peak_kw"] = m.best.power_peak_w / 1000.0;
    x["power_mean_kw"] = m.best.power_mean_w / 1000.0;
    x["site_limit"] = m.site_limit ? nlohmann::json(*m.site_limit) : nlohmann::json(nullptr);
    x["periods"] = nlohmann::json::array();
    for (const auto& q : m.periods)
      x["periods"].push_back({{"hour", q.hour}, {"requests_per_s", q.requests_per_s}, {"replicas", q.replicas}});
    x["replicas_peak"] = m.replicas_peak;
    x["replicas_mean"] = m.replicas_mean;
    x["gpu_hours_needed"] = m.gpu_hours_needed;
    x["owned_servers"] = m.best.servers;
    x["owned_replicas"] = m.best.replicas;
    x["owned_gpus"] = m.best.gpus_bought;
    x["capex_usd"] = m.best.capex_usd;
    x["purchases"] = nlohmann::json::array();
    for (const size::Tranche& t : m.best.tranches)
      x["purchases"].push_back({{"order_month", t.order_month},
                                {"serving_from_month", t.order_month + p.options.purchase_lead_months},
                                {"servers_added", t.servers},
                                {"capex_usd", t.capex_usd}});
    x["rent_prices"] = prices_json(m);
    x["reserved"] = m.best.reserved_term_months > 0
                        ? nlohmann::json{{"term_months", m.best.reserved_term_months},
                                         {"replicas_by_term", m.best.reserved_replicas}}
                        : nlohmann::json(nullptr);
    x["rented_gpu_hours"] = {{"on_demand", m.best.rented_gpu_hours - m.best.spot_gpu_hours},
                             {"spot", m.best.spot_gpu_hours},
                             {"reserved", m.best.reserved_gpu_hours}};
    x["total_usd"] = m.best.total_usd;
    x["cash_usd"] = m.best.cash_usd;
    x["all_rented_total_usd"] = m.all_rented.total_usd;
    x["all_owned_total_usd"] = m.all_owned ? nlohmann::json(m.all_owned->total_usd) : nlohmann::json(nullptr);
    x["all_owned_servers"] = m.all_owned ? nlohmann::json(m.all_owned->servers) : nlohmann::json(nullptr);
    x["break_even_month"] = m.break_even_month ? nlohmann::json(*m.break_even_month) : nlohmann::json(nullptr);
    x["months"] = nlohmann::json::array();
    for (const auto& mc : m.best.months) x["months"].push_back(month_json(mc));
    if (m.error_runs > 0) {
      nlohmann::json e = {{"held_out_runs", m.error_runs},
                          {"on_gpu", m.error_on_gpu},
                          {"slo_probability_at_max_rate", m.slo_probability_at_max},
                          {"max_rate_per_replica_per_s_at", nlohmann::json::array()}};
      for (const auto& c : m.confident_rates)
        e["max_rate_per_replica_per_s_at"].push_back(
            {{"probability", c.q}, {"max_rate_per_s", c.max_rate_per_s}, {"worst_run", c.worst_run}});
      x["time_model_error"] = std::move(e);
    } else {
      x["time_model_error"] = nullptr;
    }
    j["models"].push_back(std::move(x));
  }
  j["models_without_plan"] = p.models_without_plan;
  j["cost_by_month_usd"] = p.cost_by_month_usd;
  j["cash_by_month_usd"] = p.cash_by_month_usd;
  j["total_usd"] = p.total_usd;
  j["all_owned_total_usd"] = p.all_owned_total_usd ? nlohmann::json(*p.all_owned_total_usd) : nlohmann::json(nullptr);
  j["all_rented_total_usd"] = p.all_rented_total_usd;
  j["site"] = {{"racks", p.racks},
               {"floor_m2", p.floor_m2},
               {"power_peak_kw", p.power_peak_kw},
               {"power_mean_kw", p.power_mean_kw}};
  j["total_range_usd"] = {p.range_low_usd, p.range_high_usd};
  j["sensitivity"] = nlohmann::json::array();
  for (const auto& x : p.sensitivity)
    j["sensitivity"].push_back({{"factor", x.factor},
                                {"basis", x.basis},
                                {"low", scenario_json(x.low)},
                                {"high", scenario_json(x.high)},
                                {"swing_usd", x.swing_usd()}});
  j["demand_quantile_totals"] = nlohmann::json::array();
  for (const auto& [q, usd] : p.demand_quantile_totals)
    j["demand_quantile_totals"].push_back({{"probability", q}, {"total_usd", usd}});
  j["confident_totals"] = nlohmann::json::array();
  for (const auto& [q, c] : p.confident_totals) {
    nlohmann::json e = scenario_json(c);
    e["probability"] = q;
    j["confident_totals"].push_back(std::move(e));
  }
  return j;
}

namespace {

// A terminal gets the ranges' sources as lines below the table: as a column they made it
// wider than any terminal.
Table sensitivity_table(const OverTimePlan& p, bool with_basis) {
  Table t;
  t.header = {"assumption", "low", "total", "high", "total", "swing", "re-planned at high"};
  t.right_align = {false, false, true, false, true, true, true};
  if (with_basis) {
    t.header.push_back("range from");
    t.right_align.push_back(false);
  }
  for (const auto& x : p.sensitivity) {
    t.rows.push_back({x.factor, x.low.setting, usd(x.low.total_usd), x.high.setting, usd(x.high.total_usd),
                      usd(x.swing_usd()),
                      fmt::format("{} ({} servers)", usd(x.high.replanned_total_usd), x.high.replanned_servers)});
    if (with_basis) t.rows.back().push_back(x.basis);
  }
  return t;
}

html::Tornado tornado_of(const OverTimePlan& p) {
  html::Tornado t;
  t.title = fmt::format("What moves the total over {} months", p.options.horizon_months);
  t.unit = "total cost over the horizon (USD), the servers bought kept";
  t.base = p.total_usd;
  for (const auto& x : p.sensitivity) t.bars.push_back({x.factor, x.low.setting, x.high.setting, x.low.total_usd, x.high.total_usd});
  return t;
}

std::string table_html(const Table& t) {
  using html::escape;
  // In a box of its own that scrolls sideways: a wide table never widens the page.
  std::string h = "<div class=\"scroll\"><table>\n<tr>";
  for (const auto& c : t.header) h += "<th>" + escape(c) + "</th>";
  h += "</tr>\n";
  for (const auto& row : t.rows) {
    h += "<tr>";
    for (size_t i = 0; i < row.size(); ++i)
      h += std::string(i < t.right_align.size() && t.right_align[i] ? "<td class=\"n\">" : "<td>") + escape(row[i]) +
           "</td>";
    h += "</tr>\n";
  }
  return h + "</table></div>\n";
}

}  // namespace

std::string over_time_text(const SizeResult& r, const OverTimePlan& p, TextFormat f) {
  const bool md = f == TextFormat::md;
  const auto bullet = md ? "- " : "  ";
  std::string out = md ? "\n## Over time: owned base, rented peaks\n\n" : "\nOver time (owned base, rented peaks):\n";
  out += bullet + headline(p) + ".\n";
  for (const ModelPlan& m : p.models) {
    std::string be;
    if (m.break_even_month) be = fmt::format("; break-even against renting in month {}", *m.break_even_month);
    else if (m.best.servers > 0) be = "; no break-even against renting within the horizon";
    out += fmt::format(
        "{}{}: {} at {} requests/s per replica; replicas peak {}, mean {}; {} GPU-hours needed; {}; rents {} "
        "GPU-hours on demand; total {} (all owned {}, all rented {}){}.\n",
        bullet, m.model, option_words(r, m), number(m.max_rate_per_replica_per_s), m.replicas_peak,
        number(m.replicas_mean), count(std::llround(m.gpu_hours_needed)), owned_words(m, p.options.purchase_lead_months),
        count(std::llround(m.best.rented_gpu_hours - m.best.spot_gpu_hours)), usd(m.best.total_usd),
        m.all_owned ? usd(m.all_owned->total_usd) : std::string("-"), usd(m.all_rented.total_usd), be);
    if (!m.prices_file.empty()) out += bullet + m.model + ": " + rent_mix_words(m) + "\n";
  }
  for (const auto& name : p.models_without_plan)
    out += fmt::format("{}{}: no option meeting the SLO with a rent price: not planned.\n", bullet, name);
  out += fmt::format("{}Fleet over {} months: {} (all owned {}, all rented {}).\n", bullet, p.options.horizon_months,
                     usd(p.total_usd), p.all_owned_total_usd ? usd(*p.all_owned_total_usd) : std::string("-"),
                     usd(p.all_rented_total_usd));
  for (const auto& s : site_sentences(p)) out += bullet + s + "\n";
  if (!p.sensitivity.empty())
    out += fmt::format("{}Between {} and {} moving one assumption at a time (below); the servers bought kept.\n",
                       bullet, usd(p.range_low_usd), usd(p.range_high_usd));
  for (const auto& s : risk_sentences(p)) out += bullet + s + "\n";
  if (md) out += "\n";
  Table t;
  t.header = {"month", "growth", "servers", "capex paid", "owned", "rented", "cost", "cash", "cumulative cash",
              "cumulative all rented"};
  t.right_align = std::vector<bool>(t.header.size(), true);
  double cum = 0, cum_rent = 0;
  for (size_t k = 0; k < p.cost_by_month_usd.size(); ++k) {
    double owned = 0, rented = 0, all_rented = 0, growth = 1, capex = 0;
    int64_t servers = 0;
    for (const ModelPlan& m : p.models) {
      servers += m.best.months[k].servers_owned;
      capex += m.best.months[k].capex_paid_usd;
      owned += m.best.months[k].owned_usd;
      rented += m.best.months[k].rented_usd;
      all_rented += m.best.months[k].all_rented_usd;
      growth = m.best.months[k].growth_factor;
    }
    cum += p.cash_by_month_usd[k];
    cum_rent += all_rented;
    t.rows.push_back({std::to_string(k + 1), fmt::format("x{:.3f}", growth), std::to_string(servers), usd(capex),
                      usd(owned), usd(rented),
                      usd(p.cost_by_month_usd[k]), usd(p.cash_by_month_usd[k]), usd(cum), usd(cum_rent)});
  }
  out += render(t, md ? TextFormat::md : TextFormat::table);
  if (!p.sensitivity.empty()) {
    out += md ? "\nSensitivity of the total (one assumption at a time):\n\n" : "Sensitivity of the total (one assumption at a time):\n";
    out += render(sensitivity_table(p, md), md ? TextFormat::md : TextFormat::table);
    if (!md) {
      out += "Ranges:\n";
      for (const auto& x : p.sensitivity) out += fmt::format("  {}: {}.\n", x.factor, x.basis);
    }
  }
  out += md ? "\nAssumptions of the plan over time:\n\n" : "Assumptions of the plan over time:\n";
  for (const auto& a : all_assumptions(p)) out += bullet + a + "\n";
  return out;
}

std::string over_time_html(const SizeResult& r, const OverTimePlan& p) {
  using html::escape;
  std::string h = "<h2 id=\"over-time\">Over time: owned base, rented peaks</h2>\n";
  h += "<p>" + escape(headline(p)) + ".</p>\n<div class=\"scroll\"><table>\n<tr><th>model</th><th>option</th><th>replicas peak</th>"
       "<th>replicas mean</th><th>GPU-hours needed</th><th>bought</th><th>rented GPU-hours</th><th>total</th>"
       "<th>all owned</th><th>all rented</th><th>break-even</th></tr>\n";
  const auto td = [](const std::string& s) { return "<td>" + escape(s) + "</td>"; };
  for (const ModelPlan& m : p.models)
    h += "<tr>" + td(m.model) + td(option_words(r, m)) + td(std::to_string(m.replicas_peak)) +
         td(number(m.replicas_mean)) + td(count(std::llround(m.gpu_hours_needed))) + td(owned_words(m, p.options.purchase_lead_months)) +
         td(count(std::llround(m.best.rented_gpu_hours))) + td(usd(m.best.total_usd)) +
         td(m.all_owned ? usd(m.all_owned->total_usd) : "-") + td(usd(m.all_rented.total_usd)) +
         td(m.break_even_month ? fmt::format("month {}", *m.break_even_month) : "-") + "</tr>\n";
  h += "</table></div>\n";
  for (const auto& s : site_sentences(p)) h += "<p>" + escape(s) + "</p>\n";
  for (const ModelPlan& m : p.models)
    if (!m.prices_file.empty()) h += "<p>" + escape(m.model + ": " + rent_mix_words(m)) + "</p>\n";
  html::Chart c;
  c.title = "Cumulative cash over the horizon";
  c.x.label = "month";
  c.y.label = "cumulative cash (USD)";
  const auto series = [](const char* label, size_t colour) {
    html::Series s;
    s.label = label;
    s.color = html::palette(colour);
    return s;
  };
  html::Series mix = series("owned base + rented peaks", 0), rent = series("everything rented", 1),
               own = series("everything owned", 2);
  double a = 0, b = 0, o = 0;
  const bool owned_known = p.all_owned_total_usd.has_value();
  for (size_t k = 0; k < p.cash_by_month_usd.size(); ++k) {
    a += p.cash_by_month_usd[k];
    for (const ModelPlan& m : p.models) {
      b += m.all_rented.months[k].cash_usd;
      if (m.all_owned) o += m.all_owned->months[k].cash_usd;
    }
    const auto x = static_cast<double>(k + 1);
    mix.points.emplace_back(x, a);
    rent.points.emplace_back(x, b);
    own.points.emplace_back(x, o);
  }
  c.series = {mix, rent};
  if (owned_known) c.series.push_back(own);
  c.note = "Capex paid when ordered; rent at the GPU catalog's price per GPU-hour.";
  h += html::line_chart(c);
  if (!p.sensitivity.empty()) {
    h += "<h3>Sensitivity of the total</h3>\n<p>One assumption at a time, the others as planned; \"total\" keeps the "
         "servers bought, \"re-planned\" is the cheapest split had the high side been known.</p>\n";
    h += html::tornado(tornado_of(p));
    h += table_html(sensitivity_table(p, true));
  }
  h += "<ul>\n";
  for (const auto& s : all_assumptions(p)) h += "<li>" + escape(s) + "</li>\n";
  h += "</ul>\n";
  return h;
}

std::string over_time_summary_html(const SizeResult& r, const OverTimePlan& p) {
  using html::escape;
  std::string h = fmt::format("<h2 id=\"finance\">For finance: the fleet over {} months</h2>\n<div class=\"rec\">\n",
                              p.options.horizon_months);
  int64_t servers = 0;
  double capex = 0;
  for (const ModelPlan& m : p.models) servers += m.best.servers, capex += m.best.capex_usd;
  h += fmt::format("<p class=\"big\">Total {} over {} months{}</p>\n", usd(p.total_usd), p.options.horizon_months,
                   p.sensitivity.empty() ? std::string()
                                         : fmt::format(" (between {} and {}, one assumption at a time)",
                                                       usd(p.range_low_usd), usd(p.range_high_usd)));
  h += fmt::format("<p>{}: capex {} paid when ordered; against {} renting everything{}.</p>\n",
                   servers > 0 ? fmt::format("Buy {} server{}, rent the peaks", servers, servers == 1 ? "" : "s")
                               : std::string("Rent everything (no purchase pays)"),
                   usd(capex), usd(p.all_rented_total_usd),
                   p.all_owned_total_usd ? " and " + usd(*p.all_owned_total_usd) + " owning everything" : "");
  h += "<ul>\n";
  for (const ModelPlan& m : p.models) {
    std::string be;
    if (m.break_even_month) be = fmt::format("; break-even against renting in month {}", *m.break_even_month);
    h += "<li>" + escape(fmt::format("{}: {}; {}; total {}{}.", m.model, option_words(r, m), owned_words(m, p.options.purchase_lead_months),
                                     usd(m.best.total_usd), be)) +
         "</li>\n";
  }
  for (const auto& s : site_sentences(p)) h += "<li>" + escape(s) + "</li>\n";
  for (const auto& s : risk_sentences(p)) h += "<li>" + escape(s) + "</li>\n";
  h += "</ul>\n</div>\n";
  html::StackedBars b;
  b.title = "Cash out by month";
  b.unit = "USD per month (each tranche's capex in the month it is ordered)";
  b.segments = {"capex", "owned running costs", "rent"};
  b.colors = {html::palette(3), html::palette(2), html::palette(0)};
  for (size_t k = 0; k < p.cash_by_month_usd.size(); ++k) {
    double capex_paid = 0, running = 0, rent = 0;
    for (const ModelPlan& m : p.models) {
      const MonthCost& mc = m.best.months[k];
      rent += mc.rented_usd;
      capex_paid += mc.capex_paid_usd;
      running += mc.cash_usd - mc.rented_usd - mc.capex_paid_usd;
    }
    b.bars.push_back(fmt::format("month {}", k + 1));
    b.values.push_back({capex_paid, running, rent});
  }
  h += "<div class=\"charts\"><div class=\"chart\">" + html::stacked_bars(b) + "</div>";
  if (!p.sensitivity.empty()) h += "<div class=\"chart\">" + html::tornado(tornado_of(p)) + "</div>";
  h += "</div>\n<p class=\"small\">Sources: rent at each GPU's on-demand price per GPU-hour in configs/gpus (its file "
       "comments the source and date)";
  for (const ModelPlan& m : p.models)
    if (!m.prices_file.empty())
      h += escape(fmt::format(", for {} the rent card {} ({}: on demand, reserved and spot)", m.model, m.prices_file,
                              m.prices_provider));
  h += "; purchase prices, board and idle power from configs/servers";
  std::vector<std::string> files;
  for (const ModelPlan& m : p.models)
    if (m.inputs.server && m.best.servers > 0) {
      // The file's name only: the folder is the catalog's (or --servers'), not the reader's business.
      const std::string& f = m.inputs.server->file;
      const std::string name = f.substr(f.find_last_of('/') == std::string::npos ? 0 : f.find_last_of('/') + 1);
      if (std::find(files.begin(), files.end(), name) == files.end()) files.push_back(name);
    }
  if (!files.empty()) h += " (" + escape(fmt::format("{}", fmt::join(files, ", "))) + ")";
  h += fmt::format("; electricity ${:g}/kWh and PUE {:g} (docs/buy.md: EIA 2024, Uptime Institute 2023, unless "
                   "given); demand {}; the max rate per replica simulated by kvplan at the workload's request shapes "
                   "and SLO{}. Ranges of the sensitivity: its table's last column. All prices indicative, not quotes."
                   "</p>\n",
                   p.site.electricity_usd_per_kwh, p.site.pue, escape(p.options.curve.file),
                   r.calibrated ? ", on the measured calibration profile" : "");
  return h;
}

}  // namespace kvplan::reports
