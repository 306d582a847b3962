// Tests of sim/requests.h: the random streams against the standard's fixed outputs and
// their distributions' moments; generated and traced arrivals and lengths.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
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


TEST_CASE("vLLM bench's random lengths stay within the range ratio's bounds and average the length") {
  // vllm/benchmarks/datasets/random.py get_sampling_params (vllm-project/vllm@237145ea):
  // integers uniform in [floor(L (1 - r)), ceil(L (1 + r))], outputs at least 1. Input
  // 1,000 at r = 0.5: [500, 1500], mean 1,000; output 200: [100, 300]. A uniform over
  // 1,001 integers has a standard deviation of 1,001 / sqrt(12) = 289, so the mean of
  // 100,000 draws is within 5 tokens of 1,000 (5.5 standard errors of 0.91).
  Workload w = poisson(100000, 1.0, 1, 1);
  w.use_random(RandomDataset{1000, 200, 0.5, 0});
  RequestStream s(w, 7, 1.0, w.requests);
  int64_t lo = 1 << 30, hi = 0, out_lo = 1 << 30, out_hi = 0;
  double sum = 0, out_sum = 0;
  while (const auto r = s.next()) {
    lo = std::min(lo, r->prompt_tokens);
    hi = std::max(hi, r->prompt_tokens);
    out_lo = std::min(out_lo, r->output_tokens);
    out_hi = std::max(out_hi, r->output_tokens);
    sum += static_cast<double>(r->prompt_tokens);
    out_sum += static_cast<double>(r->output_tokens);
    CHECK(r->group_key == 0);  // no prefix: nothing shared
  }
  CHECK(lo == 500);  // 100,000 draws over 1,001 values reach both ends
  CHECK(hi == 1500);
  CHECK(out_lo == 100);
  CHECK(out_hi == 300);
  CHECK(std::abs(sum / 1e5 - 1000) < 5);
  CHECK(std::abs(out_sum / 1e5 - 200) < 1);  // sd 201 / sqrt(12) = 58, error 0.18
}

TEST_CASE("the random dataset's bounds round as vLLM's do, and its prefix is shared") {
  // floor(1001 x 0.5) = 500, ceil(1001 x 1.5) = ceil(1501.5) = 1502, plus a prefix of 64;
  // output 5 at r = 0.9: floor(0.5) = 0, raised to 1; ceil(9.5) = 10.
  const RandomDataset d{1001, 5, 0.5, 64};
  CHECK(d.prompt_lengths().kind == LengthKind::uniform);
  CHECK(d.prompt_lengths().min == 564);
  CHECK(d.prompt_lengths().max == 1566);
  const RandomDataset o{1001, 5, 0.9, 0};
  CHECK(o.output_lengths().min == 1);
  CHECK(o.output_lengths().max == 10);
  // r = 0: every length is the length itself.
  CHECK(RandomDataset{1024, 128, 0, 0}.prompt_lengths().kind == LengthKind::fixed);
  CHECK(RandomDataset{1024, 128, 0, 0}.output_lengths().value == 128);
  // vLLM refuses r >= 1 and prompts that can be empty (prefix + floor(L (1 - r)) < 1).
  std::string expected;
  CHECK(std::string(RandomDataset{100, 10, 1.0, 0}.invalid_field(&expected)) == "range_ratio");
  CHECK(std::string(RandomDataset{1, 10, 0.5, 0}.invalid_field(&expected)) == "range_ratio");
  CHECK(RandomDataset{1, 10, 0.5, 1}.invalid_field(&expected) == nullptr);
  Workload w = poisson(50, 1.0, 1, 1);
  w.use_random(d);
  RequestStream s(w, 1, 1.0, w.requests);
  while (const auto r = s.next()) {
    CHECK(r->shared_tokens == 64);
    CHECK(r->group_key == 1);  // one prefix for every request, as vLLM draws it once
    CHECK(r->prompt_tokens >= 564);
    CHECK(r->prompt_tokens <= 1566);
  }
}

TEST_CASE("the benchmark client sends a request when it is due and a slot is free") {
  // Fixed arrivals 1 s apart, at most 2 in flight. Requests 0 and 1 go out at 0 and 1;
  // request 2 (due at 2) waits. Request 0 ends with E2E 5 s (sent at 0: the slot frees at
  // 5), so request 2 goes out at 5. Request 1 is refused at 3 s: its slot frees then, and
  // request 3 (due at 3) goes out at 3. Then both slots are held again.
  Workload w = poisson(6, 1.0, 10, 10);
  w.arrival.process = ArrivalProcess::fixed;
  RequestStream stream(w, 0, 1.0, w.requests);
  BenchmarkClient c(stream, 2, false);
  const auto send = [&c] {
    const GeneratedRequest* g = c.peek();
    REQUIRE(g != nullptr);
    const GeneratedRequest sent = *g;
    c.pop();
    return sent;
  };
  CHECK(send().arrival_s == 0.0);
  CHECK(send().arrival_s == 1.0);
  CHECK(c.peek() == nullptr);
  FinishedRequest f;
  f.index = 0;
  f.e2e_s = 5.0;
  c.finished(f);
  const GeneratedRequest third = send();
  CHECK(third.index == 2);
  CHECK(third.arrival_s == 5.0);
  c.rejected(1, 3.0);
  const GeneratedRequest fourth = send();
  CHECK(fourth.index == 3);
  CHECK(fourth.arrival_s == 3.0);
  CHECK(c.peek() == nullptr);
  CHECK(!c.exhausted());
  // All at once: every arrival is 0, whatever the stream drew.
  RequestStream again(w, 0, 1.0, w.requests);
  BenchmarkClient burst(again, std::nullopt, true);
  for (int i = 0; i < 6; ++i) {
    REQUIRE(burst.peek() != nullptr);
    CHECK(burst.peek()->arrival_s == 0.0);
    burst.pop();
  }
  CHECK(burst.exhausted());
}
