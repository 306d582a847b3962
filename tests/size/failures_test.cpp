// Spare replicas for failures (size/failures.h), each figure worked by hand.
#include <doctest/doctest.h>

#include <stdexcept>
#include <tuple>

#include "size/failures.h"

using namespace kvplan::size;

TEST_CASE("the default failure rate is Llama 3's: 419 interruptions in 54 days on 16,384 GPUs") {
  // 16,384 GPUs x 54 / 365.25 years = 2,422.7 GPU-years; 419 / 2,422.7 = 0.17295.
  CHECK(kLlama3InterruptionsPerGpuYear == doctest::Approx(0.17295).epsilon(1e-4));
}

TEST_CASE("a replica is down x / (1 + x) of the time, x = its GPUs' failures per year x the repair time") {
  // 4 GPUs x 0.173 per GPU-year x 48 h / 8,760 h = 0.0037918; / 1.0037918 = 0.0037775.
  CHECK(replica_unavailability(4, 0.173, 48) == doctest::Approx(0.0037775).epsilon(1e-4));
  CHECK(replica_unavailability(8, 0, 48) == 0);
}

TEST_CASE("spares: the fewest k with at most k of n + k down often enough") {
  // n = 3, each down 1 % of the time. k = 0: 0.99^3 = 0.970299. k = 1: 0.99^4 + 4 x 0.01 x
  // 0.99^3 = 0.96059601 + 0.03881196 = 0.99940797.
  auto [k, p] = spares_for(3, 0.01, 0.999);
  CHECK(k == 1);
  CHECK(p == doctest::Approx(0.99940797).epsilon(1e-9));
  // 99.99 % needs k = 2: 0.99^5 + 5 x 0.01 x 0.99^4 + 10 x 0.0001 x 0.99^3 = 0.9509900499 +
  // 0.0480298005 + 0.000970299 = 0.9999901494.
  std::tie(k, p) = spares_for(3, 0.01, 0.9999);
  CHECK(k == 2);
  CHECK(p == doctest::Approx(0.9999901494).epsilon(1e-9));
  // A replica that never fails needs no spare; 97 % is met by the three alone (0.970299).
  CHECK(spares_for(1, 0, 0.999).first == 0);
  CHECK(spares_for(3, 0.01, 0.97).first == 0);
  CHECK_THROWS_AS(spares_for(3, 0.6, 0.999), std::invalid_argument);
}

TEST_CASE("failure options out of range are refused naming the option") {
  FailureOptions f;
  f.availability = 0.999;
  CHECK_THROWS_WITH(validate(f), doctest::Contains("--repair-hours"));
  f.repair_hours = 24;
  CHECK_NOTHROW(validate(f));
  f.availability = 1;
  CHECK_THROWS_WITH(validate(f), doctest::Contains("--availability"));
}
