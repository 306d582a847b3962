// kvplan reports: `kvplan plan` output: JSON (schema kvplan.plan/1, ARCHITECTURE.md),
// a comparison table (text, Markdown, CSV) and, for one row, a detailed breakdown.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "planner/planner.h"
#include "planner/speculative.h"
#include "reports/table.h"

namespace kvplan::reports {

struct PlanRow {
  std::string model, gpu;
  ServingOptions options;
  Plan plan;
  std::string engine_log;  // what the engine would print about its KV cache, if known
  std::string what_if;     // non-empty: no engine runs this row (planner/support.h), why
  ServingOptions requested;  // as given, before engine defaults (rows with equal ones are duplicates)
  int64_t kv_heads = 0;      // KV heads planned (the model's, or --kv-heads)
  std::string engine_name;   // "vLLM 0.10": as its project names it, with the release chosen
  std::optional<SpecPlan> spec;  // speculative decoding, when asked for
  std::optional<LoraPlan> lora;  // LoRA adapters, when --enable-lora
};

nlohmann::json plan_json(const std::vector<PlanRow>& rows);
//! One line per row; "requests ×" compares each row's capacity with the first row's.
//! `mark_no_fit` (for readers, not CSV) appends "(no fit)" to the decode step of a batch
//! that does not fit.
Table plan_table(const std::vector<PlanRow>& rows, bool mark_no_fit = false);
//! What a reader must know about rows the table cannot say: what-ifs no engine runs, and
//! batches that do not fit (their decode step is computed anyway), one line each.
std::vector<std::string> plan_warnings(const std::vector<PlanRow>& rows);
//! The same rows for machines (CSV): raw numbers, units in the column names.
Table plan_table_raw(const std::vector<PlanRow>& rows);
//! The memory, FLOP and latency breakdown of one row, with units, for a reader.
std::string plan_detail(const PlanRow& row);
//! `kvplan plan` for a terminal: the table (with plan_detail when there is one row), the
//! units line, what each engine would log, plan_warnings and each memory note once, naming the rows it concerns.
std::string plan_text(const std::vector<PlanRow>& rows);

}  // namespace kvplan::reports
