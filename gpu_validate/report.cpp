// Checks, reports and their JSON/table forms; backend dispatch.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "gpu_validate/json_writer.h"
#include "gpu_validate/validate.h"

namespace kvplan::gv {

std::string_view to_string(Backend b) { return b == Backend::cpu ? "cpu" : "cuda"; }

std::string_view to_string(Compare c) {
  switch (c) {
    case Compare::exact: return "exact";
    case Compare::relative: return "relative";
    case Compare::at_least: return "at_least";
    case Compare::at_most: return "at_most";
    case Compare::info: return "info";
  }
  return "?";
}

Check make_check(std::string group, std::string name, std::string quantity, std::string unit,
                 double predicted, double measured, Compare compare, double tolerance,
                 std::string note) {
  Check c;
  c.group = std::move(group);
  c.name = std::move(name);
  c.quantity = std::move(quantity);
  c.unit = std::move(unit);
  c.predicted = predicted;
  c.measured = measured;
  c.compare = compare;
  c.tolerance = tolerance;
  c.note = std::move(note);
  c.error = predicted != 0 ? (measured - predicted) / std::fabs(predicted) : 0.0;
  const bool finite = std::isfinite(measured);
  switch (compare) {
    case Compare::exact: c.pass = finite && std::fabs(measured - predicted) <= tolerance; break;
    case Compare::relative: c.pass = finite && std::fabs(c.error) <= tolerance; break;
    case Compare::at_least: c.pass = finite && measured >= predicted; break;
    case Compare::at_most: c.pass = finite && measured <= predicted; break;
    case Compare::info: c.pass = true; c.tolerance = 0; break;
  }
  return c;
}

bool Report::all_pass() const {
  for (const Check& c : checks)
    if (!c.pass) return false;
  return true;
}

Report run_validation(const Options& o) {
  if (o.backend != Backend::cpu)
    throw std::runtime_error("the CUDA backend runs in kvplan_harness (run_cuda_validation), not here");
  const auto t0 = std::chrono::steady_clock::now();
  Report r = detail::run_cpu(o);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string report_json(const Report& r) {
  JsonWriter w;
  w.begin_object();
  w.field("schema", "kvplan.validate/1");
  w.field("backend", to_string(r.backend));
  w.field("device", std::string_view(r.device));
  w.field("all_pass", r.all_pass());
  w.field("wall_s", r.wall_s);
  w.key("checks").begin_array();
  for (const Check& c : r.checks) {
    w.begin_object();
    w.field("group", std::string_view(c.group));
    w.field("name", std::string_view(c.name));
    w.field("quantity", std::string_view(c.quantity));
    w.field("unit", std::string_view(c.unit));
    w.field("predicted", c.predicted);
    w.field("measured", c.measured);
    w.field("error", c.error);
    w.field("tolerance", c.tolerance);
    w.field("compare", to_string(c.compare));
    w.field("pass", c.pass);
    w.field("note", std::string_view(c.note));
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

namespace {
std::string fmt_num(double v) {
  char buf[32];
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e6 || a < 1e-3) std::snprintf(buf, sizeof buf, "%.4g", v);
  else std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}
}  // namespace

std::string report_table(const Report& r) {
  std::string out = "kvplan validate: backend " + std::string(to_string(r.backend)) +
                    ", device " + r.device + "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-44s %14s %14s %9s %-9s %s\n", "check", "predicted",
                "measured", "error", "tol", "pass");
  out += line;
  for (const Check& c : r.checks) {
    std::string tol = c.compare == Compare::relative || c.compare == Compare::exact
                          ? fmt_num(c.tolerance)
                          : std::string(to_string(c.compare));
    std::snprintf(line, sizeof line, "%-44s %14s %14s %8.2f%% %-9s %s\n", c.name.c_str(),
                  fmt_num(c.predicted).c_str(), fmt_num(c.measured).c_str(), 100.0 * c.error,
                  tol.c_str(), c.compare == Compare::info ? "info" : (c.pass ? "PASS" : "FAIL"));
    out += line;
  }
  std::snprintf(line, sizeof line, "%s: %zu checks in %.1f s\n", r.all_pass() ? "all pass" : "FAILED",
                r.checks.size(), r.wall_s);
  out += line;
  return out;
}

}  // namespace kvplan::gv
