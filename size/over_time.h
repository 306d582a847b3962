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
// the servers the horizon's peak needs; the cheapest total wins (ties: fewer servers).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/demand.h"
#include "planner/hardware.h"
#include "size/tco.h"

namespace kvplan::size {

struct SizeResult;  // size/size.h, which includes this header

//! What `size --demand` plans over (SizeOptions::demand).
struct DemandOptions {
  DemandCurve curve;
  int64_t horizon_months = 12;
  double growth_per_month = 0;       //!< compounded: 0.05 = +5 % a month
  int64_t purchase_lead_months = 0;  //!< months from order to servers serving (rented meanwhile)
  //! The site and the purchase data of the servers bought (configs/servers); a GPU
  //! without purchase data is rented only.
  BuyOptions buy;
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

//! One month of a plan; accrual (capex spread over the amortization) and cash (capex paid
//! on delivery).
struct MonthCost {
  int64_t month = 0;                 //!< 1-based
  double growth_factor = 1;          //!< (1 + growth)^(month - 1)
  int64_t replicas_peak = 0;
  bool owned_serving = false;        //!< the bought servers are delivered
  double owned_usd = 0;              //!< amortized capex + support + space + energy
  double energy_usd = 0;             //!< of which energy
  double rented_usd = 0;
  double rented_gpu_hours = 0;
  double cost_usd = 0;               //!< owned + rented
  double cash_usd = 0;               //!< capex paid this month + running costs + rent
  double all_rented_usd = 0;         //!< everything rented, this month
};

//! The cost over the horizon with a given number of servers bought.
struct MixCost {
  int64_t servers = 0, replicas = 0, gpus_bought = 0;
  double capex_usd = 0;
  double total_usd = 0;              //!< accrual, summed over the horizon
  double cash_usd = 0;               //!< cash, summed over the horizon
  double rented_gpu_hours = 0;
  std::vector<MonthCost> months;
};

//! One model's plan: the option it runs on and the split between owned and rented.
struct ModelPlan {
  std::string model;
  int64_t candidate = -1;            //!< Candidate::index of the option
  std::string gpu;
  double max_rate_per_replica_per_s = 0;
  int64_t gpus_per_replica = 0;
  double price_per_gpu_hour_usd = 0;
  std::vector<PeriodNeed> periods;   //!< the first month's
  int64_t replicas_peak = 0;         //!< over the horizon
  double replicas_mean = 0;          //!< time-weighted over the horizon
  double gpu_hours_needed = 0;       //!< replicas needed x GPUs per replica x hours, over the horizon
  std::optional<std::string> server_form;  //!< purchase data used; empty: renting only
  int64_t servers_per_rack = 0;
  MixCost best;                      //!< the cheapest mix
  MixCost all_rented;                //!< no server bought
  std::optional<MixCost> all_owned;  //!< servers for the horizon's peak (rented only before delivery)
  //! First month whose cumulative cash is at most all-rented's; empty when nothing is
  //! bought or it never is within the horizon.
  std::optional<int64_t> break_even_month;
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
  std::vector<double> cost_by_month_usd, cash_by_month_usd;
};

//! Everything a mix's arithmetic needs about one option.
struct MixInputs {
  double max_rate_per_replica_per_s = 0;
  ServingOptions shape;              //!< tp, dp, pp
  double busy_fraction_at_max = 1;   //!< one replica's busy fraction at its max rate
  double price_per_gpu_hour_usd = 0;
  std::optional<ServerSpec> server;  //!< empty: renting only
};
//! The costs over the horizon of owning `servers` servers (0: all rented). Throws
//! std::invalid_argument when servers > 0 without purchase data.
MixCost mix_cost(const MixInputs& in, const DemandCurve::Series& demand, const DemandCurve& curve,
                 const DemandOptions& d, const SiteOptions& site, int64_t servers);

//! One option's plan over the horizon: the replicas each period needs, everything rented,
//! everything owned (servers for the horizon's peak) and the cheapest number of servers
//! in between. model, candidate and gpu are left empty for the caller.
ModelPlan plan_model(const MixInputs& in, const DemandCurve::Series& demand, const DemandOptions& d,
                     const SiteOptions& site);

//! For each model searched, the option meeting the SLO (with a rent price) whose
//! cheapest mix costs least over the horizon, among the options the search evaluated
//! (the bounded search's skipped options have no max rate). Throws InputError when a model searched has
//! no curve, or the curve names a model not searched.
OverTimePlan plan_over_time(const SizeResult& r, const DemandOptions& d);

}  // namespace kvplan::size
