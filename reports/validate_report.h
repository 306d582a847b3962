// kvplan reports: `kvplan validate` output (gpu_validate/validate.h's Report): the checks
// as a table of predicted vs measured, for a terminal (with the backend, the verdict and
// what the columns mean), as Markdown, or as CSV with raw numbers. The JSON is
// gv::report_json's (kvplan.validate/1, docs/validate.md).
#pragma once

#include <string>

#include "gpu_validate/validate.h"
#include "reports/table.h"

namespace kvplan::reports {

//! A measured or predicted figure: "-" when not finite, "0", four significant digits
//! below 1e-3 or from 1e6 up (0.0001234, 3.352e+12), else four decimals (812.5000).
std::string validate_number(double v);
//! One row per check: predicted, measured, unit, error in percent, tolerance, verdict.
Table validate_table(const gv::Report& r);
//! The same checks for machines (CSV): raw numbers; the error as a fraction.
Table validate_table_raw(const gv::Report& r);
//! table: "backend B, device D", the table, and "all N checks pass (T s). ..." or
//! "F of N checks FAIL"; md: the table; csv: validate_table_raw.
std::string validate_text(const gv::Report& r, TextFormat f);

}  // namespace kvplan::reports
