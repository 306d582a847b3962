// kvplan reports: the catalog listings, `kvplan models` and `kvplan gpus`, as aligned
// text, Markdown (sizes with units, a units line after the table) or CSV (plain numbers,
// units in the column names).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/hardware.h"
#include "planner/types.h"
#include "reports/table.h"

namespace kvplan::reports {

//! One catalog model with the planner's figures the listing shows (computed by the caller:
//! reports/ decides nothing).
struct CatalogModel {
  ModelConfig model;
  int64_t params = 0;                    //!< count_params(model).total()
  int64_t kv_bytes_per_token_16bit = 0;  //!< kv_bytes_per_token with a 16-bit cache
};

//! `kvplan models`: name, type, shape, attention kind, parameters, KV bytes per token.
std::string models_text(const std::vector<CatalogModel>& models, TextFormat f);
//! `kvplan gpus`: memory (as CUDA reports it, in GiB and GB), bandwidth, dense FLOP/s,
//! interconnect and price.
std::string gpus_text(const std::vector<GpuSpec>& gpus, TextFormat f);

//! "8.03 B": a parameter count in billions (1e9), two decimals.
std::string billions(int64_t n);

}  // namespace kvplan::reports
