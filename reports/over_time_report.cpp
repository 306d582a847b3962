#include "reports/over_time_report.h"

#include <fmt/format.h>

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

std::string owned_words(const ModelPlan& m) {
  if (m.best.servers == 0)
    return m.server_form ? "buys nothing (renting every period is cheapest)" : "rents only (no purchase data)";
  return fmt::format("buys {} server{} ({}, {} GPUs, {} replicas, capex {})", m.best.servers,
                     m.best.servers == 1 ? "" : "s", *m.server_form, m.best.gpus_bought, m.best.replicas,
                     usd(m.best.capex_usd));
}

std::string headline(const OverTimePlan& p) {
  const auto& d = p.options;
  return fmt::format("demand {} ({} periods of {:g} h, repeated over {:g} months), growth {:g} % a month, "
                     "purchase lead time {} month{}",
                     d.curve.file, d.curve.hours.size(), d.curve.period_h, static_cast<double>(d.horizon_months),
                     d.growth_per_month * 100, d.purchase_lead_months, d.purchase_lead_months == 1 ? "" : "s");
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
      fmt::format("Owned cost per month: capex / ({:g} years x 12) from delivery (the value left at the horizon's end "
                  "is not counted), support and space as in the Buy figures, and energy (hosts at full power, bought "
                  "GPUs at idle power plus board power while busy) x PUE {:g} x ${:g}/kWh.",
                  p.site.amortization_years, p.site.pue, p.site.electricity_usd_per_kwh),
      std::string("Cash: capex paid in the month of delivery. Break-even: the first month whose cumulative cash is at "
                  "most renting everything's."),
      std::string("Each model's option is the one whose cheapest owned/rented split costs least over the horizon; "
                  "everything owned buys servers for the horizon's peak of that option, everything rented buys none.")};
}

nlohmann::json month_json(const MonthCost& m) {
  return {{"month", m.month},           {"growth_factor", m.growth_factor},   {"replicas_peak", m.replicas_peak},
          {"owned_serving", m.owned_serving}, {"owned_usd", m.owned_usd},    {"energy_usd", m.energy_usd},
          {"rented_usd", m.rented_usd}, {"rented_gpu_hours", m.rented_gpu_hours}, {"cost_usd", m.cost_usd},
          {"cash_usd", m.cash_usd},     {"all_rented_usd", m.all_rented_usd}};
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
    x["rented_gpu_hours"] = {{"on_demand", m.best.rented_gpu_hours}};
    x["total_usd"] = m.best.total_usd;
    x["cash_usd"] = m.best.cash_usd;
    x["all_rented_total_usd"] = m.all_rented.total_usd;
    x["all_owned_total_usd"] = m.all_owned ? nlohmann::json(m.all_owned->total_usd) : nlohmann::json(nullptr);
    x["all_owned_servers"] = m.all_owned ? nlohmann::json(m.all_owned->servers) : nlohmann::json(nullptr);
    x["break_even_month"] = m.break_even_month ? nlohmann::json(*m.break_even_month) : nlohmann::json(nullptr);
    x["months"] = nlohmann::json::array();
    for (const auto& mc : m.best.months) x["months"].push_back(month_json(mc));
    j["models"].push_back(std::move(x));
  }
  j["models_without_plan"] = p.models_without_plan;
  j["cost_by_month_usd"] = p.cost_by_month_usd;
  j["cash_by_month_usd"] = p.cash_by_month_usd;
  j["total_usd"] = p.total_usd;
  j["all_owned_total_usd"] = p.all_owned_total_usd ? nlohmann::json(*p.all_owned_total_usd) : nlohmann::json(nullptr);
  j["all_rented_total_usd"] = p.all_rented_total_usd;
  return j;
}

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
        number(m.replicas_mean), count(std::llround(m.gpu_hours_needed)), owned_words(m),
        count(std::llround(m.best.rented_gpu_hours)), usd(m.best.total_usd),
        m.all_owned ? usd(m.all_owned->total_usd) : std::string("-"), usd(m.all_rented.total_usd), be);
  }
  for (const auto& name : p.models_without_plan)
    out += fmt::format("{}{}: no option meeting the SLO with a rent price: not planned.\n", bullet, name);
  out += fmt::format("{}Fleet over {} months: {} (all owned {}, all rented {}).\n", bullet, p.options.horizon_months,
                     usd(p.total_usd), p.all_owned_total_usd ? usd(*p.all_owned_total_usd) : std::string("-"),
                     usd(p.all_rented_total_usd));
  if (md) out += "\n";
  Table t;
  t.header = {"month", "growth", "owned", "rented", "cost", "cash", "cumulative cash", "cumulative all rented"};
  t.right_align = {true, true, true, true, true, true, true, true};
  double cum = 0, cum_rent = 0;
  for (size_t k = 0; k < p.cost_by_month_usd.size(); ++k) {
    double owned = 0, rented = 0, all_rented = 0, growth = 1;
    for (const ModelPlan& m : p.models) {
      owned += m.best.months[k].owned_usd;
      rented += m.best.months[k].rented_usd;
      all_rented += m.best.months[k].all_rented_usd;
      growth = m.best.months[k].growth_factor;
    }
    cum += p.cash_by_month_usd[k];
    cum_rent += all_rented;
    t.rows.push_back({std::to_string(k + 1), fmt::format("x{:.3f}", growth), usd(owned), usd(rented),
                      usd(p.cost_by_month_usd[k]), usd(p.cash_by_month_usd[k]), usd(cum), usd(cum_rent)});
  }
  out += render(t, md ? TextFormat::md : TextFormat::table);
  out += md ? "\nAssumptions of the plan over time:\n\n" : "Assumptions of the plan over time:\n";
  for (const auto& a : assumptions(p)) out += bullet + a + "\n";
  return out;
}

std::string over_time_html(const SizeResult& r, const OverTimePlan& p) {
  using html::escape;
  std::string h = "<h2 id=\"over-time\">Over time: owned base, rented peaks</h2>\n";
  h += "<p>" + escape(headline(p)) + ".</p>\n<table>\n<tr><th>model</th><th>option</th><th>replicas peak</th>"
       "<th>replicas mean</th><th>GPU-hours needed</th><th>bought</th><th>rented GPU-hours</th><th>total</th>"
       "<th>all owned</th><th>all rented</th><th>break-even</th></tr>\n";
  const auto td = [](const std::string& s) { return "<td>" + escape(s) + "</td>"; };
  for (const ModelPlan& m : p.models)
    h += "<tr>" + td(m.model) + td(option_words(r, m)) + td(std::to_string(m.replicas_peak)) +
         td(number(m.replicas_mean)) + td(count(std::llround(m.gpu_hours_needed))) + td(owned_words(m)) +
         td(count(std::llround(m.best.rented_gpu_hours))) + td(usd(m.best.total_usd)) +
         td(m.all_owned ? usd(m.all_owned->total_usd) : "-") + td(usd(m.all_rented.total_usd)) +
         td(m.break_even_month ? fmt::format("month {}", *m.break_even_month) : "-") + "</tr>\n";
  h += "</table>\n";
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
  c.note = "Capex paid on delivery; rent at the GPU catalog's price per GPU-hour.";
  h += html::line_chart(c);
  h += "<ul>\n";
  for (const auto& s : assumptions(p)) h += "<li>" + escape(s) + "</li>\n";
  h += "</ul>\n";
  return h;
}

}  // namespace kvplan::reports
