// kvplan reports: the speculative decoding section of `kvplan plan` (the draft's memory,
// the speed-up by batch and where it turns) and what paging bought (the pool's requests in
// paged blocks beside whole max_model_len reservations). Renders; decides nothing.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "planner/planner.h"
#include "planner/speculative.h"

namespace kvplan::reports {

//! One line for a reader; empty when the plan holds no request.
std::string paging_text(const Plan& p);
nlohmann::json paging_json(const Plan& p);
std::string spec_text(const SpecPlan& s);
nlohmann::json spec_json(const SpecPlan& s);

}  // namespace kvplan::reports
