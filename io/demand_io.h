// kvplan io: demand curves (`kvplan size --demand FILE.csv`). The CSV has a header line
// `hour,model,requests_per_s` and one row per period and model: `hour` the period's start
// in hours from the cycle's start (0, 1, 2, ... for hourly rows; any equal step, e.g. 0.25,
// for finer ones), `model` the model's name, `requests_per_s` its mean arrival rate over
// the period. Rows may come in any order; every model needs a row for every hour.
#pragma once

#include <filesystem>
#include <string>

#include "planner/demand.h"

namespace kvplan::io {

//! Parses the CSV text; every bad row is an InputError naming the file, the column and
//! the line.
DemandCurve parse_demand(const std::string& text, const std::string& file);
//! Reads and parses a demand file.
DemandCurve load_demand(const std::filesystem::path& path);

}  // namespace kvplan::io
