// io/demand_io.h: the demand CSV (hour, model, requests_per_s), its periods and every
// refusal naming the file, the column and the line.
#include <doctest/doctest.h>

#include <string>

#include "io/demand_io.h"
#include "planner/types.h"

using namespace kvplan;

namespace {

//! The message of the InputError `text` raises.
std::string error_of(const std::string& text) {
  try {
    io::parse_demand(text, "d.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("demand CSV: periods from the hours, one series per model, rows in any order") {
  const DemandCurve c = io::parse_demand(
      "\xEF\xBB\xBFhour, model, requests_per_s\r\n0,a,1.5\n1,a,2\n\n1,b,4\n0,b,3\n2,b,5\n2,a,2.5\n", "d.csv");
  CHECK(c.file == "d.csv");
  CHECK(c.period_h == 1);
  REQUIRE(c.hours.size() == 3);
  CHECK(c.cycle_h() == 3);
  REQUIRE(c.models.size() == 2);
  CHECK(c.models[0].model == "a");
  CHECK(c.models[0].requests_per_s == std::vector<double>{1.5, 2, 2.5});
  CHECK(c.models[1].model == "b");
  CHECK(c.models[1].requests_per_s == std::vector<double>{3, 4, 5});
}

TEST_CASE("demand CSV: finer than hourly, and a single row") {
  const DemandCurve q = io::parse_demand("hour,model,requests_per_s\n0,a,1\n0.25,a,2\n0.5,a,3\n0.75,a,4\n", "q.csv");
  CHECK(q.period_h == doctest::Approx(0.25));
  CHECK(q.cycle_h() == doctest::Approx(1.0));
  const DemandCurve one = io::parse_demand("hour,model,requests_per_s\n0,a,7\n", "one.csv");
  CHECK(one.period_h == 1);
  CHECK(one.models[0].requests_per_s == std::vector<double>{7});
}

TEST_CASE("demand CSV: bad rows name the file, the column and the line") {
  const std::string h = "hour,model,requests_per_s\n";
  CHECK(error_of("hour,rate\n0,1\n") ==
        "d.csv: expected a header line 'hour,model,requests_per_s', got 'hour,rate' on line 1");
  CHECK(error_of(h + "0,a,1\n1,a\n") == "d.csv: expected 3 comma-separated columns, got 2 on line 3");
  CHECK(error_of(h + "0,a,1\nx,a,1\n") ==
        "d.csv: key 'hour': expected a finite number of hours >= 0, got 'x' on line 3");
  CHECK(error_of(h + "-1,a,1\n") == "d.csv: key 'hour': expected a finite number of hours >= 0, got '-1' on line 2");
  CHECK(error_of(h + "0, ,1\n") == "d.csv: key 'model': expected a model name, got an empty field on line 2");
  CHECK(error_of(h + "0,a,-2\n") ==
        "d.csv: key 'requests_per_s': expected a finite rate >= 0, got '-2' on line 2");
  CHECK(error_of(h + "0,a,nan\n") ==
        "d.csv: key 'requests_per_s': expected a finite rate >= 0, got 'nan' on line 2");
  CHECK(error_of(h + "0,a,1\n0,a,2\n") ==
        "d.csv: key 'hour': expected one row per hour and model ('a' at hour 0 is on line 2), got a second one on "
        "line 3");
  CHECK(error_of(h + "1,a,1\n2,a,1\n") == "d.csv: key 'hour': expected periods starting at hour 0, got '1' first, "
                                          "for 'a' on line 2");
  CHECK(error_of(h + "0,a,1\n1,a,1\n3,a,1\n") ==
        "d.csv: key 'hour': expected equally spaced periods (every 1 h, as the first two), got 3 for 'a' on line 4");
  CHECK(error_of(h + "0,a,1\n1,a,1\n0,b,1\n") ==
        "d.csv: key 'hour': expected a row for 'b' at hour 1 (every model has the same hours), got no row for it");
  CHECK(error_of(h) == "d.csv: expected at least one row after the header, got none");
}
