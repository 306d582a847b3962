// Error bars from held-out errors: bands, the SLO probability and the headroom, worked
// by hand on five runs.
#include <doctest/doctest.h>

#include "planner/error_bars.h"

using namespace kvplan;

namespace {

MeasuredError run(const std::string& gpu, double ttft, double tpot) {
  return MeasuredError{"held-out run", gpu, false, ttft, tpot, ttft};
}

// Five runs on gpu "a": TTFT errors -0.2, -0.1, 0, 0.1, 0.25 (measured = predicted / (1 +
// e): factors 1.25, 1.111, 1, 0.909, 0.8); TPOT errors 0.3, -0.3, 0.2, 0.2, -0.1. Two
// runs on gpu "b".
Calibration five_and_two() {
  Calibration c;
  const double ttft[] = {-0.2, -0.1, 0, 0.1, 0.25};
  const double tpot[] = {0.3, -0.3, 0.2, 0.2, -0.1};
  for (int i = 0; i < 5; ++i) c.held_out_errors.push_back(run("a", ttft[i], tpot[i]));
  c.held_out_errors.push_back(run("b", 0.5, 0.5));
  c.held_out_errors.push_back(run("b", 0.5, 0.5));
  return c;
}

}  // namespace

TEST_CASE("error bars: no held-out errors, no bands") {
  CHECK_FALSE(error_bars(Calibration{}, "a").has_value());
}

TEST_CASE("error bars: the central 80 % of five runs on the GPU") {
  const auto b = error_bars(five_and_two(), "a", 0.8);
  REQUIRE(b.has_value());
  CHECK(b->on_gpu);
  CHECK(b->runs == 5);
  // Nearest rank: 10 % of 5 is rank ceil(0.5) = 1, the smallest factor 1 / 1.25 = 0.8;
  // 90 % is rank ceil(4.5) = 5, the largest, 1 / 0.8 = 1.25.
  CHECK(b->ttft.lo == doctest::Approx(0.8));
  CHECK(b->ttft.hi == doctest::Approx(1.25));
  // TPOT factors 1/1.3, 1/0.7, 1/1.2, 1/1.2, 1/0.9: smallest 0.769, largest 1.429.
  CHECK(b->tpot.lo == doctest::Approx(1 / 1.3));
  CHECK(b->tpot.hi == doctest::Approx(1 / 0.7));
}

TEST_CASE("error bars: a GPU with fewer runs than kMinRunsForGpuBand takes every GPU's") {
  const auto b = error_bars(five_and_two(), "b", 0.8);
  REQUIRE(b.has_value());
  CHECK_FALSE(b->on_gpu);
  CHECK(b->runs == 7);
  // Seven factors, the largest 1 / 0.8 (rank ceil(6.3) = 7), the smallest 1 / 1.5 (the two
  // "b" runs, rank ceil(0.7) = 1).
  CHECK(b->ttft.hi == doctest::Approx(1.25));
  CHECK(b->ttft.lo == doctest::Approx(1 / 1.5));
}

TEST_CASE("error bars: the probability of meeting the SLO counts runs meeting both targets") {
  const auto b = error_bars(five_and_two(), "a");
  REQUIRE(b.has_value());
  Slo slo;
  slo.ttft_p99_s = 1.0;
  // Predicted 1.0 s against 1.0 s: measured 1 / (1 + e) <= 1 where e >= 0: runs 3, 4, 5.
  CHECK(slo_probability(*b, 1.0, 0.05, slo) == doctest::Approx(0.6));
  // TPOT 0.05 s against 0.05 s holds on runs 1, 3, 4 (e >= 0); both on runs 3 and 4.
  slo.tpot_p99_s = 0.05;
  CHECK(slo_probability(*b, 1.0, 0.05, slo) == doctest::Approx(0.4));
  // Half the targets: measured TTFT at most 0.5 x 1.25 < 1 s, TPOT at most 0.025 / 0.7 < 0.05 s.
  CHECK(slo_probability(*b, 0.5, 0.025, slo) == doctest::Approx(1.0));
}

TEST_CASE("error bars: the headroom for a probability") {
  const auto b = error_bars(five_and_two(), "a");
  REQUIRE(b.has_value());
  // 1 + e for TTFT sorted: 0.8, 0.9, 1.0, 1.1, 1.25. For q = 0.6 the prediction may be the
  // third (1.0 x target): it holds on runs 3, 4, 5, three of five = 0.6; 1.1 would hold on 2.
  const SloHeadroom h60 = slo_headroom(*b, 0.6);
  CHECK(h60.ttft == doctest::Approx(1.0));
  CHECK_FALSE(h60.worst_run);
  // q = 0.9 of five runs needs all five: the worst run's 0.8 (TPOT: 0.7).
  const SloHeadroom h90 = slo_headroom(*b, 0.9);
  CHECK(h90.ttft == doctest::Approx(0.8));
  CHECK(h90.tpot == doctest::Approx(0.7));
  CHECK(h90.worst_run);
  CHECK_THROWS_AS(slo_headroom(*b, 1.0), InputError);
}
