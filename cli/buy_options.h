// kvplan cli: `kvplan size --buy` options (site costs, --objective), read into the sizing
// search's options with the purchase catalog; the search prices and ranks (size/tco.h).
#pragma once

#include <optional>
#include <string>
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
  std::vector<size::RentPrices> prices;  //!< --prices cards (their tier prices are in site)
  std::optional<size::DemandOptions> demand;  //!< --demand and its horizon, growth and lead time
  std::optional<size::FailureOptions> failures;  //!< --availability, --repair-hours, --gpu-failures-per-year
};

//! One provider's rent prices for a GPU (docs/formats.md "Rent prices"); a missing or
//! unknown key, a bad figure, or a price without its source and date is an InputError.
//! rent false (--buy without --demand): the card may give only the KV tiers' prices, and
//! a rent price in it is an InputError rather than left unused.
size::RentPrices parse_prices(const std::string& text, const std::string& file, bool rent);

//! Adds --buy, --objective, the site options, --demand with its horizon options and
//! --availability with the failure options.
void add_buy_options(po::options_description& desc);
//! Reads them; a bad or negative value is an InputError naming the option.
BuyRequest parse_buy_options(const po::variables_map& vm);
//! The search's objective, and the purchase data (the --servers files, else configs/servers,
//! for each GPU searched that has one) of the buy figures (--buy or a tco/capex objective)
//! and of the demand plan (--demand).
void set_buy_options(const BuyRequest& req, const std::vector<GpuSpec>& gpus, size::SizeOptions& opt);

}  // namespace kvplan::cli
