#include "reports/validate_report.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

namespace kvplan::reports {

std::string validate_number(double v) {
  if (!std::isfinite(v)) return "-";
  if (v == 0) return "0";
  char buf[32];
  const double a = std::fabs(v);
  if (a >= 1e6 || a < 1e-3) std::snprintf(buf, sizeof buf, "%.4g", v);
  else std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

Table validate_table(const gv::Report& r) {
  Table t;
  t.header = {"group", "check", "predicted", "measured", "unit", "error", "tolerance", "pass"};
  t.right_align = {false, false, true, true, false, true, true, false};
  for (const gv::Check& c : r.checks) {
    std::string tol;
    switch (c.compare) {
      case gv::Compare::exact:
        tol = "=" + (c.tolerance == 0 ? std::string("exact") : "±" + validate_number(c.tolerance));
        break;
      case gv::Compare::relative: tol = "±" + validate_number(100 * c.tolerance) + "%"; break;
      case gv::Compare::at_least: tol = ">= pred"; break;
      case gv::Compare::at_most: tol = "<= pred"; break;
      case gv::Compare::info: tol = "info"; break;
    }
    t.rows.push_back({c.group, c.name, validate_number(c.predicted), validate_number(c.measured), c.unit,
                      fmt::format("{:+.2f}%", 100 * c.error), tol,
                      c.compare == gv::Compare::info ? "info" : (c.pass ? "PASS" : "FAIL")});
  }
  return t;
}

Table validate_table_raw(const gv::Report& r) {
  Table t;
  t.header = {"group", "check", "predicted", "measured", "unit", "error_fraction", "compare", "tolerance", "pass"};
  t.right_align.assign(t.header.size(), false);
  for (const gv::Check& c : r.checks)
    t.rows.push_back({c.group, c.name, raw_number(c.predicted), raw_number(c.measured), c.unit, raw_number(c.error),
                      std::string(gv::to_string(c.compare)), raw_number(c.tolerance),
                      c.compare == gv::Compare::info ? "" : (c.pass ? "true" : "false")});
  return t;
}

std::string validate_text(const gv::Report& r, TextFormat f) {
  if (f == TextFormat::csv) return render(validate_table_raw(r), f);
  if (f == TextFormat::md) return render(validate_table(r), f);
  std::string text = "backend " + std::string(gv::to_string(r.backend)) + ", device " + r.device + "\n";
  text += render(validate_table(r), f);
  size_t failed = 0;
  for (const auto& c : r.checks) failed += c.pass ? 0 : 1;
  text += (failed == 0 ? "all " + std::to_string(r.checks.size()) + " checks pass"
                       : std::to_string(failed) + " of " + std::to_string(r.checks.size()) + " checks FAIL") +
          " (" + validate_number(r.wall_s) + " s). error = (measured - predicted) / |predicted|; info rows are "
          "measurements without a planner prediction. Notes: --format json; each check: docs/validate.md.\n";
  return text;
}

}  // namespace kvplan::reports
