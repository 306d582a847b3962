// kvplan reports: the "Buy" view of `kvplan size --buy` (size/tco.h): a bill of
// materials, power and racks, capital and running cost, TCO, cost per million tokens
// and break-even against renting, as text/Markdown, CSV, JSON and an HTML section with a
// chart of cumulative cost over time. Renders size::BuyResult; computes nothing but
// unit conversions.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "reports/table.h"
#include "size/size.h"
#include "size/tco.h"

namespace kvplan::reports {

//! {"objective", "site": {...}, "options": [{rank, model, gpu, ..., capex_usd, ...}],
//! "gpus_without_data": [...]}: every figure with its unit in the key name.
nlohmann::json buy_json(const size::SizeResult& r, const size::BuyResult& b);
//! One row per option bought (infeasible ones included, with the reason), raw numbers,
//! units in the column names, for CSV.
Table buy_table_raw(const size::SizeResult& r, const size::BuyResult& b);
//! The bill of materials and TCO table (at most `max_rows` per model, 0 = all) with every
//! assumption, for a terminal or as Markdown.
std::string buy_text(const size::SizeResult& r, const size::BuyResult& b, TextFormat f, size_t max_rows = 20);
//! The HTML "Buy" section (<h2> onwards): bill of materials, power and rack summary, and
//! an inline-SVG chart of cumulative cost over time, buy against rent, per option.
std::string buy_html(const size::SizeResult& r, const size::BuyResult& b);
//! `page` with `section` inserted before its "Assumptions" heading, or before </body>.
std::string with_section(std::string page, const std::string& section);
//! The assumptions behind the figures, one sentence each.
std::vector<std::string> buy_assumptions(const size::BuyResult& b);

}  // namespace kvplan::reports
