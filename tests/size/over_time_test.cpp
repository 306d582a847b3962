// size/over_time.h: the plan over months worked by hand on two periods and one model
// (the owned/rented split from the prices), the lead time, growth and break-even, and
// the model checks of plan_over_time.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

#include "size/over_time.h"
#include "size/size.h"

using namespace kvplan;
using namespace kvplan::size;

namespace {

// One GPU per server so servers = replicas; $12,000 a server, amortized over one year:
// $1,000 a month. Host 1,000 W, GPU idle 100 W, board 500 W, PUE 1, $0.10/kWh, no
// network, support or space.
ServerSpec one_gpu_server() {
  ServerSpec s;
  s.gpu = "g";
  s.form = "1-GPU box";
  s.gpu_price_usd = 12000;
  s.gpu_board_power_w = 500;
  s.gpu_idle_power_w = 100;
  s.gpus_per_server = 1;
  s.server_price_usd = 0;
  s.server_power_w = 1000;
  s.server_rack_units = 2;
  return s;
}

SiteOptions site() {
  SiteOptions s;
  s.electricity_usd_per_kwh = 0.10;
  s.pue = 1;
  s.amortization_years = 1;
  s.network_fraction = 0;
  s.support_fraction_per_year = 0;
  return s;
}

// Two 12-hour periods: 10 and 30 requests/s; one replica sustains 10/s, busy 80 % of the
// time at that rate; rent $2 per GPU-hour.
DemandOptions two_periods(int64_t months) {
  DemandOptions d;
  d.curve.file = "two.csv";
  d.curve.period_h = 12;
  d.curve.hours = {0, 12};
  d.curve.models = {{"m", {10, 30}}};
  d.horizon_months = months;
  return d;
}

// One period covering the whole day, 10 requests/s in month 1 growing 40 % a month over
// three months (the staged-purchase cases below).
DemandOptions growing_day() {
  DemandOptions d;
  d.curve.file = "flat.csv";
  d.curve.period_h = 24;
  d.curve.hours = {0};
  d.curve.models = {{"m", {10}}};
  d.horizon_months = 3;
  d.growth_per_month = 0.4;
  return d;
}

MixInputs inputs() {
  MixInputs in;
  in.max_rate_per_replica_per_s = 10;
  in.busy_fraction_at_max = 0.8;
  in.price_per_gpu_hour_usd = 2;
  in.server = one_gpu_server();
  return in;
}

}  // namespace

// By hand. A 730-hour month holds 730 / 24 cycles, so each 12-hour period lasts 365 h a
// month; the periods need ceil(10/10) = 1 and ceil(30/10) = 3 replicas. Renting one
// replica through one period costs 365 x $2 = $730 a month.
//   S = 0: (1 + 3) x $730 = $2,920.
//   One owned server costs $12,000 / 12 = $1,000 a month plus energy: idle (1,000 W host
//   + 100 W GPU) x 730 h = 803 kWh, and (500 - 100) W x 0.8 busy x the replica-hours it
//   serves at its max rate.
//   S = 1: serves 10/s in both periods: 2 x 365 h x 0.8 = 584 busy h -> 233.6 kWh.
//          Energy (803 + 233.6) x $0.10 = $103.66; rent (0 + 2) x $730 = $1,460;
//          total $1,000 + $103.66 + $1,460 = $2,563.66.
//   S = 2: idle 1,606 kWh; busy (1 + 2) x 365 x 0.8 = 876 h -> 350.4 kWh: $195.64;
//          rent 1 x $730: $2,000 + $195.64 + $730 = $2,925.64.
//   S = 3: idle 2,409 kWh; busy (1 + 3) x 292 = 1,168 h -> 467.2 kWh: $287.62; no rent:
//          $3,287.62.
// The cheapest is one server (the base), renting the peak: an owned server costs $1,103.66
// or more a month, above the $730 the peak-only period's rent costs and below the $1,460
// of renting a replica around the clock.
TEST_CASE("owned base, rented peaks: the split worked by hand from the prices") {
  const DemandOptions d = two_periods(1);
  const ModelPlan p = plan_model(inputs(), d.curve.models[0], d, site());
  REQUIRE(p.periods.size() == 2);
  CHECK(p.periods[0].replicas == 1);
  CHECK(p.periods[1].replicas == 3);
  CHECK(p.replicas_peak == 3);
  CHECK(p.replicas_mean == doctest::Approx(2.0));  // (1 + 3) / 2 over equal periods
  CHECK(p.gpu_hours_needed == doctest::Approx(4 * 365.0));
  CHECK(p.all_rented.total_usd == doctest::Approx(2920.0));
  CHECK(p.best.servers == 1);
  CHECK(p.best.replicas == 1);
  CHECK(p.best.capex_usd == doctest::Approx(12000.0));
  CHECK(p.best.rented_gpu_hours == doctest::Approx(2 * 365.0));
  REQUIRE(p.best.months.size() == 1);
  CHECK(p.best.months[0].energy_usd == doctest::Approx(103.66));
  CHECK(p.best.total_usd == doctest::Approx(2563.66));
  REQUIRE(p.all_owned);
  CHECK(p.all_owned->servers == 3);
  CHECK(p.all_owned->total_usd == doctest::Approx(3287.62));
  CHECK(mix_cost(inputs(), d.curve.models[0], d.curve, d, site(), 2).total_usd == doctest::Approx(2925.64));
  // One month cannot repay $12,000 of capex: 12,000 + 103.66 + 1,460 > 2,920.
  CHECK_FALSE(p.break_even_month);
}

// Over 12 months the cumulative cash of one server bought is 12,000 + k x (103.66 +
// 1,460) against k x 2,920 rented: equal at k = 12,000 / 1,356.34 = 8.85, so month 9.
TEST_CASE("break-even: the first month whose cumulative cash is at most renting everything's") {
  const DemandOptions d = two_periods(12);
  const ModelPlan p = plan_model(inputs(), d.curve.models[0], d, site());
  CHECK(p.best.servers == 1);
  CHECK(p.best.total_usd == doctest::Approx(12 * 2563.66));
  CHECK(p.best.months[0].cash_usd == doctest::Approx(12000 + 103.66 + 1460));
  CHECK(p.best.months[1].cash_usd == doctest::Approx(103.66 + 1460));
  CHECK(p.break_even_month == 9);
}

// Lead time 1 of 2 months: month 1 rents everything ($2,920), month 2 is the owned
// month above. S = 1: 2,920 + 2,563.66 = 5,483.66; S = 0: 5,840; S = 2: 5,845.64;
// S = 3: 6,207.62. The order is paid when placed: capex in month 1 with that month's rent
// (12,000 + 2,920), month 2 pays the owned month's running costs and rent (103.66 + 1,460),
// and the accrual starts at delivery (month 1 holds no amortization).
TEST_CASE("purchase lead time: everything rented until the servers arrive, capex paid at order") {
  DemandOptions d = two_periods(2);
  d.purchase_lead_months = 1;
  const ModelPlan p = plan_model(inputs(), d.curve.models[0], d, site());
  CHECK(p.best.servers == 1);
  CHECK_FALSE(p.best.months[0].owned_serving);
  CHECK(p.best.months[0].rented_usd == doctest::Approx(2920.0));
  CHECK(p.best.months[0].capex_paid_usd == doctest::Approx(12000.0));
  CHECK(p.best.months[0].cash_usd == doctest::Approx(12000 + 2920.0));
  CHECK(p.best.months[0].cost_usd == doctest::Approx(2920.0));
  CHECK(p.best.months[1].owned_serving);
  CHECK(p.best.months[1].capex_paid_usd == 0);
  CHECK(p.best.months[1].cash_usd == doctest::Approx(103.66 + 1460));
  CHECK(p.best.cash_usd == doctest::Approx(12000 + 2920 + 103.66 + 1460));
  CHECK(p.best.total_usd == doctest::Approx(5483.66));
  CHECK(p.all_owned->total_usd == doctest::Approx(6207.62));
}

// Growth 100 % a month: month 2's rates are 20 and 60/s, 2 and 6 replicas. Rented only
// (no purchase data): month 1 (1 + 3) x $730 = $2,920, month 2 (2 + 6) x $730 = $5,840.
TEST_CASE("growth compounds by month: without purchase data everything is rented") {
  DemandOptions d = two_periods(2);
  d.growth_per_month = 1.0;
  MixInputs in = inputs();
  in.server.reset();
  const ModelPlan p = plan_model(in, d.curve.models[0], d, site());
  CHECK(p.replicas_peak == 6);
  CHECK(p.best.months[1].growth_factor == doctest::Approx(2.0));
  CHECK(p.best.months[1].replicas_peak == 6);
  CHECK(p.best.total_usd == doctest::Approx(2920.0 + 5840.0));
  CHECK(p.best.servers == 0);
  CHECK_FALSE(p.all_owned);
  CHECK_FALSE(p.server_form);
}

// A rate of 0 needs no replica (not the one replicas_for's floor gives a search).
// Staged purchases by hand. One period covering the whole day (730 h a month), 10
// requests/s in month 1 growing 40 % a month: 14/s and 19.6/s, so ceil(rate / 10) = 1, 2
// and 2 replicas. Renting a replica for a month: 730 x $2 = $1,460. An owned server a month:
// $1,000 of capex, idle (1,000 W host + 100 W GPU) x 730 h = 803 kWh = $80.30, and
// (500 - 100) W x 0.8 busy x 730 h x load / 10 = 23.36 kWh x load = $2.336 x load, the
// load being min(rate, 10 x servers).
//   one server only, [1, 1, 1]: month 1 1,000 + 80.30 + 23.36 = $1,103.66; months 2 and 3
//     the same plus one replica rented: $2,563.66 each. Total $6,230.98.
//   two at once, [2, 2, 2]: month 1 2,000 + 160.60 + 23.36 = $2,183.96; month 2 2,160.60 +
//     2.336 x 14 = $2,193.304; month 3 2,160.60 + 2.336 x 19.6 = $2,206.3856. Total
//     $6,583.6496.
//   one now and one in month 2, [1, 2, 2]: 1,103.66 + 2,193.304 + 2,206.3856 = $5,503.3496.
//   the others: [0, 2, 2] 1,460 + 4,399.69 = $5,859.69; [1, 1, 2] $5,873.71; [0, 1, 2]
//   $6,230.05; [0, 1, 1] $6,587.32; nothing bought 1,460 + 2 x 2,920 = $7,300.
// The second server pays from the month its replica is needed all month, not before.
TEST_CASE("staged purchases: one server now and one when demand grows, worked by hand") {
  const DemandOptions d = growing_day();
  const auto& demand = d.curve.models[0];
  CHECK(mix_cost(inputs(), demand, d.curve, d, site(), 1).total_usd == doctest::Approx(6230.98));
  CHECK(mix_cost(inputs(), demand, d.curve, d, site(), 2).total_usd == doctest::Approx(6583.6496));
  const ModelPlan p = plan_model(inputs(), demand, d, site());
  REQUIRE(p.best.tranches.size() == 2);
  CHECK(p.best.tranches[0].order_month == 1);
  CHECK(p.best.tranches[0].servers == 1);
  CHECK(p.best.tranches[0].capex_usd == doctest::Approx(12000.0));
  CHECK(p.best.tranches[1].order_month == 2);
  CHECK(p.best.tranches[1].servers == 1);
  CHECK(p.best.tranches[1].capex_usd == doctest::Approx(12000.0));
  CHECK(p.best.servers == 2);
  CHECK(p.best.capex_usd == doctest::Approx(24000.0));
  CHECK(p.best.total_usd == doctest::Approx(5503.3496));
  CHECK(p.best.months[0].servers_owned == 1);
  CHECK(p.best.months[1].servers_owned == 2);
  // Cash in month 2: the second server's $12,000, ordered and (no lead time) serving that
  // month, + energy 160.60 + 32.704, no rent.
  CHECK(p.best.months[1].capex_paid_usd == doctest::Approx(12000.0));
  CHECK(p.best.months[1].cash_usd == doctest::Approx(12000 + 160.60 + 32.704));
  CHECK(p.best.months[2].capex_paid_usd == 0);
  REQUIRE(p.all_owned);
  CHECK(p.all_owned->total_usd == doctest::Approx(6583.6496));
}

// No growth: every month after delivery costs the same at a given count, so a later tranche
// never pays; the plan is the single purchase of "purchase lead time" above, ordered in
// month 1 and serving from month 2.
TEST_CASE("staged purchases: without growth the plan is today's single purchase") {
  DemandOptions d = two_periods(6);
  d.purchase_lead_months = 1;
  const ModelPlan p = plan_model(inputs(), d.curve.models[0], d, site());
  REQUIRE(p.best.tranches.size() == 1);
  CHECK(p.best.tranches[0].order_month == 1);
  CHECK(p.best.tranches[0].servers == 1);
  CHECK(p.best.total_usd == doctest::Approx(2920 + 5 * 2563.66));
  CHECK(p.best.total_usd == doctest::Approx(mix_cost(inputs(), d.curve.models[0], d.curve, d, site(), 1).total_usd));
}

// best_schedule is exact: against every non-decreasing schedule of owned counts (0 to the
// peak's servers, zero before the lead time), costed period by period by mix_cost.
TEST_CASE("staged purchases: the schedule found is the cheapest of all schedules") {
  DemandOptions d = two_periods(5);
  d.growth_per_month = 0.3;
  d.purchase_lead_months = 1;
  const auto& demand = d.curve.models[0];
  const MixInputs in = inputs();
  // Month 5's peak: 30 x 1.3^4 = 85.7/s, 9 replicas; search counts 0..9.
  const int64_t peak = 9;
  const std::vector<Tranche> found = best_schedule(in, demand, d, site(), 1, peak);
  const double found_usd = mix_cost(in, demand, d.curve, d, site(), found).total_usd;
  double best_usd = mix_cost(in, demand, d.curve, d, site(), 0).total_usd;
  std::vector<int64_t> count(static_cast<size_t>(d.horizon_months), 0);  // months 1.. (0 before the lead)
  const std::function<void(size_t, int64_t)> walk = [&](size_t m, int64_t low) {
    if (m == count.size()) {
      std::vector<Tranche> t;
      for (size_t k = 1; k < count.size(); ++k)
        if (count[k] > count[k - 1]) t.push_back({static_cast<int64_t>(k), count[k] - count[k - 1], 0});
      best_usd = std::min(best_usd, mix_cost(in, demand, d.curve, d, site(), t).total_usd);
      return;
    }
    for (int64_t n = low; n <= (m == 0 ? 0 : peak); ++n) {
      count[m] = n;
      walk(m + 1, n);
    }
  };
  walk(0, 0);
  CHECK(found.size() > 1);
  CHECK(found_usd == doctest::Approx(best_usd));
}

// Purchases and a reservation chosen together, by hand. The growing flat day of "staged
// purchases" above (needs 1, 2, 2 replicas in months 1-3; a rented replica-month $1,460; one
// owned server $1,103.66 a month: $1,000 + 80.30 idle + 23.36 busy at its full 10/s) and a
// 3-month reservation at $1.20/GPU-h: $2,628 a replica for the term (3 x 730 x 1.20).
// Chosen one after the other:
//   the schedule without reservations is [1, 2, 2] ($5,503.3496, above) and then leaves no
//   replica to reserve;
//   each single purchase with its best reservation: none bought, both levels reserved
//   (level 1 saves 2,190 h x $2 - 2,628 = $1,752, level 2 1,460 h x $2 - 2,628 = $292):
//   2 x 2,628 = $5,256; one server now, level 2 reserved: 3 x 1,103.66 + 2,628 =
//   $5,938.98; two servers $6,583.6496. The cheapest: $5,256, nothing bought.
// Together: one replica reserved for the term covers month 1, and one server bought in
// month 2 covers the rest: 2,628 + 2 x 1,103.66 = $4,835.32. Every other pair costs more:
// reserving one level with no server 2,628 + 2 x 1,460 = $5,548, with a server from month 1
// 2,628 + 3 x 1,103.66 = $5,938.98; reserving none the $5,503.3496 above; two levels
// $5,256.
TEST_CASE("reserved and staged purchases chosen together: reserve the base, buy when demand grows") {
  const DemandOptions d = growing_day();
  const auto& demand = d.curve.models[0];
  MixInputs in = inputs();
  in.reserved = {{3, 1.20}};
  CHECK(mix_cost(in, demand, d.curve, d, site(), 0, Reservation{3, {2}}).total_usd == doctest::Approx(5256.0));
  const ModelPlan p = plan_model(in, demand, d, site());
  CHECK(p.all_rented.total_usd == doctest::Approx(5256.0));
  REQUIRE(p.best.tranches.size() == 1);
  CHECK(p.best.tranches[0].order_month == 2);
  CHECK(p.best.tranches[0].servers == 1);
  CHECK(p.best.reserved_term_months == 3);
  CHECK(p.best.reserved_replicas == std::vector<int64_t>{1});
  CHECK(p.best.total_usd == doctest::Approx(4835.32));
  CHECK(p.best.months[0].rented_usd == doctest::Approx(876.0));  // the reserved replica: 730 x 1.20
  CHECK(p.best.months[0].rented_gpu_hours == 0);
  CHECK(p.best.months[1].servers_owned == 1);
  CHECK(p.best.months[1].rented_gpu_hours == 0);
}

// The joint choice is exact: on a small case with a lead time, two periods and two terms,
// no schedule of purchases with any reservation of 2-month terms costs less than the plan.
TEST_CASE("reserved and staged purchases chosen together: no schedule and reservation costs less") {
  DemandOptions d = two_periods(4);
  d.growth_per_month = 0.3;
  d.purchase_lead_months = 1;
  const auto& demand = d.curve.models[0];
  MixInputs in = inputs();
  in.reserved = {{2, 1.50}};
  // Month 4's peak: 30 x 1.3^3 = 65.9/s, 7 replicas.
  const int64_t peak = 7;
  const ModelPlan p = plan_model(in, demand, d, site());
  double best_usd = std::numeric_limits<double>::infinity();
  std::vector<int64_t> count(static_cast<size_t>(d.horizon_months), 0);  // month 1: 0 (lead time)
  const std::function<void(size_t, int64_t)> walk = [&](size_t m, int64_t low) {
    if (m == count.size()) {
      std::vector<Tranche> t;
      for (size_t k = 1; k < count.size(); ++k)
        if (count[k] > count[k - 1]) t.push_back({static_cast<int64_t>(k), count[k] - count[k - 1], 0});
      for (int64_t a = 0; a <= peak; ++a)
        for (int64_t b = 0; b <= peak; ++b)
          best_usd = std::min(best_usd, mix_cost(in, demand, d.curve, d, site(), t, Reservation{2, {a, b}}).total_usd);
      return;
    }
    for (int64_t n = low; n <= (m == 0 ? 0 : peak); ++n) {
      count[m] = n;
      walk(m + 1, n);
    }
  };
  walk(0, 0);
  CHECK(p.best.total_usd == doctest::Approx(best_usd));
  CHECK(p.best.reserved_term_months == 2);
  CHECK_FALSE(p.best.tranches.empty());
}

TEST_CASE("an idle period needs no replica") {
  DemandOptions d = two_periods(1);
  d.curve.models = {{"m", {0, 30}}};
  const ModelPlan p = plan_model(inputs(), d.curve.models[0], d, site());
  CHECK(p.periods[0].replicas == 0);
  // S = 0: 3 x $730 = $2,190. One owned server (serving period 2 only) costs
  // $1,000 + (803 + 400 x 0.8 x 365 / 1000 = 116.8) x $0.10 = $1,091.98 against $730 of
  // rent it saves: none is bought.
  CHECK(p.best.servers == 0);
  CHECK(p.best.total_usd == doctest::Approx(2190.0));
}

TEST_CASE("plan_over_time: every model searched needs a curve, and every curve a model searched") {
  SizeResult r;
  Deployment o;
  o.model = "m";
  o.gpu = "g";
  o.meets_slo = true;
  o.gpus_total = 1;
  o.cost_per_hour_usd = 2;
  o.eval.max_rate_per_s = 10;
  o.eval.at_max.busy_fraction = 0.8;
  r.options = {o};
  DemandOptions d = two_periods(1);
  d.buy.site = site();
  d.buy.servers = {one_gpu_server()};
  const OverTimePlan p = plan_over_time(r, d);
  REQUIRE(p.models.size() == 1);
  CHECK(p.models[0].best.servers == 1);
  CHECK(p.total_usd == doctest::Approx(2563.66));
  CHECK(p.all_rented_total_usd == doctest::Approx(2920.0));
  REQUIRE(p.all_owned_total_usd);
  CHECK(*p.all_owned_total_usd == doctest::Approx(3287.62));
  REQUIRE(p.cost_by_month_usd.size() == 1);
  CHECK(p.cash_by_month_usd[0] == doctest::Approx(12000 + 103.66 + 1460));

  d.curve.models[0].model = "other";
  CHECK_THROWS_AS(plan_over_time(r, d), InputError);
  d.curve.models = {{"m", {10, 30}}, {"other", {1, 1}}};
  CHECK_THROWS_AS(plan_over_time(r, d), InputError);
  d.curve = two_periods(1).curve;
  d.horizon_months = 0;
  CHECK_THROWS_AS(plan_over_time(r, d), InputError);
}

namespace {

// The one-month two-period plan above (one server bought, $2,563.66) as a fleet.
OverTimePlan one_month_fleet(const MixInputs& in) {
  OverTimePlan p;
  p.options = two_periods(1);
  p.site = site();
  p.models.push_back(plan_model(in, p.options.curve.models[0], p.options, p.site));
  p.total_usd = p.models[0].best.total_usd;
  return p;
}

}  // namespace

// Each shift worked by hand from the figures above (owned server $1,000 + $103.66 energy;
// renting one replica through one period $730).
//   rent x 1.25, the server kept: 1,103.66 + 2 x 730 x 1.25 = 2,928.66; re-planned: S = 0
//   3,650, S = 2 2,195.64 + 912.50 = 3,108.14, S = 3 3,287.62: still one server.
//   rent x 0.75: 1,103.66 + 1,095 = 2,198.66 kept; renting everything is 2,190: re-planned
//   buys nothing.
//   purchase x 1.25: capex $15,000 -> $1,250 a month: 1,250 + 103.66 + 1,460 = 2,813.66.
//   electricity x 0.5: energy 51.83: 2,511.83.
//   demand x 1.2: 12 and 36/s need 2 and 4 replicas; the server still serves 10/s in both
//   periods (the same 103.66 of energy), renting 1 + 3 replicas: 1,000 + 103.66 + 2,920 =
//   4,023.66.
//   servers 3 months late on a 1-month horizon: they never serve, nothing of them is
//   counted, everything is rented: 2,920; re-planned: ties go to fewer servers, none.
TEST_CASE("sensitivity: the plan's total under each shifted assumption, worked by hand") {
  const OverTimePlan p = one_month_fleet(inputs());
  REQUIRE(p.models[0].best.servers == 1);
  const ScenarioCost same = cost_under(p, Shift{});
  CHECK(same.total_usd == doctest::Approx(2563.66));
  CHECK(same.replanned_total_usd == doctest::Approx(2563.66));
  CHECK(same.replanned_servers == 1);
  Shift s;
  s.rent = 1.25;
  ScenarioCost c = cost_under(p, s);
  CHECK(c.total_usd == doctest::Approx(2928.66));
  CHECK(c.replanned_total_usd == doctest::Approx(2928.66));
  CHECK(c.replanned_servers == 1);
  s.rent = 0.75;
  c = cost_under(p, s);
  CHECK(c.total_usd == doctest::Approx(2198.66));
  CHECK(c.replanned_total_usd == doctest::Approx(2190.0));
  CHECK(c.replanned_servers == 0);
  s = Shift{};
  s.purchase = 1.25;
  CHECK(cost_under(p, s).total_usd == doctest::Approx(2813.66));
  s = Shift{};
  s.electricity = 0.5;
  CHECK(cost_under(p, s).total_usd == doctest::Approx(2511.83));
  s = Shift{};
  s.demand = 1.2;
  CHECK(cost_under(p, s).total_usd == doctest::Approx(4023.66));
  s = Shift{};
  s.extra_lead_months = 3;
  c = cost_under(p, s);
  CHECK(c.total_usd == doctest::Approx(2920.0));
  CHECK(c.replanned_servers == 0);
}

// Demand x 0.8: 8 and 24/s need 1 and 3 replicas; the server serves 8 then 10/s: busy
// (0.8 + 1.0) x 365 h x 0.8 = 525.6 h -> 210.24 kWh, energy (803 + 210.24) x $0.10 =
// 101.324; total 1,000 + 101.324 + 2 x 730 = 2,561.324. Swings: demand 4,023.66 -
// 2,561.32 = 1,462.34; rent 2,928.66 - 2,198.66 = 730; purchase (x 0.75: 750 + 103.66 +
// 1,460 = 2,313.66) 500; lead time 2,920 - 2,563.66 = 356.34; electricity (x 1.5: 2,615.49)
// 103.66. No growth factor (none planned) and no time-model factor (no measured error).
// Demand read as uniform on x 0.8..x 1.2: the quantiles 0.1, 0.5, 0.9 of the factor are
// 0.84, 1.0 and 1.16. x 1.16: 11.6 and 34.8/s need 2 and 4 replicas, as at x 1.2: $4,023.66.
// x 1.0: the plan, $2,563.66. x 0.84: 8.4 and 25.2/s need 1 and 3; the server serves 8.4/s
// then 10/s: busy (0.84 + 1) x 365 x 0.8 = 537.28 h -> 214.912 kWh; energy (803 +
// 214.912) x $0.10 = 101.7912; rent (0 + 2) x 730: 1,000 + 101.7912 + 1,460 = $2,561.7912.
TEST_CASE("sensitivity: the demand range as a uniform distribution, the plan's total at its quantiles") {
  OverTimePlan p = one_month_fleet(inputs());
  add_sensitivity(p);
  REQUIRE(p.demand_quantile_totals.size() == 3);
  CHECK(p.demand_quantile_totals[0].first == doctest::Approx(0.1));
  CHECK(p.demand_quantile_totals[0].second == doctest::Approx(2561.7912));
  CHECK(p.demand_quantile_totals[1].second == doctest::Approx(2563.66));
  CHECK(p.demand_quantile_totals[2].first == doctest::Approx(0.9));
  CHECK(p.demand_quantile_totals[2].second == doctest::Approx(4023.66));
}

TEST_CASE("sensitivity: factors ranked by swing, the range one assumption at a time") {
  OverTimePlan p = one_month_fleet(inputs());
  add_sensitivity(p);
  REQUIRE(p.sensitivity.size() == 5);
  CHECK(p.sensitivity[0].factor == "demand level");
  CHECK(p.sensitivity[0].low.total_usd == doctest::Approx(2561.324));
  CHECK(p.sensitivity[0].swing_usd() == doctest::Approx(1462.336));
  CHECK(p.sensitivity[1].factor == "rent price per GPU-hour");
  CHECK(p.sensitivity[1].swing_usd() == doctest::Approx(730.0));
  CHECK(p.sensitivity[2].factor == "purchase price (GPUs and servers)");
  CHECK(p.sensitivity[2].low.total_usd == doctest::Approx(2313.66));
  CHECK(p.sensitivity[3].factor == "purchase lead time");
  CHECK(p.sensitivity[3].swing_usd() == doctest::Approx(356.34));
  CHECK(p.sensitivity[4].factor == "electricity price");
  CHECK(p.sensitivity[4].high.total_usd == doctest::Approx(2615.49));
  CHECK(p.range_low_usd == doctest::Approx(2198.66));
  CHECK(p.range_high_usd == doctest::Approx(4023.66));
  CHECK(p.confident_totals.empty());
}

// The time model's error: at probability 0.9 a replica holds only 6/s, so the periods
// need 2 and 5. Kept (one server, serving 6/s: the same 584 busy hours): 1,000 + 103.66 +
// (1 + 4) x 730 = 4,753.66. Re-planned: S = 2 serves 10/s then 12/s: busy (10/6 + 2) x
// 0.8 x 365 = 1,070.67 h -> 428.27 kWh; energy (1,606 + 428.27) x $0.10 = 203.43; rent
// (0 + 3) x 730: 2,000 + 203.43 + 2,190 = 4,393.43, below S = 1 (4,753.66), S = 3
// (4,755.41) and renting everything (7 x 730 = 5,110).
TEST_CASE("sensitivity: replicas sized at the max rate that holds the SLO with probability 0.9") {
  OverTimePlan p = one_month_fleet(inputs());
  p.models[0].error_runs = 10;
  p.models[0].confident_rates = {{0.9, 6.0, false}, {0.99, 5.0, true}};
  add_sensitivity(p);
  const auto it = std::find_if(p.sensitivity.begin(), p.sensitivity.end(),
                               [](const Sensitivity& x) { return x.factor == "time model's error"; });
  REQUIRE(it != p.sensitivity.end());
  CHECK(it->low.total_usd == doctest::Approx(2563.66));
  CHECK(it->high.total_usd == doctest::Approx(4753.66));
  REQUIRE(p.confident_totals.size() == 2);
  CHECK(p.confident_totals[0].first == 0.9);
  CHECK(p.confident_totals[0].second.replanned_total_usd == doctest::Approx(4393.43).epsilon(1e-6));
  CHECK(p.confident_totals[0].second.replanned_servers == 2);
  CHECK(p.range_high_usd == doctest::Approx(4753.66));
}

// Twice the planned growth: 100 % a month over two months, rented only (no purchase
// data), is month 2 at x 3: (3 + 9) x 730 = 8,760 against x 2's 5,840; no growth: 2,920
// twice. Everything rented either way.
TEST_CASE("sensitivity: demand growth at zero and at twice the plan's") {
  MixInputs in = inputs();
  in.server.reset();
  OverTimePlan p;
  p.options = two_periods(2);
  p.options.growth_per_month = 1.0;
  p.site = site();
  p.models.push_back(plan_model(in, p.options.curve.models[0], p.options, p.site));
  p.total_usd = p.models[0].best.total_usd;
  REQUIRE(p.total_usd == doctest::Approx(2920.0 + 5840.0));
  add_sensitivity(p);
  const auto it = std::find_if(p.sensitivity.begin(), p.sensitivity.end(),
                               [](const Sensitivity& x) { return x.factor == "demand growth"; });
  REQUIRE(it != p.sensitivity.end());
  CHECK(it->low.setting == "0 % a month");
  CHECK(it->low.total_usd == doctest::Approx(2 * 2920.0));
  CHECK(it->high.setting == "200 % a month");
  CHECK(it->high.total_usd == doctest::Approx(2920.0 + 8760.0));
  // Nothing bought: the purchase factors are left out.
  for (const auto& x : p.sensitivity) CHECK(x.factor.find("purchase") == std::string::npos);
}

namespace {

// The same two periods over a year with one provider's card: on demand $2, a 12-month
// reservation at $1.50 and a 36-month one at $1.00 per GPU-hour, spot at $1.60 reclaimed
// 7.3 times a month (0.01 an hour), 54 minutes to replace, requests in flight at most
// 360 s old.
MixInputs with_card(bool spot) {
  MixInputs in = inputs();
  in.reserved = {{12, 1.50}, {36, 1.00}};
  if (spot) in.spot = SpotTerms{1.60, 7.3, 54};
  in.e2e_p99_s = 360;
  return in;
}

}  // namespace

// By hand, per GPU-hour: spot costs 1.60 + 0.01 x (0.9 h + 0.1 h) x $2 on demand = $1.62
// with its interruptions, below on demand, so it takes the rented peaks.
// The 36-month term does not fit a 12-month horizon: only whole terms are reserved.
// A 12-month reservation of one replica costs 12 x 730 x $1.50 = $13,140.
//   Level 1 (needed in both periods, 730 h a month): renting it costs 8,760 h x $1.62 =
//   $14,191.20 > $13,140: reserved.
//   Level 2 (the 30/s period only, 365 h a month): 4,380 x $1.62 = $7,095.60 < $13,140: spot.
// Without servers: a month costs 730 x $1.50 = $1,095 reserved + 2 x 365 h x $1.62 =
// $1,182.60 spot = $2,277.60; the year $27,331.20 (all on demand: 12 x $2,920 = $35,040).
// With servers (the fixture's $1,000 a month plus energy, from the first test):
//   S = 1: $1,103.66 + $1,182.60 spot (levels 2 and 3 are not worth reserving) = $2,286.26
//   S = 2: $2,195.64 + 365 h x $1.62 = $2,786.94;  S = 3: $3,287.62.
// The reservation beats owning the base by $8.66 a month: nothing is bought.
TEST_CASE("reserved and spot: the cheapest mix of owned, reserved, on demand and spot worked by hand") {
  const DemandOptions d = two_periods(12);
  const MixInputs in = with_card(true);
  REQUIRE(spot_effective_usd_per_gpu_hour(in));
  CHECK(*spot_effective_usd_per_gpu_hour(in) == doctest::Approx(1.62));
  const Reservation r = best_reservation(in, d.curve.models[0], d.curve, d, 0);
  CHECK(r.term_months == 12);
  CHECK(r.replicas == std::vector<int64_t>{1});
  const ModelPlan p = plan_model(in, d.curve.models[0], d, site());
  CHECK(p.best.servers == 0);
  CHECK(p.best.reserved_term_months == 12);
  CHECK(p.best.reserved_replicas == std::vector<int64_t>{1});
  CHECK(p.best.total_usd == doctest::Approx(27331.20));
  CHECK(p.best.reserved_gpu_hours == doctest::Approx(12 * 730.0));
  CHECK(p.best.spot_gpu_hours == doctest::Approx(12 * 2 * 365.0));
  REQUIRE(p.best.months.size() == 12);
  CHECK(p.best.months[0].reserved_usd == doctest::Approx(1095.0));
  CHECK(p.best.months[0].spot_usd == doctest::Approx(1182.60));
  CHECK(p.best.months[0].rented_usd == doctest::Approx(2277.60));
  CHECK(p.all_rented.total_usd == doctest::Approx(27331.20));  // the cheapest rented mix
  CHECK(mix_cost(in, d.curve.models[0], d.curve, d, site(), 1, best_reservation(in, d.curve.models[0], d.curve, d, 1))
            .total_usd == doctest::Approx(12 * 2286.26));
  REQUIRE(p.all_owned);
  CHECK(p.all_owned->total_usd == doctest::Approx(12 * 3287.62));
  CHECK_FALSE(p.break_even_month);
}

// Without spot the peaks rent on demand at $2: level 1 still pays to reserve ($17,520 >
// $13,140), level 2 does not ($8,760). A month: $1,095 + 2 x 365 x $2 = $2,555.
// An 18-month horizon holds one whole 12-month term: months 13-18 rent level 1 on
// demand again ($2,920 a month): 12 x $2,555 + 6 x $2,920 = $48,180.
// A reservation pays for a replica level when the share of hours the level is needed
// exceeds the reserved / on-demand price ratio. Flat demand over 36 months, rented only:
// two 12-hour periods need 1 and 2 replicas (10 and 20/s), on demand $2/GPU-h, one 36-month
// term. Level 1 is needed all the time (1.0), level 2 half of it (0.5).
//   $1.20 (ratio 0.6): level 1 only. A month: 730 x 1.20 + 365 x $2 = $1,606; 36 months
//   $57,816 (both reserved: 36 x 2 x 876 = $63,072; none: 36 x 3 x 365 x 2 = $78,840).
//   $0.90 (ratio 0.45 < 0.5): both levels: 36 x 2 x 730 x 0.90 = $47,304 (level 1 only:
//   36 x (657 + 730) = $49,932).
TEST_CASE("reserved: a level is reserved when its share of hours exceeds the price ratio") {
  DemandOptions d = two_periods(36);
  d.curve.models = {{"m", {10, 20}}};
  MixInputs in = inputs();
  in.server.reset();
  in.reserved = {{36, 1.20}};
  const ModelPlan a = plan_model(in, d.curve.models[0], d, site());
  CHECK(a.best.reserved_term_months == 36);
  CHECK(a.best.reserved_replicas == std::vector<int64_t>{1});
  CHECK(a.best.total_usd == doctest::Approx(57816.0));
  in.reserved = {{36, 0.90}};
  const ModelPlan b = plan_model(in, d.curve.models[0], d, site());
  CHECK(b.best.reserved_replicas == std::vector<int64_t>{2});
  CHECK(b.best.total_usd == doctest::Approx(47304.0));
}

TEST_CASE("reserved: whole terms inside the horizon, the months after them rented") {
  const MixInputs in = with_card(false);
  const DemandOptions year = two_periods(12);
  CHECK(plan_model(in, year.curve.models[0], year, site()).all_rented.total_usd == doctest::Approx(12 * 2555.0));
  const DemandOptions d = two_periods(18);
  const MixCost c = mix_cost(in, d.curve.models[0], d.curve, d, site(), 0, {12, {1}});
  REQUIRE(c.months.size() == 18);
  CHECK(c.months[11].reserved_replicas == 1);
  CHECK(c.months[12].reserved_replicas == 0);
  CHECK(c.total_usd == doctest::Approx(12 * 2555.0 + 6 * 2920.0));
  CHECK(best_reservation(in, d.curve.models[0], d.curve, d, 0).replicas == std::vector<int64_t>{1});
  // A 36-month term fits a 36-month horizon: 36 x 730 x $1 = $26,280 per replica level
  // against 36 x 730 x $2 = $52,560 of renting level 1 and $26,280 of renting level 2 (a
  // tie, not taken), so one replica; its saving ($26,280) beats the 12-month term's
  // three terms of $4,380.
  const DemandOptions three = two_periods(36);
  const Reservation r = best_reservation(in, three.curve.models[0], three.curve, three, 0);
  CHECK(r.term_months == 36);
  CHECK(r.replicas == std::vector<int64_t>{1});
}

// Flat demand, 30/s in both periods: three replicas around the clock. One server peaks at
// 1,000 W host + 500 W GPU = 1.5 kW. Per month, by hand (energy at $0.10/kWh, PUE 1):
//   S = 3: $3,000 + idle 3 x 1,100 W x 730 h = 2,409 kWh + busy 3 x 0.8 x 730 h x 400 W =
//          700.8 kWh -> $310.98: $3,310.98 (the cheapest without a limit; S = 2 costs
//          $2,000 + (1,606 + 467.2) kWh x $0.10 + one replica rented 730 h x $2 = $3,667.32).
//   A site of 3.2 kW holds two servers (3.0 kW), not three (4.5 kW): the plan buys two
//   and rents the third replica, and says why. A 1 kW site holds none.
TEST_CASE("facility: the site's power caps the servers bought, the rest rented, with the reason") {
  DemandOptions d = two_periods(1);
  d.curve.models = {{"m", {30, 30}}};
  SiteOptions s = site();
  ModelPlan p = plan_model(inputs(), d.curve.models[0], d, s);
  CHECK(p.best.servers == 3);
  CHECK(p.best.total_usd == doctest::Approx(3310.98));
  CHECK(p.best.power_peak_w == doctest::Approx(4500.0));
  CHECK(p.best.racks == 1);
  // Mean IT power: (2,409 + 700.8) kWh over 730 h = 4,260 W.
  CHECK(p.best.power_mean_w == doctest::Approx(4260.0));
  CHECK_FALSE(p.site_limit);
  s.site_kw = 3.2;
  p = plan_model(inputs(), d.curve.models[0], d, s);
  CHECK(p.best.servers == 2);
  CHECK(p.best.total_usd == doctest::Approx(3667.32));
  REQUIRE(p.site_limit);
  CHECK(*p.site_limit == "at most 2 servers: 3 would not fit, it peaks at 4.5 kW and the site supplies 3.2 kW (--site-kw)");
  CHECK_FALSE(p.all_owned);
  s.site_kw = 1;
  p = plan_model(inputs(), d.curve.models[0], d, s);
  CHECK(p.best.servers == 0);
  REQUIRE(p.site_limit);
  CHECK(*p.site_limit == "no server: it peaks at 1.5 kW and the site supplies 1 kW (--site-kw)");
}

// The host KV tier lives in the server's DRAM, checked as --buy checks it (buy_figures).
// The one-GPU server above with 64 GiB = 68,719,476,736 B of DRAM: its one GPU's share is
// all of it. A tier of 64 GiB per GPU fits, and the flat three replicas of the facility
// case are bought as there ($3,310.98). 65 GiB (69,793,218,560 B) is more than the share:
// no server, all three replicas rented 730 h x $2 = $4,380, and the reason names the flag.
TEST_CASE("a host KV tier beyond a GPU's share of the server's DRAM: no server is bought, the option is rented") {
  DemandOptions d = two_periods(1);
  d.curve.models = {{"m", {30, 30}}};
  MixInputs in = inputs();
  in.server->host_memory_bytes = 68719476736;
  in.server->file = "g.yaml";
  in.host_kv = {68719476736, "--kv-offloading-size"};
  ModelPlan p = plan_model(in, d.curve.models[0], d, site());
  CHECK_FALSE(p.site_limit);
  CHECK(p.best.servers == 3);
  CHECK(p.best.total_usd == doctest::Approx(3310.98));
  in.host_kv.bytes_per_gpu = 69793218560;
  p = plan_model(in, d.curve.models[0], d, site());
  CHECK(p.best.servers == 0);
  CHECK(p.best.total_usd == doctest::Approx(4380.0));
  CHECK_FALSE(p.all_owned);
  REQUIRE(p.site_limit);
  CHECK(*p.site_limit ==
        "no server: --kv-offloading-size 65.00 GiB per GPU (TP 1 x PP 1: 65.00 GiB per engine) is more than a "
        "GPU's share of the server's DRAM, 64.00 GiB (g.yaml: host_memory_bytes 64.00 GiB for 1 GPUs)");
}
