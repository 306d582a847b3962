// kvplan size: the one thread pool of the sizing searches. Work is claimed one index at a
// time, so the threads stay busy however uneven the items are; the results land by index
// and an error is the same whatever the schedule: the exception of the lowest failing
// index is rethrown once every thread has joined.
#pragma once

#include <cstdint>
#include <functional>

namespace kvplan::size {

//! Runs f(i) for every i in [0, n) on up to `threads` threads (the caller's included;
//! fewer when n is smaller, at least one). Every index runs even after one fails; then
//! the exception of the lowest failing index is rethrown.
void parallel_for(int64_t n, int threads, const std::function<void(int64_t)>& f);

//! `requested` threads, or every core when it is 0 or less (at least one).
int thread_count(int requested);

}  // namespace kvplan::size
