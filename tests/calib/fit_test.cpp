// calib/fit.h: the least-squares fits recover parameters from data generated with them.
#include <doctest/doctest.h>

#include "calib/fit.h"
#include "planner/types.h"

using namespace kvplan;
using namespace kvplan::calib;

TEST_CASE("the GEMM, elementwise and all-reduce fits recover the parameters that generated the data") {
  // Datasheet 1e15 FLOP/s and 3e12 B/s. Truth: floor 3 us, GEMM bytes at 90 % of the
  // bandwidth, FLOPs at 75 % of the peak, elementwise at 80 %; all-reduce 10 us + 2 (n-1)/n
  // x bytes / 400 GB/s.
  const Datasheet d{1e15, 3e12};
  Measurements m;
  for (int64_t mm : {1, 8, 64, 512, 4096})
    for (int64_t n : {1024, 4096, 14336}) {
      const double bytes = static_cast<double>(mm * 4096 + 4096 * n + mm * n) * 2;
      const double flops = 2.0 * static_cast<double>(mm * n * 4096);
      m.gemm.push_back({mm, n, 4096, 2, 3e-6 + bytes / (0.9 * 3e12) + flops / (0.75 * 1e15)});
    }
  for (int64_t b : {int64_t{1} << 12, int64_t{1} << 20, int64_t{1} << 26})
    m.elementwise.push_back({b, 3e-6 + static_cast<double>(b) / (0.8 * 3e12)});
  for (int64_t g : {2, 4, 8})
    for (int64_t b : {int64_t{1} << 12, int64_t{1} << 20, int64_t{1} << 26}) {
      const double n = static_cast<double>(g);
      m.all_reduce.push_back({g, b, 10e-6 + 2 * (n - 1) / n * static_cast<double>(b) / 400e9});
    }
  std::map<std::string, FitQuality> q;
  const Parameters p = fit(m, d, "synthetic.json", &q);
  CHECK(p.at("kernel_floor_s").value == doctest::Approx(3e-6).epsilon(1e-6));
  CHECK(p.at("gemm_bandwidth_efficiency").value == doctest::Approx(0.9).epsilon(1e-6));
  CHECK(p.at("gemm_flops_efficiency").value == doctest::Approx(0.75).epsilon(1e-6));
  CHECK(p.at("elementwise_bandwidth_efficiency").value == doctest::Approx(0.8).epsilon(1e-6));
  CHECK(p.at("allreduce_latency_s").value == doctest::Approx(10e-6).epsilon(1e-6));
  CHECK(p.at("allreduce_bus_bytes_per_s").value == doctest::Approx(400e9).epsilon(1e-6));
  CHECK(q.at("measurements.all_reduce").rms_relative_error < 1e-9);
}

TEST_CASE("a table with fewer rows than unknowns is an error naming the table") {
  Measurements m;
  m.all_reduce.push_back({2, 1024, 1e-5});
  try {
    (void)fit(m, Datasheet{1e15, 3e12}, "one-row.json");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.file() == "one-row.json");
    CHECK(e.key() == "measurements.all_reduce");
  }
}

TEST_CASE("timings that imply a negative bandwidth are refused") {
  // Time falling with size: the slope is negative, no bandwidth explains it.
  Measurements m;
  m.hbm_copy = {{1000, 2e-5}, {1000000, 1e-5}, {2000000, 0.5e-5}};
  CHECK_THROWS_AS((void)fit(m, Datasheet{1e15, 3e12}, "bad.json"), InputError);
}
