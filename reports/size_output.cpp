#include "reports/size_output.h"

#include <fmt/format.h>

#include "reports/buy_report.h"
#include "reports/over_time_report.h"
#include "reports/size_disagg_report.h"
#include "reports/size_report.h"

namespace kvplan::reports {

std::string size_output_text(const size::SizeResult& r, TextFormat f, size_t max_rows) {
  if (f == TextFormat::csv) return render(r.buy ? buy_table_raw(r, *r.buy) : size_table_raw(r), f);
  return size_text(r, f, max_rows) + (r.buy ? buy_text(r, *r.buy, f, max_rows) : "") +
         (r.over_time ? over_time_text(r, *r.over_time, f) : "") +
         (r.disagg ? disagg_size_text(*r.disagg, f, max_rows) : "");
}

nlohmann::json size_output_json(const size::SizeResult& r) {
  auto j = size_json(r);
  if (r.buy) j["buy"] = buy_json(r, *r.buy);
  if (r.over_time) j["over_time"] = over_time_json(r, *r.over_time);
  if (r.disagg) j["disaggregated"] = disagg_size_json(*r.disagg);
  return j;
}

std::string size_output_html(const size::SizeResult& r) {
  std::string page = size_html(r);
  if (r.buy) page = with_section(std::move(page), buy_html(r, *r.buy));
  if (r.over_time) {
    page = with_section(std::move(page), over_time_html(r, *r.over_time));
    // The finance summary goes first, before the recommendations.
    auto first = page.find("<div class=\"rec\">");
    if (first == std::string::npos) first = page.find("<h2");
    if (first != std::string::npos) page.insert(first, over_time_summary_html(r, *r.over_time));
  }
  if (r.disagg) page = with_section(std::move(page), disagg_size_html(*r.disagg));
  return page;
}

std::string size_progress(int64_t done, int64_t total) {
  const int width = 40;
  const auto filled = static_cast<int>(static_cast<double>(width) * static_cast<double>(done) / static_cast<double>(total));
  return fmt::format("\rsizing [{}{}] {}/{} candidates", std::string(static_cast<size_t>(filled), '#'),
                     std::string(static_cast<size_t>(width - filled), '.'), done, total);
}

std::string size_done(const size::SizeResult& r) {
  return fmt::format("\rsized {} candidates in {:.1f} s{}\n", r.candidates, r.wall_s, std::string(20, ' '));
}

std::string disagg_done(const size::DisaggSearchResult& d) {
  return fmt::format("sized {} disaggregated layouts ({} simulated) in {:.1f} s\n", d.candidates, d.simulated, d.wall_s);
}

}  // namespace kvplan::reports
