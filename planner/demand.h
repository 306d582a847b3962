// A demand curve: the request rate of each model over a repeating cycle (a day, a week),
// period by period. Read from `kvplan size --demand FILE.csv` (io/demand_io.h) and planned
// over months (size/over_time.h).
#pragma once

#include <string>
#include <vector>

namespace kvplan {

struct DemandCurve {
  std::string file;                 //!< where it was read from, for messages
  double period_h = 1;              //!< every period's length, hours
  //! Each period's start, hours from the cycle's start: 0, period_h, 2 period_h, ...
  std::vector<double> hours;
  struct Series {
    std::string model;                  //!< the model's name, as `--model` loads it
    std::vector<double> requests_per_s; //!< one rate per period, in `hours` order
  };
  std::vector<Series> models;       //!< in order of first appearance in the file
  //! The cycle the curve repeats: periods x period length.
  double cycle_h() const { return period_h * static_cast<double>(hours.size()); }
};

}  // namespace kvplan
