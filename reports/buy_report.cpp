#include "reports/buy_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <filesystem>
#include <set>

#include "planner/units.h"
#include "reports/html.h"

namespace kvplan::reports {

namespace {

using size::BuyFigures;
using size::BuyResult;
using size::Deployment;
using size::SizeResult;

std::string usd(double v) { return "$" + count(std::llround(v)); }
std::string usd_cents(double v) { return fmt::format("${:.3f}", v); }
std::string kw(double w) { return fmt::format("{:.1f} kW", w / 1000.0); }

//! The option (and its 1-based rank) a BuyFigures belongs to.
std::pair<const Deployment*, size_t> option_of(const SizeResult& r, const BuyFigures& b) {
  for (size_t i = 0; i < r.options.size(); ++i)
    if (r.options[i].candidate.index == b.candidate) return {&r.options[i], i + 1};
  throw std::logic_error("buy figures for a candidate the sizing result does not hold");
}

std::string shape(const Deployment& o) {
  std::string s = fmt::format("{} x TP {}", o.replicas, o.candidate.options.tp);
  if (o.candidate.options.pp > 1) s += fmt::format(" x PP {}", o.candidate.options.pp);
  return s;
}

std::string layout_words(const BuyFigures& b) {
  const auto& l = b.layout;
  if (l.replicas_per_server > 0)
    return fmt::format("{} replica{} per server", l.replicas_per_server, l.replicas_per_server == 1 ? "" : "s");
  return fmt::format("{} servers per replica", l.servers_per_replica);
}

std::string break_even_words(const BuyFigures& b) {
  if (!b.rent_usd_per_month) return "no rent price";
  if (!b.break_even_month) return "never";
  const int64_t m = *b.break_even_month;
  const auto life = static_cast<int64_t>(std::llround(b.amortization_years * 12));
  return fmt::format("month {}{}", m, m > life ? " (after the amortization period)" : "");
}

//! The feasible figures, one per distinct bill of materials (model, GPU, replicas, TP,
//! PP) at its best rank: options differing only in weights, KV format or engine limits
//! buy the same hardware.
std::vector<const BuyFigures*> distinct_bills(const SizeResult& r, const BuyResult& b) {
  std::vector<const BuyFigures*> out;
  std::set<std::string> seen;
  for (const auto& x : b.options) {
    if (x.infeasible) continue;
    const Deployment* o = option_of(r, x).first;
    const auto key = fmt::format("{}|{}|{}|{}|{}", o->model, o->gpu, o->replicas, o->candidate.options.tp,
                                 o->candidate.options.pp);
    if (seen.insert(key).second) out.push_back(&x);
  }
  return out;
}

constexpr const char* kRankNote =
    "#: the bill's rank by the objective; option: its row in the table of options meeting the SLO.";

constexpr const char* kDistinctNote =
    "One row per distinct bill of materials, at its best rank (options differing only in weights, KV format or "
    "engine limits buy the same hardware); the JSON and CSV outputs list every option.";

//! "Buy for m: 2 x HGX ... with 16 h100-sxm GPUs (12 serving), 1 rack, ..." per model,
//! for the first option of each model that can be bought.
nlohmann::json opt(std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

//! The KV tiers' cost line inside a capex, or empty without a tier bought.
std::string tier_capex_words(const BuyFigures& x) {
  std::vector<std::string> parts;
  if (x.dram_bought_bytes_per_server > 0)
    parts.push_back(fmt::format("{} for {:.0f} GiB more DRAM per server", usd(x.dram_capex_usd),
                                to_gib(static_cast<double>(x.dram_bought_bytes_per_server))));
  if (x.nvme_bytes > 0)
    parts.push_back(x.nvme_capex_usd ? fmt::format("{} for {:.2f} TB of NVMe drives", usd(*x.nvme_capex_usd),
                                                   static_cast<double>(x.nvme_bytes) / 1e12)
                                     : std::string("NVMe drives of the disk tier not priced (no nvme_usd_per_tb in --prices)"));
  if (parts.empty()) return "";
  std::string s = " (KV tiers: " + parts[0];
  for (size_t i = 1; i < parts.size(); ++i) s += "; " + parts[i];
  return s + ")";
}

std::vector<std::string> buy_summaries(const SizeResult& r, const BuyResult& b) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& x : b.options) {
    if (x.infeasible) continue;
    const Deployment* o = option_of(r, x).first;
    if (!seen.insert(o->model).second) continue;
    const auto& l = x.layout;
    out.push_back(fmt::format(
        "Buy for {}: {} x {} with {} {} GPU{}{}, {} rack{}, {} peak: capex {}{}, opex {}/year, TCO {} over {:g} years; "
        "{} per million output tokens; break-even vs rent: {}.",
        o->model, l.servers, x.server.form, l.gpus_bought, o->gpu, l.gpus_bought == 1 ? "" : "s",
        l.gpus_bought > l.gpus_used ? fmt::format(" ({} serving)", l.gpus_used) : "", x.racks, x.racks == 1 ? "" : "s",
        kw(x.power_peak_w), usd(x.capex_usd), tier_capex_words(x), usd(x.opex_usd_per_year), usd(x.tco_usd), x.amortization_years,
        usd_cents(x.usd_per_million_output_tokens), break_even_words(x)));
  }
  return out;
}

}  // namespace

std::vector<std::string> buy_assumptions(const BuyResult& b) {
  const auto& s = b.site;
  std::vector<std::string> a;
  a.push_back(fmt::format(
      "Site: electricity ${:.3f}/kWh (--electricity-usd-per-kwh), PUE {:.2f} (--pue), amortization {:g} years "
      "(--amortization-years), utilization {:.0f} % of the time at the workload's rate (--utilization), racks of "
      "{:g} kW and {}U (--rack-kw, --rack-units), network and installation {:.0f} % of the GPU and server price up "
      "front (--network-fraction), support {:.0f} % of it per year (--support-fraction-per-year), space ${:g} per "
      "rack and month (--rack-usd-per-month).",
      s.electricity_usd_per_kwh, s.pue, s.amortization_years, s.utilization * 100, s.rack_kw, s.rack_units,
      s.network_fraction * 100, s.support_fraction_per_year * 100, s.rack_usd_per_month));
  a.push_back("Servers: a tensor-parallel group stays on one server's GPU fabric unless the server catalog says the "
              "fabric spans servers; pipeline stages may split across servers (floor(GPUs per server / TP) stages per "
              "server); replicas that fit are packed floor(GPUs per server / (TP x PP)) to a server. Baseboard "
              "servers (HGX, OAM) are bought with every GPU slot filled; the spare GPUs idle.");
  a.push_back("Racks = ceil(servers / servers per rack), servers per rack = min(floor(rack kW / server peak kW), "
              "floor(rack U / server U)); server peak = host power + its GPUs at board power.");
  if (!s.liquid_cooling || s.site_kw || s.site_racks)
    a.push_back(fmt::format("Site limits: {}{}{}; a purchase beyond them cannot be placed (its row says why).",
                            s.liquid_cooling ? "air and liquid cooling" : "air cooling only (--cooling air)",
                            s.site_kw ? fmt::format(", {:g} kW of IT power (--site-kw)", *s.site_kw) : std::string(),
                            s.site_racks ? fmt::format(", {} racks (--site-racks)", *s.site_racks) : std::string()));
  a.push_back("Power: a GPU draws its board power (TDP) while a step runs and its idle power otherwise; busy time is "
              "the simulated fraction of time with a step running at each replica's share of the load, times the "
              "utilization; the host (CPUs, NICs, fans, switches) is counted at its full power all the time. "
              "Energy per year = average IT power x PUE x 8760 h.");
  a.push_back("Capex = GPUs bought x GPU price + servers x server price (without GPUs) + the KV tiers' DRAM and drives "
              "bought, plus the network fraction. "
              "Opex per year = energy + support + space. TCO = capex + opex x amortization years.");
  a.push_back("Cost per million tokens = TCO / tokens served over the amortization period (workload rate x "
              "utilization x seconds); the input and output figures each put the whole TCO on that kind of token, "
              "the combined one on both.");
  a.push_back("Renting: the same GPUs (replicas x TP x PP) at the GPU catalog's price per GPU-hour, around the clock "
              "(730 h a month). Break-even is the first month where cumulative buy cost (capex + opex so far) is "
              "at most the cumulative rent.");
  const auto tier = std::max_element(b.options.begin(), b.options.end(), [](const BuyFigures& x, const BuyFigures& y) {
    return x.host_kv_bytes_per_server < y.host_kv_bytes_per_server;
  });
  if (tier != b.options.end() && tier->host_kv_bytes_per_server > 0)
    a.push_back(fmt::format(
        "Host KV tier: at most {:.0f} GiB of a server's DRAM ({}: {:.0f} GiB installed, host_memory_bytes, which the "
        "server price includes). {}; an option whose tier is beyond a GPU's share of the most DRAM that can be had "
        "cannot be bought (listed with the reason).",
        to_gib(static_cast<double>(tier->host_kv_bytes_per_server)),
        std::filesystem::path(tier->server.file).filename().string(),
        to_gib(static_cast<double>(tier->server.host_memory_bytes)),
        s.dram_usd_per_gib
            ? fmt::format("DRAM beyond the installed, up to host_memory_max_bytes where the server file states it, is "
                          "bought at ${:g} per GiB (dram_usd_per_gib, {}; DIMM sizes not rounded to), sized for the "
                          "fullest server",
                          *s.dram_usd_per_gib, s.tier_prices_file)
            : std::string("DRAM beyond the installed is not priced (no dram_usd_per_gib in --prices), so none is "
                          "bought")));
  if (std::any_of(b.options.begin(), b.options.end(), [](const BuyFigures& x) { return x.nvme_bytes > 0; }))
    a.push_back(s.nvme_usd_per_tb
                    ? fmt::format("Disk KV tier: one NVMe drive per GPU serving, of the tier's size per GPU, at ${:g} "
                                  "per TB (nvme_usd_per_tb, {}; TB = 1e12 bytes), in capex with the servers.",
                                  *s.nvme_usd_per_tb, s.tier_prices_file)
                    : std::string("Disk KV tier: its NVMe drives are not priced (no nvme_usd_per_tb in --prices) and "
                                  "are not in capex."));
  a.push_back("GPU and server prices are indicative (list or street prices from public pages, dated in "
              "configs/servers/*.yaml), not quotes: replace them with your own.");
  return a;
}

nlohmann::json buy_json(const SizeResult& r, const BuyResult& b) {
  const auto& s = b.site;
  nlohmann::json out = {{"objective", std::string(size::to_string(b.objective))},
                        {"site",
                         {{"electricity_usd_per_kwh", s.electricity_usd_per_kwh},
                          {"pue", s.pue},
                          {"amortization_years", s.amortization_years},
                          {"utilization", s.utilization},
                          {"rack_kw", s.rack_kw},
                          {"rack_units", s.rack_units},
                          {"network_fraction", s.network_fraction},
                          {"support_fraction_per_year", s.support_fraction_per_year},
                          {"rack_usd_per_month", s.rack_usd_per_month},
                          {"cooling", s.liquid_cooling ? "liquid" : "air"},
                          {"site_kw", s.site_kw ? nlohmann::json(*s.site_kw) : nlohmann::json(nullptr)},
                          {"site_racks", s.site_racks ? nlohmann::json(*s.site_racks) : nlohmann::json(nullptr)},
                          {"rack_floor_m2", s.rack_floor_m2},
                          {"dram_usd_per_gib", opt(s.dram_usd_per_gib)},
                          {"nvme_usd_per_tb", opt(s.nvme_usd_per_tb)}}},
                        {"gpus_without_data", b.gpus_without_data}};
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : b.options) {
    const auto [o, rank] = option_of(r, f);
    const auto& l = f.layout;
    nlohmann::json j = {{"rank", rank},
                        {"model", o->model},
                        {"gpu", o->gpu},
                        {"replicas", o->replicas},
                        {"tp", o->candidate.options.tp},
                        {"pp", o->candidate.options.pp},
                        {"server_form", f.server.form},
                        {"gpus_per_server", f.server.gpus_per_server},
                        {"gpu_price_usd", f.server.gpu_price_usd},
                        {"server_price_usd", f.server.server_price_usd},
                        {"gpu_board_power_w", f.server.gpu_board_power_w},
                        {"gpu_idle_power_w", f.server.gpu_idle_power_w},
                        {"server_power_w", f.server.server_power_w},
                        {"host_memory_bytes", f.server.host_memory_bytes},
                        {"host_kv_bytes_per_server", f.host_kv_bytes_per_server},
                        {"infeasible", f.infeasible ? nlohmann::json(*f.infeasible) : nlohmann::json(nullptr)},
                        {"gpus_used", l.gpus_used},
                        {"gpus_bought", l.gpus_bought},
                        {"servers", l.servers},
                        {"replicas_per_server", l.replicas_per_server},
                        {"servers_per_replica", l.servers_per_replica}};
    if (!f.infeasible) {
      j.update({{"servers_per_rack", f.servers_per_rack},
                {"racks", f.racks},
                {"floor_m2", f.floor_m2},
                {"busy_fraction", f.busy_fraction},
                {"busy_fraction_simulated", f.busy_fraction_simulated},
                {"server_power_peak_w", f.server_power_peak_w},
                {"power_peak_w", f.power_peak_w},
                {"power_average_w", f.power_average_w},
                {"facility_power_average_w", f.facility_power_average_w},
                {"energy_kwh_per_year", f.energy_kwh_per_year},
                {"gpu_capex_usd", f.gpu_capex_usd},
                {"server_capex_usd", f.server_capex_usd},
                {"dram_bought_bytes_per_server", f.dram_bought_bytes_per_server},
                {"dram_capex_usd", f.dram_capex_usd},
                {"nvme_bytes", f.nvme_bytes},
                {"nvme_capex_usd", opt(f.nvme_capex_usd)},
                {"network_capex_usd", f.network_capex_usd},
                {"capex_usd", f.capex_usd},
                {"energy_usd_per_year", f.energy_usd_per_year},
                {"support_usd_per_year", f.support_usd_per_year},
                {"space_usd_per_year", f.space_usd_per_year},
                {"opex_usd_per_year", f.opex_usd_per_year},
                {"amortization_years", f.amortization_years},
                {"tco_usd", f.tco_usd},
                {"rent_usd_per_month", opt(f.rent_usd_per_month)},
                {"rent_usd_over_life", opt(f.rent_usd_over_life)},
                {"break_even_month", f.break_even_month ? nlohmann::json(*f.break_even_month) : nlohmann::json(nullptr)},
                {"input_tokens_over_life", f.input_tokens_over_life},
                {"output_tokens_over_life", f.output_tokens_over_life},
                {"usd_per_million_input_tokens", f.usd_per_million_input_tokens},
                {"usd_per_million_output_tokens", f.usd_per_million_output_tokens},
                {"usd_per_million_tokens", f.usd_per_million_tokens}});
    }
    list.push_back(std::move(j));
  }
  out["options"] = std::move(list);
  out["assumptions"] = buy_assumptions(b);
  return out;
}

Table buy_table_raw(const SizeResult& r, const BuyResult& b) {
  Table t;
  t.header = {"rank", "model", "gpu", "replicas", "tp", "pp", "server_form", "gpus_used", "gpus_bought", "servers",
              "servers_per_rack", "racks", "busy_fraction", "power_peak_w", "power_average_w",
              "facility_power_average_w", "energy_kwh_per_year", "gpu_capex_usd", "server_capex_usd",
              "dram_capex_usd", "nvme_capex_usd", "network_capex_usd", "capex_usd", "energy_usd_per_year", "support_usd_per_year", "space_usd_per_year",
              "opex_usd_per_year", "amortization_years", "tco_usd", "rent_usd_per_month", "rent_usd_over_life",
              "break_even_month", "usd_per_million_input_tokens", "usd_per_million_output_tokens",
              "usd_per_million_tokens", "infeasible"};
  t.right_align.assign(t.header.size(), false);
  const auto num = [](double v) { return fmt::format("{:.6g}", v); };
  for (const auto& f : b.options) {
    const auto [o, rank] = option_of(r, f);
    const auto& l = f.layout;
    std::vector<std::string> row = {std::to_string(rank), o->model, o->gpu, std::to_string(o->replicas),
                                    std::to_string(o->candidate.options.tp), std::to_string(o->candidate.options.pp),
                                    f.server.form, std::to_string(l.gpus_used), std::to_string(l.gpus_bought),
                                    std::to_string(l.servers)};
    if (f.infeasible) {
      row.resize(t.header.size() - 1);
      row.push_back(*f.infeasible);
    } else {
      for (const std::string& v :
           {std::to_string(f.servers_per_rack), std::to_string(f.racks), num(f.busy_fraction), num(f.power_peak_w),
            num(f.power_average_w), num(f.facility_power_average_w), num(f.energy_kwh_per_year), num(f.gpu_capex_usd),
            num(f.server_capex_usd), num(f.dram_capex_usd), f.nvme_capex_usd ? num(*f.nvme_capex_usd) : "",
            num(f.network_capex_usd), num(f.capex_usd), num(f.energy_usd_per_year),
            num(f.support_usd_per_year), num(f.space_usd_per_year), num(f.opex_usd_per_year),
            num(f.amortization_years), num(f.tco_usd), f.rent_usd_per_month ? num(*f.rent_usd_per_month) : "",
            f.rent_usd_over_life ? num(*f.rent_usd_over_life) : "",
            f.break_even_month ? std::to_string(*f.break_even_month) : "", num(f.usd_per_million_input_tokens),
            num(f.usd_per_million_output_tokens), num(f.usd_per_million_tokens), std::string()})
        row.push_back(v);
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string buy_text(const SizeResult& r, const BuyResult& b, TextFormat f, size_t max_rows) {
  const bool md = f == TextFormat::md;
  std::string out = md ? "\n## Buy: bill of materials and total cost of ownership\n\n" : "\nBuy (ranked by ";
  if (!md) out += std::string(size::to_string(b.objective)) + "):\n";
  else out += "Ranked by " + std::string(size::to_string(b.objective)) + ".\n\n";
  for (const auto& line : buy_summaries(r, b)) out += (md ? "- " : "") + line + "\n";
  if (md) out += "\n";
  Table t;
  t.header = {"#", "model", "gpu", "replicas x TP", "servers", "GPUs bought", fmt::format("TCO {:g} y", b.site.amortization_years),
              "$/M out", "break-even vs rent", "capex", "opex/yr", "$/M in", "racks", "peak IT", "avg facility",
              "MWh/yr", "option", "server"};
  t.right_align = {true, false, false, false, true, true, true, true, false, true, true, true, true, true, true, true, true, false};
  std::vector<std::string> infeasible;
  for (const auto& x : b.options)
    if (x.infeasible) {
      const auto [o, rank] = option_of(r, x);
      infeasible.push_back(fmt::format("option #{} {} on {} ({}): {}", rank, o->model, o->gpu, shape(*o), *x.infeasible));
    }
  std::map<std::string, size_t> rows_of_model;  // at most max_rows per model
  const std::vector<const BuyFigures*> bills = distinct_bills(r, b);
  for (size_t i = 0; i < bills.size(); ++i) {
    const BuyFigures& x = *bills[i];
    const auto [o, rank] = option_of(r, x);
    size_t& n = rows_of_model[o->model];
    if (max_rows > 0 && n >= max_rows) continue;
    ++n;
    t.rows.push_back({std::to_string(i + 1), o->model, o->gpu, shape(*o), std::to_string(x.layout.servers),
                      std::to_string(x.layout.gpus_bought), usd(x.tco_usd), usd_cents(x.usd_per_million_output_tokens),
                      break_even_words(x), usd(x.capex_usd), usd(x.opex_usd_per_year),
                      usd_cents(x.usd_per_million_input_tokens), std::to_string(x.racks), kw(x.power_peak_w),
                      kw(x.facility_power_average_w), fmt::format("{:.1f}", x.energy_kwh_per_year / 1000.0),
                      "#" + std::to_string(rank), x.server.form});
  }
  if (t.rows.empty()) out += "No option meeting the SLO can be bought with the purchase catalog (configs/servers).\n";
  else
    out += render(t, md ? TextFormat::md : TextFormat::table) + (md ? "\n" : "") + kDistinctNote + " " + kRankNote +
           (max_rows > 0 ? fmt::format(" At most {} rows per model (--top).", max_rows) : std::string()) + "\n";
  const auto bullet = md ? "- " : "  ";
  if (!infeasible.empty()) {
    out += md ? "\nCannot be built as laid out:\n\n" : "Cannot be built as laid out:\n";
    for (const auto& s : infeasible) out += bullet + s + "\n";
  }
  if (!b.gpus_without_data.empty()) {
    std::string g;
    for (const auto& x : b.gpus_without_data) g += (g.empty() ? "" : ", ") + x;
    out += fmt::format("{}No purchase data (configs/servers) for: {}.\n", md ? "\n" : "", g);
  }
  out += md ? "\nAssumptions of the Buy figures:\n\n" : "\nAssumptions of the Buy figures:\n";
  for (const auto& a : buy_assumptions(b)) out += bullet + a + "\n";
  return out;
}

std::string buy_html(const SizeResult& r, const BuyResult& b) {
  using html::escape;
  const auto td = [](const std::string& s, bool num = false) {
    return std::string(num ? "<td class=\"n\">" : "<td>") + escape(s) + "</td>";
  };
  std::string h = "<h2 id=\"buy\">Buy: bill of materials, power and total cost of ownership</h2>\n";
  h += fmt::format("<p>Options meeting the SLO, bought instead of rented, ranked by <b>{}</b>; figures over {:g} years "
                   "of amortization. Prices are indicative, not quotes.</p>\n",
                   escape(std::string(size::to_string(b.objective))), b.site.amortization_years);
  const std::vector<const BuyFigures*> ok = distinct_bills(r, b);
  for (const auto& line : buy_summaries(r, b)) h += "<p class=\"big\">" + escape(line) + "</p>\n";
  const size_t max_shown = 25;
  if (ok.empty()) {
    h += "<p>No option meeting the SLO can be bought with the purchase catalog (configs/servers).</p>\n";
  } else {
    // The decision first: what is bought and what it costs (TCO, per token, break-even) sit
    // left of the price breakdown, so a 1,400 px window shows them without scrolling.
    h += "<h3>Bill of materials</h3>\n<div class=\"scroll\"><table><tr>";
    for (const std::string& c :
         {std::string("#"), std::string("model"), std::string("GPU"), std::string("replicas × TP"), std::string("servers"),
          std::string("GPUs bought (used)"), fmt::format("TCO {:g} y", b.site.amortization_years),
          std::string("$ / M output tok"), std::string("break-even vs rent"), std::string("capex"),
          std::string("opex / year"), std::string("option"), std::string("server"), std::string("layout"),
          std::string("GPU price"), std::string("server price (no GPUs)"), std::string("network"),
          std::string("$ / M input tok")})
      h += "<th>" + escape(c) + "</th>";
    h += "</tr>\n";
    for (size_t i = 0; i < ok.size() && i < max_shown; ++i) {
      const BuyFigures& x = *ok[i];
      const auto [o, rank] = option_of(r, x);
      h += i == 0 ? "<tr class=\"best\">" : "<tr>";
      h += td(std::to_string(i + 1), true) + td(o->model) + td(o->gpu) + td(shape(*o)) +
           td(std::to_string(x.layout.servers), true) +
           td(fmt::format("{} ({})", x.layout.gpus_bought, x.layout.gpus_used), true) + td(usd(x.tco_usd), true) +
           td(usd_cents(x.usd_per_million_output_tokens), true) + td(break_even_words(x)) +
           td(usd(x.capex_usd), true) + td(usd(x.opex_usd_per_year), true) + td("#" + std::to_string(rank)) +
           td(x.server.form) + td(layout_words(x)) + td(usd(x.server.gpu_price_usd), true) +
           td(usd(x.server.server_price_usd), true) + td(usd(x.network_capex_usd), true) +
           td(usd_cents(x.usd_per_million_input_tokens), true) + "</tr>\n";
    }
    h += "</table></div>\n<p class=\"small\">" + escape(kDistinctNote) + " " + escape(kRankNote) + "</p>\n";

    h += "<h3>Power and racks</h3>\n<div class=\"scroll\"><table><tr>";
    for (const char* c : {"#", "GPU", "servers", "per rack", "racks", "server peak", "IT peak", "GPU busy", "IT average",
                          "facility average (× PUE)", "energy / year", "energy cost / year"})
      h += std::string("<th>") + c + "</th>";
    h += "</tr>\n";
    for (size_t i = 0; i < ok.size() && i < max_shown; ++i) {
      const BuyFigures& x = *ok[i];
      h += "<tr>" + td(std::to_string(i + 1), true) + td(option_of(r, x).first->gpu) + td(std::to_string(x.layout.servers), true) +
           td(std::to_string(x.servers_per_rack), true) + td(std::to_string(x.racks), true) +
           td(kw(x.server_power_peak_w), true) + td(kw(x.power_peak_w), true) +
           td(fmt::format("{:.0f} %{}", x.busy_fraction * 100, x.busy_fraction_simulated ? "" : " (est.)"), true) +
           td(kw(x.power_average_w), true) + td(kw(x.facility_power_average_w), true) +
           td(fmt::format("{} kWh", count(std::llround(x.energy_kwh_per_year))), true) +
           td(usd(x.energy_usd_per_year), true) + "</tr>\n";
    }
    h += "</table></div>\n";

    // Cumulative cost: buying is capex at month 0 then opex each month; renting is the
    // same GPUs' rent each month. Straight lines, marked once a year.
    html::Chart c;
    c.title = "Cumulative cost over time: buy (thick) vs rent (thin)";
    c.x = {"months from purchase", false, 0.0, std::nullopt};
    c.y = {"cumulative cost (USD)", false, 0.0, std::nullopt};
    const auto months = static_cast<int64_t>(std::llround(b.site.amortization_years * 12));
    std::set<std::string> charted;
    size_t color = 0;
    for (size_t i = 0; i < ok.size() && color < 4; ++i) {
      const BuyFigures* x = ok[i];
      const Deployment* o = option_of(r, *x).first;
      if (!charted.insert(o->model + "/" + o->gpu).second) continue;  // best option per (model, GPU)
      html::Series buy{fmt::format("#{} {} buy", i + 1, o->gpu), html::palette(color), {}, true, true, {}};
      html::Series rent{fmt::format("#{} {} rent", i + 1, o->gpu), html::palette(color), {}, true, false, {}};
      for (int64_t m = 0; m <= months; m += 12) {
        const auto md = static_cast<double>(m);
        buy.points.emplace_back(md, x->capex_usd + x->opex_usd_per_year / 12 * md);
        if (x->rent_usd_per_month) {
          rent.points.emplace_back(md, *x->rent_usd_per_month * md);
          rent.hollow.push_back(true);
        }
      }
      c.series.push_back(std::move(buy));
      if (!rent.points.empty()) c.series.push_back(std::move(rent));
      ++color;
    }
    c.note = "Where a thin line crosses its thick one, buying has paid for itself (the break-even month).";
    h += "<div class=\"charts\">" + html::line_chart(c) + "</div>\n";
  }
  std::vector<std::string> infeasible;
  for (const auto& x : b.options)
    if (x.infeasible) {
      const auto [o, rank] = option_of(r, x);
      infeasible.push_back(fmt::format("option #{} {} on {} ({}): {}", rank, o->model, o->gpu, shape(*o), *x.infeasible));
    }
  if (!infeasible.empty()) {
    h += "<p>Cannot be built as laid out:</p><ul>";
    for (const auto& s : infeasible) h += "<li>" + escape(s) + "</li>";
    h += "</ul>\n";
  }
  if (!b.gpus_without_data.empty()) {
    std::string g;
    for (const auto& x : b.gpus_without_data) g += (g.empty() ? "" : ", ") + x;
    h += "<p class=\"small\">No purchase data (configs/servers) for: " + escape(g) + ".</p>\n";
  }
  h += "<h3>Assumptions of the Buy figures</h3>\n<ul>\n";
  for (const auto& a : buy_assumptions(b)) h += "<li>" + escape(a) + "</li>\n";
  h += "</ul>\n";
  return h;
}

std::string with_section(std::string page, const std::string& section) {
  auto at = page.find("<h2>Assumptions</h2>");
  if (at == std::string::npos) at = page.rfind("</body>");
  if (at == std::string::npos) return page + section;
  page.insert(at, section);
  return page;
}

}  // namespace kvplan::reports
