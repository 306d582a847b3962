// kvplan validate: runs gpu_validate's checks (CPU references or CUDA kernels) and
// prints predicted vs measured. JSON: {"schema": "kvplan.validate/1", ...}
// (ARCHITECTURE.md). Exit 0 when every check passes, 1 when one fails, 2 on bad input
// (including --backend cuda where this build or this machine has no GPU).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/cli.h"
#include "gpu_validate/validate.h"
#include "io/config_io.h"
#include "reports/table.h"

namespace kvplan::cli {

namespace {

std::string num(double v) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  const double a = std::fabs(v);
  if (v == 0) return "0";
  if (a >= 1e6 || a < 1e-3) std::snprintf(buf, sizeof buf, "%.4g", v);
  else std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

nlohmann::json to_json(const gv::Report& r) {
  nlohmann::json j;
  j["schema"] = "kvplan.validate/1";
  j["backend"] = std::string(gv::to_string(r.backend));
  j["device"] = r.device;
  j["all_pass"] = r.all_pass();
  j["wall_s"] = r.wall_s;
  j["checks"] = nlohmann::json::array();
  for (const gv::Check& c : r.checks) {
    nlohmann::json k;
    k["group"] = c.group;
    k["name"] = c.name;
    k["quantity"] = c.quantity;
    k["unit"] = c.unit;
    k["predicted"] = c.predicted;
    k["measured"] = c.measured;
    k["error"] = c.error;
    k["tolerance"] = c.tolerance;
    k["compare"] = std::string(gv::to_string(c.compare));
    k["pass"] = c.pass;
    k["note"] = c.note;
    j["checks"].push_back(k);
  }
  if (r.calibration) j["calibration"] = nlohmann::json::parse(gv::calibration_json(*r.calibration));
  return j;
}

reports::Table to_table(const gv::Report& r) {
  reports::Table t;
  t.header = {"group", "check", "predicted", "measured", "unit", "error", "tolerance", "pass"};
  t.right_align = {false, false, true, true, false, true, true, false};
  for (const gv::Check& c : r.checks) {
    std::string tol;
    switch (c.compare) {
      case gv::Compare::exact: tol = "=" + (c.tolerance == 0 ? std::string("exact") : "±" + num(c.tolerance)); break;
      case gv::Compare::relative: tol = "±" + num(100 * c.tolerance) + "%"; break;
      case gv::Compare::at_least: tol = ">= pred"; break;
      case gv::Compare::at_most: tol = "<= pred"; break;
      case gv::Compare::info: tol = "info"; break;
    }
    char err[32];
    std::snprintf(err, sizeof err, "%+.2f%%", 100 * c.error);
    t.rows.push_back({c.group, c.name, num(c.predicted), num(c.measured), c.unit, err, tol,
                      c.compare == gv::Compare::info ? "info" : (c.pass ? "PASS" : "FAIL")});
  }
  return t;
}

//! The same checks for machines (CSV): raw numbers; the error as a fraction.
reports::Table to_table_raw(const gv::Report& r) {
  reports::Table t;
  t.header = {"group", "check", "predicted", "measured", "unit", "error_fraction", "compare", "tolerance", "pass"};
  t.right_align.assign(t.header.size(), false);
  const auto x = [](double v) { return fmt::format("{:.9g}", v); };
  for (const gv::Check& c : r.checks) {
    std::string compare;
    switch (c.compare) {
      case gv::Compare::exact: compare = "exact"; break;
      case gv::Compare::relative: compare = "relative"; break;
      case gv::Compare::at_least: compare = "at_least"; break;
      case gv::Compare::at_most: compare = "at_most"; break;
      case gv::Compare::info: compare = "info"; break;
    }
    t.rows.push_back({c.group, c.name, x(c.predicted), x(c.measured), c.unit, x(c.error), compare, x(c.tolerance),
                      c.compare == gv::Compare::info ? "" : (c.pass ? "true" : "false")});
  }
  return t;
}

}  // namespace

int cmd_validate(const Args& args) {
  po::options_description desc("kvplan validate: measure what the planner predicts (CPU references or CUDA kernels)");
  desc.add_options()
      ("help,h", "this help")
      ("backend", po::value<std::string>()->default_value("cpu"), "cpu|cuda")
      ("quick", po::bool_switch(), "smaller shapes, fewer repetitions")
      ("npy-k", po::value<std::string>(), "keys to quantize too (.npy, [T, C] or [T, H, D])")
      ("npy-v", po::value<std::string>(), "values matching --npy-k (default: the keys)")
      ("calibration-out", po::value<std::string>(), "write the measured ceilings (cuda) as a --calibration file")
      ("datasheet-bandwidth", po::value<std::string>(), "datasheet memory bandwidth, bytes/s (devices not built in)")
      ("datasheet-flops", po::value<std::string>(), "datasheet dense bf16 FLOP/s (devices not built in)");
  add_output_options(desc);
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  const Format format = parse_format(vm.count("format") ? vm["format"].as<std::string>() : "table");
  gv::Options o;
  const std::string backend = vm["backend"].as<std::string>();
  if (backend == "cpu") {
    o.backend = gv::Backend::cpu;
  } else if (backend == "cuda") {
    o.backend = gv::Backend::cuda;
    const std::string why = gv::cuda_unavailable_reason();
    if (!why.empty()) throw InputError("command line", "--backend", "a backend this machine can run", "cuda: " + why);
  } else {
    throw InputError("command line", "--backend", "cpu or cuda", "'" + backend + "'");
  }
  o.quick = vm["quick"].as<bool>();
  // A FIFO would block the .npy reader's open forever: regular files only.
  for (const char* key : {"npy-k", "npy-v"}) {
    if (!vm.count(key)) continue;
    const std::string path = vm[key].as<std::string>();
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
      throw InputError(path, "", "a regular .npy file", "a directory, device, FIFO or other special file");
  }
  if (vm.count("npy-k")) o.npy_k = vm["npy-k"].as<std::string>();
  if (vm.count("npy-v")) {
    if (o.npy_k.empty()) throw InputError("command line", "--npy-v", "--npy-k as well", "--npy-v alone");
    o.npy_v = vm["npy-v"].as<std::string>();
  }
  if (vm.count("datasheet-bandwidth"))
    o.datasheet_bandwidth_bytes_per_s = parse_num_option(vm["datasheet-bandwidth"].as<std::string>(), "--datasheet-bandwidth", 1e6, 1e16);
  if (vm.count("datasheet-flops"))
    o.datasheet_peak_flops_per_s = parse_num_option(vm["datasheet-flops"].as<std::string>(), "--datasheet-flops", 1e6, 1e19);

  refuse_same_path(vm, "output", "calibration-out");
  if (vm.count("calibration-out")) check_output_path("--calibration-out", vm["calibration-out"].as<std::string>(), vm["force"].as<bool>());
  if (vm.count("output")) check_output_path("--output", vm["output"].as<std::string>(), vm["force"].as<bool>());
  gv::Report r;
  try {
    r = gv::run_validation(o);
  } catch (const std::runtime_error& e) {
    // Unreadable .npy files are the user's input; anything else is ours.
    const std::string what = e.what();
    if (what.find(".npy") != std::string::npos || what.find("npy file") != std::string::npos)
      throw InputError(o.npy_k, "", "a float16/32/64 .npy array", what);
    throw;
  }

  if (vm.count("calibration-out")) {
    const std::string path = vm["calibration-out"].as<std::string>();
    if (!r.calibration) {
      std::cerr << "kvplan validate: no calibration on the " << gv::to_string(r.backend)
                << " backend (it needs a GPU and its datasheet); " << path << " not written\n";
    } else {
      write_output("--calibration-out", path, gv::calibration_json(*r.calibration), vm["force"].as<bool>());
      (void)io::load_calibration(path);  // the planner must accept what was written
    }
  }

  std::string text;
  switch (format) {
    case Format::json: text = to_json(r).dump(2) + "\n"; break;
    case Format::md: text = reports::render(to_table(r), reports::TextFormat::md); break;
    case Format::csv: text = reports::render(to_table_raw(r), reports::TextFormat::csv); break;
    case Format::table: {
      text = "backend " + std::string(gv::to_string(r.backend)) + ", device " + r.device + "\n";
      text += reports::render(to_table(r), reports::TextFormat::table);
      size_t failed = 0;
      for (const auto& c : r.checks) failed += c.pass ? 0 : 1;
      text += (failed == 0 ? "all " + std::to_string(r.checks.size()) + " checks pass"
                           : std::to_string(failed) + " of " + std::to_string(r.checks.size()) + " checks FAIL") +
              " (" + num(r.wall_s) + " s). error = (measured - predicted) / |predicted|; info rows are "
              "measurements without a planner prediction. Notes: --format json.\n";
      break;
    }
  }
  emit(vm, text);
  if (!r.all_pass()) {
    std::cerr << "kvplan validate: some checks failed (see the table)\n";
    return 1;
  }
  return 0;
}

}  // namespace kvplan::cli
