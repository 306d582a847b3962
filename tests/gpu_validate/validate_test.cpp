#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "gpu_validate/validate.h"
#include "io/config_io.h"

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

TEST_CASE("the quick CPU validation passes every check") {
  Options o;
  o.quick = true;
  const Report r = run_validation(o);
  CHECK(r.backend == Backend::cpu);
  CHECK(r.checks.size() > 30);
  for (const Check& c : r.checks) {
    CAPTURE(c.name);
    CAPTURE(c.predicted);
    CAPTURE(c.measured);
    CHECK(c.pass);
  }
}

TEST_CASE("the CUDA backend refuses to run where it cannot, with a reason") {
  const std::string why = cuda_unavailable_reason();
  if (!why.empty()) {
    Options o;
    o.backend = Backend::cuda;
    CHECK_THROWS_AS(run_validation(o), std::runtime_error);
  }
}
