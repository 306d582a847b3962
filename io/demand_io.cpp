#include "io/demand_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <string_view>
#include <utility>

#include "io/config_io.h"
#include "io/csv.h"
#include "planner/types.h"

namespace kvplan::io {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_number(std::string_view s, double& out) {
  s = trim(s);
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(out);
}

// Hours closer than this are the same period (rows written with rounded decimals).
constexpr double kHourTolerance = 1e-6;

}  // namespace

DemandCurve parse_demand(const std::string& text, const std::string& file) {
  struct Row {
    double hour = 0;
    double rate = 0;
    int64_t line = 0;
  };
  std::vector<std::pair<std::string, std::vector<Row>>> by_model;  // first-appearance order
  for_each_csv_row(text, file, "hour,model,requests_per_s", [&](const auto& f, int64_t line_no, const std::string& where) {
    if (f.size() != 3) throw InputError(file, "", "3 comma-separated columns", fmt::format("{}{}", f.size(), where));
    Row r;
    r.line = line_no;
    if (!parse_number(f[0], r.hour) || r.hour < 0)
      throw InputError(file, "hour", "a finite number of hours >= 0", "'" + std::string(f[0]) + "'" + where);
    const std::string model(trim(f[1]));
    if (model.empty()) throw InputError(file, "model", "a model name", "an empty field" + where);
    if (!parse_number(f[2], r.rate) || r.rate < 0)
      throw InputError(file, "requests_per_s", "a finite rate >= 0", "'" + std::string(f[2]) + "'" + where);
    auto it = std::find_if(by_model.begin(), by_model.end(), [&](const auto& m) { return m.first == model; });
    if (it == by_model.end()) it = by_model.insert(by_model.end(), {model, {}});
    for (const Row& earlier : it->second)
      if (std::abs(earlier.hour - r.hour) < kHourTolerance)
        throw InputError(file, "hour", fmt::format("one row per hour and model ('{}' at hour {} is on line {})", model,
                                                   std::string(trim(f[0])), earlier.line),
                         "a second one" + where);
    it->second.push_back(r);
  });
  if (by_model.empty()) throw InputError(file, "", "at least one row after the header", "none");

  DemandCurve c;
  c.file = file;
  // The first model's hours define the periods; every model must have the same ones.
  std::vector<Row> first = by_model.front().second;
  std::sort(first.begin(), first.end(), [](const Row& a, const Row& b) { return a.hour < b.hour; });
  if (first.front().hour > kHourTolerance)
    throw InputError(file, "hour", "periods starting at hour 0",
                     fmt::format("'{}' first, for '{}' on line {}", first.front().hour, by_model.front().first,
                                 first.front().line));
  c.period_h = first.size() > 1 ? first[1].hour - first[0].hour : 1.0;
  for (size_t i = 0; i < first.size(); ++i) {
    const double expected = static_cast<double>(i) * c.period_h;
    if (std::abs(first[i].hour - expected) > kHourTolerance * std::max(1.0, expected))
      throw InputError(file, "hour", fmt::format("equally spaced periods (every {} h, as the first two)", c.period_h),
                       fmt::format("{} for '{}' on line {}", first[i].hour, by_model.front().first, first[i].line));
    c.hours.push_back(expected);
  }
  for (auto& [model, rows] : by_model) {
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.hour < b.hour; });
    DemandCurve::Series s;
    s.model = model;
    for (size_t i = 0; i < c.hours.size(); ++i) {
      if (i >= rows.size() || std::abs(rows[i].hour - c.hours[i]) > kHourTolerance * std::max(1.0, c.hours[i])) {
        const std::string got = i < rows.size() ? fmt::format("hour {} on line {}", rows[i].hour, rows[i].line)
                                                : std::string("no row for it");
        throw InputError(file, "hour", fmt::format("a row for '{}' at hour {} (every model has the same hours)", model,
                                                   c.hours[i]),
                         got);
      }
      s.requests_per_s.push_back(rows[i].rate);
    }
    if (rows.size() > c.hours.size())
      throw InputError(file, "hour", fmt::format("the hours of '{}' only (every model has the same hours)",
                                                 by_model.front().first),
                       fmt::format("hour {} for '{}' on line {}", rows[c.hours.size()].hour, model,
                                   rows[c.hours.size()].line));
    c.models.push_back(std::move(s));
  }
  return c;
}

DemandCurve load_demand(const std::filesystem::path& path) {
  return parse_demand(read_file(path), path.string());
}

}  // namespace kvplan::io
