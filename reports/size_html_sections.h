// kvplan reports: the sections of the HTML purchase report (size_html), one function
// each, rendered in the order size_html lists them. A new section is a new function
// in its own file, declared here and added to that list. Internal to reports/.
#pragma once

#include <string>

#include "size/size.h"

namespace kvplan::reports::size_detail {

//! <!DOCTYPE>, <head> with the inline CSS, the title and the one-paragraph summary.
std::string html_head(const size::SizeResult& r);
//! One box per model: size::SizeResult::recommendations, and the models with none.
std::string html_recommendations(const size::SizeResult& r);
//! The recommended deployments as diagrams (reports/layout.h).
std::string html_layouts(const size::SizeResult& r);
//! The options meeting the SLO, one table per model.
std::string html_option_tables(const size::SizeResult& r);
//! Cost/latency, capacity, memory and load charts (size_html_charts.cpp).
std::string html_charts(const size::SizeResult& r);
std::string html_quality(const size::SizeResult& r);
std::string html_pruned(const size::SizeResult& r);
//! Assumptions, validation status and the closing tags.
std::string html_assumptions(const size::SizeResult& r);

//! A table cell, escaped; `num` right-aligns it.
std::string td(const std::string& s, bool num = false);
//! "#3 llama-3-8b l40s TP1 fp8/int4": the rank ties a chart entry to the options table.
std::string short_label(const size::Deployment& o, size_t rank);

}  // namespace kvplan::reports::size_detail
