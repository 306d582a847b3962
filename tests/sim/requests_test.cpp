// Tests of sim/requests.h: the random streams against the standard's fixed outputs and
// their distributions' moments; generated and traced arrivals and lengths.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/requests.h"
#include "tests/sim/fixtures.h"

using namespace kvplan;
using namespace kvplan::sim;
using kvplan::sim::test::poisson;

TEST_CASE("the random streams are mt19937_64 and the project's own distributions") {
  // The standard fixes mt19937_64's 10000th output for the default seed 5489.
  Rng rng(5489);
  uint64_t x = 0;
  for (int i = 0; i < 10000; ++i) x = rng.next_u64();
  CHECK(x == 9981545732273789042ULL);

  Rng r(1);
  const int n = 200000;
  double su = 0, sn = 0, sn2 = 0, se = 0, sg = 0, sg2 = 0, sh = 0;
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    su += u;
    const double z = r.normal();
    sn += z;
    sn2 += z * z;
    se += r.exponential();
    const double y = r.gamma(4.0);
    sg += y;
    sg2 += y * y;
    sh += r.gamma(0.25);
  }
  // Means within ~5 standard errors.
  CHECK(su / n == doctest::Approx(0.5).epsilon(0.005));
  CHECK(std::abs(sn / n) < 0.012);
  CHECK(sn2 / n == doctest::Approx(1.0).epsilon(0.015));
  CHECK(se / n == doctest::Approx(1.0).epsilon(0.012));
  CHECK(sg / n == doctest::Approx(4.0).epsilon(0.012));
  CHECK(sg2 / n - (sg / n) * (sg / n) == doctest::Approx(4.0).epsilon(0.04));  // var = shape
  CHECK(sh / n == doctest::Approx(0.25).epsilon(0.03));
}

TEST_CASE("generated arrivals and lengths have the asked rate, burstiness and mean") {
  Workload w = poisson(100000, 50.0, 1, 1);
  w.arrival.process = ArrivalProcess::gamma;
  w.arrival.cv = 3.0;
  w.prompt_tokens = LengthDist{LengthKind::lognormal, 0, 1, 1 << 30, 800.0, 0.8};
  w.output_tokens = LengthDist{LengthKind::uniform, 0, 10, 20, 0, 0};
  RequestStream s(w, 3, 2.0, w.requests);  // rate x 2 = 100 /s
  double last = 0, sg = 0, sg2 = 0, sp = 0;
  int64_t out_min = 1 << 30, out_max = 0, n = 0;
  while (auto r = s.next()) {
    if (n > 0) {
      const double gap = r->arrival_s - last;
      REQUIRE(gap >= 0.0);
      sg += gap;
      sg2 += gap * gap;
    }
    if (n == 0) CHECK(r->arrival_s == 0.0);
    last = r->arrival_s;
    sp += static_cast<double>(r->prompt_tokens);
    out_min = std::min(out_min, r->output_tokens);
    out_max = std::max(out_max, r->output_tokens);
    ++n;
  }
  CHECK(n == 100000);
  const auto gaps = static_cast<double>(n - 1);
  const double mean = sg / gaps;
  const double sd = std::sqrt(sg2 / gaps - mean * mean);
  CHECK(mean == doctest::Approx(0.01).epsilon(0.05));
  CHECK(sd / mean == doctest::Approx(3.0).epsilon(0.08));
  CHECK(sp / static_cast<double>(n) == doctest::Approx(800.0).epsilon(0.01));
  CHECK(out_min == 10);
  CHECK(out_max == 20);
}

TEST_CASE("a trace replays its arrivals, scaled, and starts again after its end") {
  auto rows = std::make_shared<std::vector<TraceRow>>(
      std::vector<TraceRow>{{0.0, 10, 1}, {1.0, 20, 2}, {3.0, 30, 3}});
  Workload w;
  w.arrival.process = ArrivalProcess::trace;
  w.prompt_tokens.kind = LengthKind::trace;
  w.output_tokens.kind = LengthKind::trace;
  w.trace = rows;
  // 2 gaps over 3 s: 2/3 requests per second; the replay starts 1.5 s after the last row.
  CHECK(w.base_rate_per_s() == doctest::Approx(2.0 / 3.0));
  RequestStream s(w, 0, 2.0, 5);
  const double want[] = {0.0, 0.5, 1.5, 2.25, 2.75};
  const int64_t prompts[] = {10, 20, 30, 10, 20};
  for (int i = 0; i < 5; ++i) {
    const auto r = s.next();
    REQUIRE(r);
    CHECK(r->arrival_s == doctest::Approx(want[i]));
    CHECK(r->prompt_tokens == prompts[i]);
  }
  CHECK_FALSE(s.next());
}

