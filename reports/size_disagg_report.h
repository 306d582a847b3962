// kvplan reports: the disaggregated part of `kvplan size --disagg` (size/disagg_search.h):
// a section appended to the size text, Markdown and HTML reports, and the additive
// "disaggregated" key of the kvplan.size/1 JSON. Renders; decides nothing.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

#include "reports/table.h"
#include "size/disagg_search.h"
#include "size/size.h"

namespace kvplan::reports {

//! {"ratios": [...], "candidates": N, "verdicts": [...], "options": [...]}, ranked.
nlohmann::json disagg_size_json(const size::DisaggSearchResult& d);
//! The verdict per model and the ranked layouts (at most `max_rows`, 0 = all).
std::string disagg_size_text(const size::DisaggSearchResult& d, TextFormat f, size_t max_rows = 20);
//! The same as an HTML <section> for reports::with_section.
std::string disagg_size_html(const size::DisaggSearchResult& d);

}  // namespace kvplan::reports
