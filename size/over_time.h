// kvplan size --demand: a fleet planned over months from a demand curve that repeats
// (a day, a week) and grows. Pure arithmetic from each option's max rate per replica,
// already found by the search (no simulation per period): the replicas each period needs,
// then the cheapest split between servers bought (size/tco.h's figures: capex, power x
// PUE, support, racks) that serve the base and GPUs rented on demand for the rest.
//
// Method (docs/buy.md "Demand over time"): a month is 730 h (8,760 / 12) holding
// 730 / cycle whole or partial cycles; month m's rates are the curve's x (1 + growth)^m.
// Period p of month m needs ceil(rate / max rate) replicas (0 at rate 0). With S servers
// bought (holding R replicas) and delivered after the lead time, each period rents
// max(0, need - R) replicas' GPUs at the catalog's price per GPU-hour; before delivery it
// rents them all. An owned month costs capex / (amortization years x 12) (straight line:
// the value left at the horizon's end is not a cost of the horizon), support and space,
// and its energy: hosts at full power, bought GPUs at idle power plus (board - idle) x the
// busy fraction of the replicas serving, x PUE x the electricity price. S runs from 0 to
// the servers the horizon's peak needs (or the most the site holds); the cheapest total
// wins (ties: fewer servers). With a --prices card, each S also reserves the replica
// levels a whole term pays for (best_reservation) and rents the rest on spot when spot,
// with its interruptions, costs less than on demand (docs/buy.md "Reserved and spot").
// Staged purchases (docs/buy.md "Staged purchases"): the owned count may also step up
// over the horizon, each tranche ordered L months before it serves; the cheapest
// non-decreasing schedule is found exactly by dynamic programming over months and owned
// counts (bounded by the peak's servers) and kept when it costs less than one purchase.
// With reserved terms, each term length also runs one programme over months, owned counts
// and the term's reserved replicas, so that purchases and reservations are chosen together.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "planner/demand.h"
#include "planner/hardware.h"
#include "size/tco.h"

namespace kvplan::size {

struct SizeResult;  // size/size.h, which includes this header

//! A reservation: GPUs committed for a whole term at a lower price per GPU-hour, paid
//! every hour of the term whether used or not.
struct ReservedTerm {
  int64_t term_months = 0;
  double usd_per_gpu_hour = 0;
};

//! Spot (preemptible) capacity and what its interruptions cost.
struct SpotTerms {
  double usd_per_gpu_hour = 0;
  //! Share of spot instances the provider reclaims in a month (the AWS Spot Instance
  //! Advisor's "frequency of interruption"); one replica is taken as one instance.
  double interruptions_per_month = 0;
  //! Minutes until a replacement serves (launch, weights loaded): covered on demand.
  double replace_minutes = 0;
};

//! One provider's rent prices for a GPU (`size --prices FILE`): on demand, reserved terms
//! and spot, from one rate card so that they compare.
struct RentPrices {
  std::string gpu, provider, file;
  double on_demand_usd_per_gpu_hour = 0;
  std::vector<ReservedTerm> reserved;
  std::optional<SpotTerms> spot;
  //! The KV tiers' hardware as bought (size --buy): DRAM per GiB, NVMe drives per TB.
  std::optional<double> dram_usd_per_gib, nvme_usd_per_tb;
};

//! What `size --demand` plans over (SizeOptions::demand).
struct DemandOptions {
  DemandCurve curve;
  int64_t horizon_months = 12;
  double growth_per_month = 0;       //!< compounded: 0.05 = +5 % a month
  int64_t purchase_lead_months = 0;  //!< months from order to servers serving (rented meanwhile)
  //! The site and the purchase data of the servers bought (configs/servers); a GPU
  //! without purchase data is rented only.
  BuyOptions buy;
  //! Rent prices per GPU (--prices); a GPU without one rents on demand at the GPU
  //! catalog's price.
  std::vector<RentPrices> prices;
};
//! Throws InputError naming the command-line option of the first bad value.
void validate(const DemandOptions& d);

inline constexpr double kHoursPerMonth = 730;  //!< 8,760 h / 12

//! One period of the curve in the first month.
struct PeriodNeed {
  double hour = 0;
  double requests_per_s = 0;
  int64_t replicas = 0;  //!< ceil(rate / max rate per replica); 0 at rate 0
};

//! One month of a plan; accrual (capex spread over the amortization from delivery) and
//! cash (capex paid in the month the servers are ordered).
struct MonthCost {
  int64_t month = 0;                 //!< 1-based
  double growth_factor = 1;          //!< (1 + growth)^(month - 1)
  int64_t replicas_peak = 0;
  bool owned_serving = false;        //!< bought servers are delivered and serving
  int64_t servers_owned = 0;         //!< servers serving this month
  double capex_paid_usd = 0;         //!< capex of the servers ordered this month (cash)
  double owned_usd = 0;              //!< amortized capex + support + space + energy
  double energy_usd = 0;             //!< of which energy
  double rented_usd = 0;             //!< reserved + on demand + spot (with its interruptions)
  double rented_gpu_hours = 0;       //!< on demand + spot (reserved GPUs are counted apart)
  int64_t reserved_replicas = 0;     //!< replicas under a reservation this month
  double reserved_usd = 0;           //!< of rented_usd
  double spot_gpu_hours = 0;         //!< of rented_gpu_hours
  double spot_usd = 0;               //!< of rented_usd, interruptions included
  double cost_usd = 0;               //!< owned + rented
  double cash_usd = 0;               //!< capex paid this month + running costs + rent
  //! Everything rented, this month: on demand in mix_cost; plan_model sets it to the
  //! cheapest rented mix's (reserved and spot included) in the plans it returns.
  double all_rented_usd = 0;
};

//! Servers bought together: ordered at the start of month `order_month` (1-based),
//! serving L (the purchase lead time) months later, paid when ordered.
struct Tranche {
  int64_t order_month = 1;
  int64_t servers = 0;    //!< servers added
  double capex_usd = 0;   //!< their capex (mix_cost fills it)
};

//! The cost over the horizon with a given number of servers bought.
struct MixCost {
  //! The servers, replicas and GPUs bought over the horizon (the last tranche's count) and
  //! the capex of every tranche delivered within it.
  int64_t servers = 0, replicas = 0, gpus_bought = 0;
  double capex_usd = 0;
  //! The purchases, in order: one for a single purchase, none when nothing is bought.
  std::vector<Tranche> tranches;
  double total_usd = 0;              //!< accrual, summed over the horizon
  double cash_usd = 0;               //!< cash, summed over the horizon
  double rented_gpu_hours = 0;
  //! Reservations: the term (0: none) and the replicas reserved in each whole term from
  //! month 1 (terms end inside the horizon; months after the last whole term rent).
  int64_t reserved_term_months = 0;
  std::vector<int64_t> reserved_replicas;
  //! The servers bought at the site: racks, their floor, IT power with every GPU busy,
  //! and the mean IT power over the months they serve.
  int64_t racks = 0;
  double floor_m2 = 0, power_peak_w = 0, power_mean_w = 0;
  double reserved_gpu_hours = 0, spot_gpu_hours = 0;
  std::vector<MonthCost> months;
};

//! Everything a mix's arithmetic needs about one option.
struct MixInputs {
  double max_rate_per_replica_per_s = 0;
  ServingOptions shape;              //!< tp, dp, pp
  double busy_fraction_at_max = 1;   //!< one replica's busy fraction at its max rate
  double price_per_gpu_hour_usd = 0;  //!< on demand
  std::optional<ServerSpec> server;  //!< empty: renting only
  //! The host KV tier in the servers' DRAM: beyond a GPU's share no server is bought
  //! (buy_figures), as with --buy.
  HostKvTierUse host_kv;
  std::vector<ReservedTerm> reserved;
  std::optional<SpotTerms> spot;
  //! Work an interruption loses at most: every request in flight restarts (prefill
  //! again), and none started more than the p99 end-to-end latency ago.
  double e2e_p99_s = 0;
};

//! What one spot GPU-hour costs with its interruptions: the spot price, plus on-demand
//! GPU-hours covering the replica while it is replaced and the work lost in flight,
//! interruptions_per_month / 730 times an hour. Empty without spot prices.
std::optional<double> spot_effective_usd_per_gpu_hour(const MixInputs& in);

//! The max rate per replica of a plan's option at which the SLO holds with probability q
//! under the time model's measured error (planner/error_bars.h; size.cpp fills it).
struct RateAtProbability {
  double q = 0;
  double max_rate_per_s = 0;  //!< 0: no rate meets the SLO at that probability
  bool worst_run = false;     //!< q is beyond the runs: the worst run's error decides
};

//! One model's plan: the option it runs on and the split between owned and rented.
struct ModelPlan {
  std::string model;
  int64_t candidate = -1;            //!< Candidate::index of the option
  std::string gpu;
  double max_rate_per_replica_per_s = 0;
  int64_t gpus_per_replica = 0;
  double price_per_gpu_hour_usd = 0;  //!< on demand
  //! Where the rent prices came from: a --prices file (its provider), else empty: the GPU
  //! catalog's on-demand price alone.
  std::string prices_file, prices_provider;
  std::optional<double> spot_effective_usd_per_gpu_hour;  //!< spot_effective_usd_per_gpu_hour()
  std::vector<PeriodNeed> periods;   //!< the first month's
  int64_t replicas_peak = 0;         //!< over the horizon
  double replicas_mean = 0;          //!< time-weighted over the horizon
  double gpu_hours_needed = 0;       //!< replicas needed x GPUs per replica x hours, over the horizon
  std::optional<std::string> server_form;  //!< purchase data used; empty: renting only
  int64_t servers_per_rack = 0;
  //! The site the plan was made for: its cooling, and what the models planned before this
  //! one left of its power and racks.
  SiteOptions site;
  //! Why fewer servers (or none) could be bought than the split would try: the cooling,
  //! a rack's power, or the site's power or racks.
  std::optional<std::string> site_limit;
  MixCost best;                      //!< the cheapest mix
  MixCost all_rented;                //!< no server bought (reservations and spot where they pay)
  std::optional<MixCost> all_owned;  //!< servers for the horizon's peak (rented only before delivery)
  //! First month whose cumulative cash is at most all-rented's; empty when nothing is
  //! bought or it never is within the horizon.
  std::optional<int64_t> break_even_month;
  MixInputs inputs;                  //!< what the mixes were costed from (for the sensitivity)
  DemandCurve::Series demand;
  //! The time model's measured error at the option (size.cpp fills these): the held-out
  //! runs it comes from (0: none for this GPU's profile), whether they are this GPU's, the
  //! probability that a replica at its max rate meets the SLO, and the max rates at 0.9
  //! and 0.99.
  int64_t error_runs = 0;
  bool error_on_gpu = false;
  double slo_probability_at_max = 0;
  std::vector<RateAtProbability> confident_rates;
};

//! One assumption of the plan over time, moved one way (1 and empty: as planned).
struct Shift {
  double rent = 1;         //!< x the price per GPU-hour
  double purchase = 1;     //!< x the GPU and server prices
  double electricity = 1;  //!< x the price per kWh
  double demand = 1;       //!< x every period's rate
  std::optional<double> growth_per_month;  //!< instead of the planned growth
  int64_t extra_lead_months = 0;           //!< servers delivered this much later
  std::optional<double> probability;       //!< size replicas at the max rate for this q
};

//! The fleet's cost under one shifted assumption.
struct ScenarioCost {
  std::string setting;             //!< the assumption's value, in words
  double total_usd = 0;            //!< the plan as chosen (the servers bought kept)
  double replanned_total_usd = 0;  //!< the cheapest split had the assumption been known
  int64_t replanned_servers = 0;   //!< servers that split buys, summed over the models
};

//! One assumption's range and what it does to the total (one at a time, the others as
//! planned). `low` is the side that costs less.
struct Sensitivity {
  std::string factor;  //!< "rent price per GPU-hour", ...
  std::string basis;   //!< where the range comes from
  ScenarioCost low, high;
  double swing_usd() const { return high.total_usd - low.total_usd; }
};

//! The whole fleet over the horizon, one plan per model.
struct OverTimePlan {
  DemandOptions options;
  SiteOptions site;
  std::vector<ModelPlan> models;
  //! Models searched with no option meeting the SLO at a rent price: nothing to plan.
  std::vector<std::string> models_without_plan;
  double total_usd = 0, all_rented_total_usd = 0;
  std::optional<double> all_owned_total_usd;  //!< empty when a model has no purchase data
  //! The servers bought, at the site: racks (a model's servers rack apart from the
  //! others'), floor, IT power at peak and mean.
  int64_t racks = 0;
  double floor_m2 = 0, power_peak_kw = 0, power_mean_kw = 0;
  std::vector<double> cost_by_month_usd, cash_by_month_usd;
  //! add_sensitivity's: largest swing first; the total's range one assumption at a time.
  std::vector<Sensitivity> sensitivity;
  double range_low_usd = 0, range_high_usd = 0;
  //! The plan's total with replicas sized to meet the SLO at probability 0.9 and 0.99
  //! (empty: a model's GPU has no measured error).
  std::vector<std::pair<double, ScenarioCost>> confident_totals;
  //! The plan as bought's total at probability q (0.1, 0.5, 0.9) with every period's demand
  //! x a factor uniform on 0.8..1.2 (the demand level's range read as a distribution).
  std::vector<std::pair<double, double>> demand_quantile_totals;
};

//! Replicas reserved: the term and the count in each whole term (empty: none).
struct Reservation {
  int64_t term_months = 0;
  std::vector<int64_t> replicas;
};

//! The costs over the horizon of owning `servers` servers (0: all rented) and reserving
//! `r`; the rest is rented on demand, or on spot where that costs less with its
//! interruptions. Throws std::invalid_argument when servers > 0 without purchase data.
MixCost mix_cost(const MixInputs& in, const DemandCurve::Series& demand, const DemandCurve& curve,
                 const DemandOptions& d, const SiteOptions& site, int64_t servers, const Reservation& r = {});
//! The same with servers bought in tranches (order months rising, each adding servers);
//! a tranche delivered after the horizon neither serves nor costs. Each month's owned cost
//! is that of the servers serving: capex / (amortization years x 12) from each tranche's
//! delivery, support, space and energy of the count.
MixCost mix_cost(const MixInputs& in, const DemandCurve::Series& demand, const DemandCurve& curve,
                 const DemandOptions& d, const SiteOptions& site, const std::vector<Tranche>& tranches,
                 const Reservation& r = {});

//! The cheapest schedule of purchases with the rest rented at the peak price (on demand or
//! spot, no reservation): owned counts in steps of `step` servers up to `max_servers`,
//! non-decreasing, zero before the lead time; exact (dynamic programming over months and
//! counts; ties to fewer servers, then to later purchases).
std::vector<Tranche> best_schedule(const MixInputs& in, const DemandCurve::Series& demand, const DemandOptions& d,
                                   const SiteOptions& site, int64_t step, int64_t max_servers);

//! The cheapest reservation with `servers` owned: each whole term of each offered length
//! reserves the replica levels (above the owned ones) whose rent for the hours they are
//! needed costs more than reserving them for the whole term; the term length whose mix
//! costs least wins (none when no reservation pays).
Reservation best_reservation(const MixInputs& in, const DemandCurve::Series& demand, const DemandCurve& curve,
                             const DemandOptions& d, int64_t servers);
//! The same with the servers bought in tranches.
Reservation best_reservation(const MixInputs& in, const DemandCurve::Series& demand, const DemandCurve& curve,
                             const DemandOptions& d, const std::vector<Tranche>& tranches);

//! One option's plan over the horizon: the replicas each period needs, everything rented,
//! everything owned (servers for the horizon's peak) and the cheapest number of servers
//! in between, bought at once or in tranches (best_schedule, with its best reservation),
//! or in tranches chosen together with a reservation of each term length (exact per term
//! length up to 3 x 10^7 states: docs/buy.md "Purchases and reservations chosen
//! together"), whichever costs less. model, candidate and gpu are left empty for the caller.
ModelPlan plan_model(const MixInputs& in, const DemandCurve::Series& demand, const DemandOptions& d,
                     const SiteOptions& site);

//! For each model searched, in the order searched, the option meeting the SLO (with a
//! rent price) whose cheapest mix costs least over the horizon, among the options the
//! search evaluated (the bounded search's skipped options have no max rate), within what
//! the models before it left of the site's power and racks (--site-kw, --site-racks: a
//! greedy share, not a joint optimum). Throws InputError when a model searched has no
//! curve, or the curve names a model not searched.
OverTimePlan plan_over_time(const SizeResult& r, const DemandOptions& d);

//! The fleet's total under a shifted assumption: each model's purchases kept (their
//! tranches' order months, delivered the shifted lead time later), and
//! the cheapest split re-planned under it. A `probability` a model has no rate for keeps
//! its planned max rate.
ScenarioCost cost_under(const OverTimePlan& p, const Shift& s);

//! Fills p.sensitivity, its range and p.confident_totals (docs/buy.md "Sensitivity"):
//! rent and purchase prices x 0.75 and x 1.25, electricity x 0.5 and x 1.5, demand x 0.8
//! and x 1.2, growth 0 and twice the planned (when it is not 0), servers 3 months late
//! (when any are bought), and the time model's error (replicas at the max rate for 0.9);
//! and p.demand_quantile_totals.
void add_sensitivity(OverTimePlan& p);

}  // namespace kvplan::size
