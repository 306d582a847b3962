// reports/size_output.h: the progress lines of `kvplan size` on a terminal.
#include <doctest/doctest.h>

#include <string>

#include "reports/size_output.h"

using namespace kvplan;

TEST_CASE("the progress bar fills 40 columns in proportion to the candidates done") {
  // 12 of 48 done: 40 x 12 / 48 = 10 filled, 30 to go.
  CHECK(reports::size_progress(12, 48) ==
        "\rsizing [" + std::string(10, '#') + std::string(30, '.') + "] 12/48 candidates");
  CHECK(reports::size_progress(48, 48) == "\rsizing [" + std::string(40, '#') + "] 48/48 candidates");
}

TEST_CASE("the closing lines give counts and wall time to a tenth of a second") {
  size::SizeResult r;
  r.candidates = 48;
  r.wall_s = 3.24;
  CHECK(reports::size_done(r) == "\rsized 48 candidates in 3.2 s" + std::string(20, ' ') + "\n");
  size::DisaggSearchResult d;
  d.candidates = 12;
  d.simulated = 5;
  d.wall_s = 0.96;
  CHECK(reports::disagg_done(d) == "sized 12 disaggregated layouts (5 simulated) in 1.0 s\n");
}
