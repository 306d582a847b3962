// kvplan reports: `kvplan size` output. JSON (schema kvplan.size/1, ARCHITECTURE.md),
// a ranked table (text, Markdown, CSV), a Markdown summary and the HTML purchase report
// (reports/html.h). Renders size::SizeResult; computes nothing but unit conversions.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

#include "reports/table.h"
#include "size/size.h"

namespace kvplan::reports {

//! {"schema": "kvplan.size/1", "workload": {...}, "options": [OPTION, ...]}, best first;
//! pruned candidates follow with their `pruned` reason. Deterministic: no wall times.
nlohmann::json size_json(const size::SizeResult& r);
//! One row per option, ranked; at most `max_rows` rows (0 = all), pruned ones included
//! only when `include_pruned`.
Table size_table(const size::SizeResult& r, size_t max_rows = 0, bool include_pruned = false);
//! Every option, pruned ones included, as raw numbers with units in the column names
//! (cost_per_hour_usd, ttft_p99_s, ...), for CSV.
Table size_table_raw(const size::SizeResult& r);
//! "llama-3-8b on 2 x h100-sxm (TP 2), bf16 weights, KV fp8": one option in words.
std::string option_label(const size::Deployment& o);
//! The recommendation, the ranked table, pruning counts and the assumptions, for a
//! terminal (TextFormat::table) or as a Markdown document (TextFormat::md).
std::string size_text(const size::SizeResult& r, TextFormat f, size_t max_rows = 20);
//! The self-contained HTML purchase report (inline CSS and SVG, no network).
std::string size_html(const size::SizeResult& r);

}  // namespace kvplan::reports
