// kvplan reports: the whole `kvplan size` output, one call per format: the aggregated
// search (reports/size_report.h), then its buy figures when the search priced buying
// (SizeResult::buy, reports/buy_report.h), then the disaggregated layouts when they were
// searched (SizeResult::disagg, reports/size_disagg_report.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "reports/table.h"
#include "size/disagg_search.h"
#include "size/size.h"

namespace kvplan::reports {

//! Text or Markdown: each part's text, at most `max_rows` rows per table (0 = all).
//! CSV: the buy figures' rows when there are some, else the aggregated options' (the CSV
//! holds aggregated options only).
std::string size_output_text(const size::SizeResult& r, TextFormat f, size_t max_rows);
//! kvplan.size/1 with the additive "buy", "over_time" and "disaggregated" keys.
nlohmann::json size_output_json(const size::SizeResult& r);
//! The HTML purchase report with the Buy and disaggregated sections before its assumptions.
std::string size_output_html(const size::SizeResult& r);

//! The progress line a terminal shows while the search runs: "\rsizing [###...] 12/48 candidates".
std::string size_progress(int64_t done, int64_t total);
//! The line that replaces it at the end: "\rsized 48 candidates in 3.2 s", blank-padded.
std::string size_done(const size::SizeResult& r);
//! "sized 12 disaggregated layouts (5 simulated) in 1.0 s".
std::string disagg_done(const size::DisaggSearchResult& d);

}  // namespace kvplan::reports
