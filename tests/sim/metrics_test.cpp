// Tests of sim/metrics.h: nearest-rank percentiles and the p99 verdict worked by hand, and
// the request count a p99 needs.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "sim/metrics.h"

using namespace kvplan;
using namespace kvplan::sim;

TEST_CASE("nearest-rank percentiles are the ceil(p n)-th smallest value") {
  // 1..10 shuffled: p50 = 5th smallest (ceil 5.0), p90 = 9th (ceil 9.0), p99 = 10th
  // (ceil 9.9); the mean is 55 / 10.
  std::vector<double> v{7, 3, 10, 1, 9, 2, 8, 4, 6, 5};
  const Percentiles p = percentiles(v);
  CHECK(p.p50 == 5.0);
  CHECK(p.p90 == 9.0);
  CHECK(p.p99 == 10.0);
  CHECK(p.mean == 5.5);
  std::vector<double> none;
  const Percentiles z = percentiles(none);
  CHECK(z.p50 == 0.0);
  CHECK(z.p99 == 0.0);
  CHECK(z.mean == 0.0);
  // Integers too (the sizing search's p99 prompt): 200 values 1..200, p99 = ceil(198) = 198th.
  std::vector<int64_t> n;
  for (int64_t i = 200; i >= 1; --i) n.push_back(i);
  CHECK(nearest_rank(n, 0.99) == 198);
}

TEST_CASE("a rejected request is infinitely late in the p99 verdict") {
  // 99 requests at 1 s and one rejected: the 100 values' p99 is the 99th smallest, 1 s.
  // Two rejected of 100 (98 at 1 s): the 99th smallest is infinite.
  const std::vector<double> ok(99, 1.0);
  CHECK(p99_with_failures(ok, 1) == 1.0);
  const std::vector<double> fewer(98, 1.0);
  CHECK(p99_with_failures(fewer, 2) == std::numeric_limits<double>::infinity());
  CHECK(p99_with_failures({}, 0) == 0.0);
  const Slo slo{2.0, 0.1};
  const std::vector<double> tpot(99, 0.05);
  CHECK(meets_slo(slo, ok, tpot, 99, 1));
  CHECK_FALSE(meets_slo(slo, fewer, std::vector<double>(98, 0.05), 98, 2));
  CHECK_FALSE(meets_slo(Slo{}, ok, tpot, 99, 0));    // no target: no verdict
  CHECK_FALSE(meets_slo(slo, {}, {}, 0, 0));         // nothing completed
  CHECK(request_meets_slo(slo, 1.9, 1, 5.0));        // one token: no TPOT to judge
  CHECK_FALSE(request_meets_slo(slo, 1.9, 2, 0.2));
  CHECK_FALSE(request_meets_slo(slo, 2.1, 2, 0.05));
}

TEST_CASE("a p99 needs 1,000 requests: 10 above the nearest-rank quantile") {
  // n - ceil(0.99 n) >= 10 first holds at n = 1,000 (1,000 - 990 = 10, while
  // 999 - ceil(989.01) = 9); p90: 100 - 90 = 10; p50: 20 - 10 = 10.
  CHECK(min_requests_for_percentile(0.99) == 1000);
  CHECK(min_requests_for_percentile(0.90) == 100);
  CHECK(min_requests_for_percentile(0.50) == 20);
}

TEST_CASE("ITL pools one gap per decoding sequence per step") {
  // Chunked (every step carries every decoder): steps of 10, 20, 30 ms with 1, 2 and 3
  // decoders give gaps 10 (x1), 20 (x2), 30 (x3) ms: six gaps, mean 140 / 6 ms, the
  // nearest-rank median the 3rd smallest (20 ms), p99 the 6th (30 ms).
  ItlTally chunked(false);
  chunked.step(0.010, 0.010, 1, 1);
  chunked.step(0.030, 0.020, 2, 2);
  chunked.step(0.060, 0.030, 3, 3);
  const Percentiles p = chunked.summary();
  CHECK(p.mean == doctest::Approx(0.140 / 6));
  CHECK(p.p50 == doctest::Approx(0.020));
  CHECK(p.p99 == doctest::Approx(0.030));
  // Prefill-first: a prefill-only step stalls the waiting decoders; a sequence that joined
  // in it counts its first gap from its own prefill. A's prefill ends at 50 ms, A decodes
  // to 60 ms (gap 10 ms); B's prefill runs to 110 ms while A waits; both decode to 120 ms:
  // B's gap 10 ms, A's 60 ms. Gaps 10, 10, 60 ms: mean 80 / 3, median 10, p99 60.
  ItlTally v0(true);
  v0.step(0.050, 0.050, 0, 1);
  v0.step(0.060, 0.010, 1, 1);
  v0.step(0.110, 0.050, 0, 1);
  v0.step(0.120, 0.010, 2, 2);
  const Percentiles q = v0.summary();
  CHECK(q.mean == doctest::Approx(0.080 / 3));
  CHECK(q.p50 == doctest::Approx(0.010));
  CHECK(q.p99 == doctest::Approx(0.060));
}
