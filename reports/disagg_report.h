// kvplan reports: `kvplan simulate --disagg` output. The JSON is kvplan.sim/1 (the
// user-facing figures under the same keys as a single-engine run) plus a `disagg` object
// with the pools, the link and the transfer times; the summary is simulate's with rows
// for them. Computes nothing.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "cluster/disagg.h"
#include "reports/sim_report.h"
#include "reports/table.h"

namespace kvplan::reports {

struct DisaggReport {
  //! model, workload, SimOptions; gpu names both pools; options and the KV figures are
  //! the decode pool's; result is DisaggResult::overall.
  SimReport base;
  cluster::DisaggLayout layout;
  cluster::DisaggResult result;
  int64_t prefill_kv_block_bytes_per_gpu = 0;
};

nlohmann::json disagg_json(const DisaggReport& r);
Table disagg_csv_record(const DisaggReport& r);
std::string disagg_text(const DisaggReport& r, TextFormat f);

}  // namespace kvplan::reports
