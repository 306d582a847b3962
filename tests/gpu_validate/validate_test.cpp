#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "gpu_validate/validate.h"
#include "io/config_io.h"
#include "tests/gpu_validate/timing_checks.h"

using namespace kvplan;
using namespace kvplan::gv;

TEST_CASE("make_check computes the relative error and applies each comparison") {
  const Check r = make_check("g", "n", "q", "u", 100, 110, Compare::relative, 0.1);
  CHECK(r.error == doctest::Approx(0.1));
  CHECK(r.pass);
  CHECK_FALSE(make_check("g", "n", "q", "u", 100, 111, Compare::relative, 0.1).pass);
  CHECK(make_check("g", "n", "q", "u", 5, 5, Compare::exact, 0).pass);
  CHECK_FALSE(make_check("g", "n", "q", "u", 5, 6, Compare::exact, 0).pass);
  CHECK(make_check("g", "n", "q", "u", 1, 2, Compare::at_least, 0).pass);
  CHECK_FALSE(make_check("g", "n", "q", "u", 1, 2, Compare::at_most, 0).pass);
  CHECK(make_check("g", "n", "q", "u", 46, 3, Compare::info, 0).pass);
}

TEST_CASE("the calibration file the harness writes is one the planner loads") {
  CalibrationOut c;
  c.device = "NVIDIA H200";
  c.bandwidth_efficiency = 0.9;
  c.prefill_flops_efficiency = 0.78;
  c.decode_flops_efficiency = 0.6;
  c.runtime_reserve_bytes = 600 << 20;
  const auto path = (std::filesystem::temp_directory_path() / "kvplan_gv_calibration.json").string();
  { std::ofstream(path) << calibration_json(c); }
  const Calibration got = io::load_calibration(path);
  CHECK(got.bandwidth_efficiency == 0.9);
  CHECK(got.prefill_flops_efficiency == 0.78);
  CHECK(got.decode_flops_efficiency == 0.6);
  CHECK(got.runtime_reserve_bytes == int64_t{600} << 20);
  CHECK(got.device == "NVIDIA H200");
  CHECK(got.measured);
  std::filesystem::remove(path);
}

TEST_CASE("report_json writes the kvplan.validate/1 schema with every check") {
  Report r;
  r.device = "cpu \"quoted\"";
  r.checks.push_back(make_check("g", "a", "q", "u", 1, 1, Compare::exact, 0));
  const std::string j = report_json(r);
  CHECK(j.find("\"schema\": \"kvplan.validate/1\"") != std::string::npos);
  CHECK(j.find("\"backend\": \"cpu\"") != std::string::npos);
  CHECK(j.find("\"device\": \"cpu \\\"quoted\\\"\"") != std::string::npos);
  CHECK(j.find("\"pass\": true") != std::string::npos);
}

TEST_CASE("the quick CPU validation passes every check but the timed ones, which it runs") {
  Options o;
  o.quick = true;
  const Report r = run_validation(o);
  CHECK(r.backend == Backend::cpu);
  CHECK(r.checks.size() > 30);
  int timed = 0;
  for (const Check& c : r.checks) {
    CAPTURE(c.name);
    CAPTURE(c.predicted);
    CAPTURE(c.measured);
    CHECK(std::isfinite(c.measured));
    if (kvplan_test::is_timing_check(c.name)) {
      ++timed;  // a time on a shared core: its pass depends on the machine's load
      CHECK(c.measured > 0);
    } else {
      CHECK(c.pass);
    }
  }
  // naive/cached at T 8 and 32, the growth between them, and three attention speed-ups.
  CHECK(timed == 2 + 1 + 2);
}

TEST_CASE("the CUDA backend runs where it can and refuses where it cannot, with a reason") {
  Options o;
  o.backend = Backend::cuda;
  o.quick = true;
  const std::string why = cuda_unavailable_reason();
  if (!why.empty()) {
    CHECK_THROWS_WITH_AS(run_validation(o), why.c_str(), std::runtime_error);
    return;
  }
  // A GPU is here: the kernels run, and what they count (FLOPs, bytes, allocations;
  // the exact comparisons) must equal the planner whatever the device's speed.
  const Report r = run_validation(o);
  CHECK(r.backend == Backend::cuda);
  CHECK_FALSE(r.device.empty());
  REQUIRE_FALSE(r.checks.empty());
  int exact = 0;
  for (const Check& c : r.checks) {
    CAPTURE(c.name);
    CHECK(std::isfinite(c.measured));
    if (c.compare == Compare::exact) {
      ++exact;
      CHECK(c.pass);
    }
  }
  CHECK(exact > 0);
}
