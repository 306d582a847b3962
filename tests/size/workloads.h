// The request stream the size tests search over: its lengths are fixed, so capacities and
// rates can be worked by hand.
#pragma once

#include <cstdint>

#include "sim/sim.h"

namespace kvplan::size_test {

//! 11 requests/s, prompts of exactly 100 tokens, outputs of exactly 50; SLO 2 s / 100 ms.
//! `process`: Poisson arrivals, or fixed gaps (request i arrives at i / 11 s).
inline Workload fixed_lengths(int64_t requests = 1000,
                                   ArrivalProcess process = ArrivalProcess::poisson) {
  Workload w;
  w.name = "fixed";
  w.requests = requests;
  w.arrival.process = process;
  w.arrival.rate_per_s = 11;
  w.prompt_tokens.kind = LengthKind::fixed;
  w.prompt_tokens.value = 100;
  w.output_tokens.kind = LengthKind::fixed;
  w.output_tokens.value = 50;
  w.slo = {2.0, 0.1};
  return w;
}

}  // namespace kvplan::size_test
