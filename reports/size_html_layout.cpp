// The chosen layouts of the HTML purchase report (size_html_sections.h: html_layouts).
#include <fmt/format.h>

#include "reports/html.h"
#include "reports/layout.h"
#include "reports/size_html_sections.h"

namespace kvplan::reports::size_detail {

std::string html_layouts(const size::SizeResult& r) {
  if (r.recommendations.empty()) return "";
  std::string h = "<h2>Chosen layout</h2>\n<div class=\"charts\">\n";
  for (const auto& rec : r.recommendations)
    h += "<div class=\"chart\">" + layout_svg(layout_of(r.options[rec.option])) + "</div>\n";
  h += "</div>\n<p class=\"small\">Each box is one replica; each square one GPU; a dashed frame one tensor-parallel "
       "group (one row per pipeline stage). The router spreads requests over the replicas.</p>\n";
  return h;
}

}  // namespace kvplan::reports::size_detail
