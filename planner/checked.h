// Checked 64-bit arithmetic for byte and token counts: a product that would overflow is
// bad input (a size nobody can allocate), reported as InputError, never wrapped silently.
#pragma once

#include <cstdint>
#include <string>

#include "planner/types.h"

namespace kvplan::detail {

inline int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw InputError(what, "", "a size below 2^63 bytes (9.2 EB)", "an overflow");
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw InputError(what, "", "a size below 2^63 bytes (9.2 EB)", "an overflow");
  return r;
}

//! ceil(a / b) for a >= 0, b > 0, without the overflow of (a + b - 1) / b near 2^63.
inline int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

}  // namespace kvplan::detail
