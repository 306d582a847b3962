// kvplan cli: `kvplan size --buy` options (site costs, --objective) and the step that
// turns a sizing result into buy figures (size/tco.h) with the purchase catalog.
#pragma once

#include <optional>
#include <vector>

#include "cli/cli.h"
#include "size/size.h"
#include "size/tco.h"

namespace kvplan::cli {

struct BuyRequest {
  bool buy = false;                  //!< compute buy figures (--buy, or a tco/capex objective)
  size::Objective objective = size::Objective::rent;
  size::SiteOptions site;
  std::vector<ServerSpec> servers;   //!< --servers files; they override configs/servers per GPU
};

//! Adds --buy, --objective and the site options.
void add_buy_options(po::options_description& desc);
//! Reads them; a bad or negative value is an InputError naming the option.
BuyRequest parse_buy_options(const po::variables_map& vm);
//! Loads configs/servers for the GPUs of `r`, computes the buy figures and re-ranks `r`
//! by the objective; nullopt when no buy figures were asked for.
std::optional<size::BuyResult> apply_buy(const BuyRequest& req, size::SizeResult& r);

}  // namespace kvplan::cli
