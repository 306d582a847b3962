// reports/validate_report.h: `kvplan validate` tables on a hand-written report.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "reports/validate_report.h"

using namespace kvplan;

namespace {
gv::Check check(const std::string& name, gv::Compare c, double predicted, double measured, double tolerance, bool pass) {
  gv::Check k;
  k.group = "memory";
  k.name = name;
  k.unit = "B";
  k.predicted = predicted;
  k.measured = measured;
  k.error = predicted != 0 ? (measured - predicted) / std::fabs(predicted) : 0;
  k.tolerance = tolerance;
  k.compare = c;
  k.pass = pass;
  return k;
}

gv::Report report() {
  gv::Report r;
  r.device = "test cpu";
  r.wall_s = 1.5;
  // 1000 predicted, 1010 measured: error +1.00 %, within a 2 % relative tolerance.
  r.checks.push_back(check("pool", gv::Compare::relative, 1000, 1010, 0.02, true));
  // Bytes counted exactly: 4096 = 4096.
  r.checks.push_back(check("bytes", gv::Compare::exact, 4096, 4096, 0, true));
  return r;
}
}  // namespace

TEST_CASE("validate numbers: four decimals from 1e-3 up to 1e6, else four significant digits") {
  CHECK(reports::validate_number(0) == "0");
  CHECK(reports::validate_number(812.5) == "812.5000");
  CHECK(reports::validate_number(3.352e12) == "3.352e+12");
  CHECK(reports::validate_number(0.0001234) == "0.0001234");
  CHECK(reports::validate_number(NAN) == "-");
}

TEST_CASE("validate table: error in percent, the tolerance as its comparison says, the verdict") {
  const std::string text = reports::validate_text(report(), reports::TextFormat::md);
  CHECK(text ==
        "| group  | check | predicted |  measured | unit |  error | tolerance | pass |\n"
        "|--------|-------|----------:|----------:|------|-------:|----------:|------|\n"
        "| memory | pool  | 1000.0000 | 1010.0000 | B    | +1.00% |  ±2.0000% | PASS |\n"
        "| memory | bytes | 4096.0000 | 4096.0000 | B    | +0.00% |    =exact | PASS |\n");
}

TEST_CASE("validate for a terminal: backend and device first, then how many checks pass and how long") {
  gv::Report r = report();
  const std::string ok = reports::validate_text(r, reports::TextFormat::table);
  CHECK(ok.rfind("backend cpu, device test cpu\n", 0) == 0);
  CHECK(ok.find("all 2 checks pass (1.5000 s).") != std::string::npos);
  r.checks[0].pass = false;
  CHECK(reports::validate_text(r, reports::TextFormat::table).find("1 of 2 checks FAIL (1.5000 s).") != std::string::npos);
}

TEST_CASE("validate CSV: raw numbers, the error as a fraction, the comparison by name") {
  CHECK(reports::validate_text(report(), reports::TextFormat::csv) ==
        "group,check,predicted,measured,unit,error_fraction,compare,tolerance,pass\n"
        "memory,pool,1000,1010,B,0.01,relative,0.02,true\n"
        "memory,bytes,4096,4096,B,0,exact,0,true\n");
}
