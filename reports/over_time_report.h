// kvplan reports: the "Over time" view of `kvplan size --demand` (size/over_time.h): each
// model's replicas period by period, the servers bought for the base and the GPU-hours
// rented for the peaks, cost and cash by month, against everything owned and everything
// rented. Renders size::OverTimePlan; computes nothing but unit conversions and sums.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "reports/table.h"
#include "size/over_time.h"
#include "size/size.h"

namespace kvplan::reports {

//! The `over_time` object of kvplan.size/1 (docs/formats.md): units in the key names.
nlohmann::json over_time_json(const size::SizeResult& r, const size::OverTimePlan& p);
//! Text or Markdown: a summary per model, the months, the assumptions.
std::string over_time_text(const size::SizeResult& r, const size::OverTimePlan& p, TextFormat f);
//! The HTML "Over time" section (<h2> onwards) with a chart of cumulative cash by month.
std::string over_time_html(const size::SizeResult& r, const size::OverTimePlan& p);
//! The page a CFO reads first (placed before the recommendations): the total over the
//! horizon with its range, what is bought and rented, cash by month, what moves the total,
//! what faster growth and the time model's error cost, and where every figure comes from.
std::string over_time_summary_html(const size::SizeResult& r, const size::OverTimePlan& p);

}  // namespace kvplan::reports
