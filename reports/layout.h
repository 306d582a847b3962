// kvplan reports: a deployment's layout as an inline SVG diagram (the HTML purchase
// report shows the recommended one). A layout is a router in front of pools: one pool of
// aggregated replicas, or a prefill pool and a decode pool (xPyD, disaggregated serving)
// joined by the link the KV cache crosses; pools may use different GPU types. Each
// instance is a box of its GPUs, one row per pipeline stage, a row being its TP group.
// Renders only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "size/disagg_search.h"
#include "size/size.h"

namespace kvplan::reports {

enum class PoolRole { replicas, prefill, decode };

struct LayoutPool {
  PoolRole role = PoolRole::replicas;
  std::string gpu;         //!< GPU type, e.g. "h200"
  int64_t instances = 1;   //!< replicas, or prefill / decode instances
  int64_t tp = 1, pp = 1;  //!< GPUs per instance = tp x dp x pp
  std::string detail;      //!< formats and limits, e.g. "fp8 weights, KV fp8"
  int64_t dp = 1;          //!< data-parallel attention ranks per stage (ServingOptions::dp)
};

struct Layout {
  std::string title;
  std::string router = "router";  //!< what spreads requests, e.g. "round-robin router"
  std::vector<LayoutPool> pools;  //!< {replicas}, or {prefill, decode}
  std::string kv_link;            //!< disaggregated: the KV transfer link, e.g. "NVLink, 450 GB/s"
};

//! One replica pool: the aggregated deployment of a sizing option.
Layout layout_of(const size::Deployment& o);
//! A prefill and a decode pool joined by the KV link: a disaggregated layout, with its
//! units multiplied out (units x xPyD instances).
Layout layout_of(const size::DisaggOption& o);

//! The diagram, as an <svg> element (no scripts, fonts or external references). Shows
//! at most kMaxInstancesDrawn instances per pool and kMaxGpusDrawn GPUs per row, and says
//! how many more there are.
inline constexpr int64_t kMaxInstancesDrawn = 6;
inline constexpr int64_t kMaxGpusDrawn = 8;
std::string layout_svg(const Layout& l);

}  // namespace kvplan::reports
