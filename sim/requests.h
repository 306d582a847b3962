// kvplan sim: the requests a workload generates, lazily and in arrival order, and the
// project's own random numbers behind them. Deterministic for a seed: std::mt19937_64 with
// the project's own distribution code (Box-Muller normals, Marsaglia-Tsang gammas), one
// stream for arrivals, one for lengths and one for LoRA adapters, so changing the arrival
// rate keeps every request's lengths and adapter. Generated arrivals start at t = 0 (a trace's first row is shifted to 0).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <random>
#include <unordered_map>
#include <vector>

#include "planner/workload.h"
#include "sim/metrics.h"

namespace kvplan::sim {

//! SplitMix64's output function (Steele, Lea, Flood, "Fast splittable pseudorandom number
//! generators", OOPSLA 2014): decorrelates per-stream seeds, and over a counter is a
//! counter-based stream (a draw depends only on its key).
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

//! The project's own random numbers, identical on every standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next_u64();
  double uniform();      //!< [0, 1), 53 bits
  double normal();       //!< standard normal, Box-Muller
  double exponential();  //!< mean 1
  double gamma(double shape);  //!< scale 1, Marsaglia-Tsang (shape < 1 by boosting)

 private:
  std::mt19937_64 mt_;  // fully specified by the standard: same stream everywhere
  bool has_spare_ = false;
  double spare_ = 0;
};

//! A request as generated (before an engine looks at it).
struct GeneratedRequest {
  int64_t index = 0;
  double arrival_s = 0;
  int64_t prompt_tokens = 1;
  int64_t output_tokens = 1;
  //! Prompt content identity for prefix caching (Workload::shared_prefix): the first
  //! `shared_tokens` tokens are group `group_key`'s system prompt, the whole prompt is
  //! content `prompt_key` (identical for equal keys). 0: unique content.
  uint64_t group_key = 0;
  uint64_t prompt_key = 0;
  int64_t shared_tokens = 0;
  //! The LoRA adapter it asks for, 0 .. Workload::lora.adapters - 1; -1: the base model.
  int32_t adapter = -1;
};

//! Streams a workload's requests in arrival order, lazily.
class RequestStream {
 public:
  RequestStream(const Workload& w, uint64_t seed, double rate_scale, int64_t count);
  //! The next request, or nullopt after `count`.
  std::optional<GeneratedRequest> next();

 private:
  int64_t length(const LengthDist& d, const TraceRow* row, bool prompt);
  double next_gap_s(double rate_per_s);
  int32_t draw_adapter();
  const Workload* workload_;
  Rng arrivals_, lengths_;
  Rng adapters_;  // its own stream: a workload without `lora` draws exactly as before
  std::vector<double> adapter_cdf_;  // lora: P(adapter <= k), popularity order
  double rate_scale_;
  int64_t count_, produced_ = 0;
  double clock_s_ = 0;
  size_t stage_ = 0;          // staged arrivals: the current stage
  double stage_end_s_ = 0;    // and when it ends
  std::vector<int64_t> user_question_tokens_;  // shared_prefix: one question per user
};

//! A benchmark client in front of a request stream, as `vllm bench serve` drives a server
//! (vllm/benchmarks/serve.py, benchmark(), vllm-project/vllm@009e6d4a): arrivals are the
//! stream's (its --request-rate); `all_at_once` (--request-rate inf) sends every request at
//! t = 0; with `max_concurrency` N, each request waits for one of N slots
//! (`limited_request_func`: `async with semaphore:` around the request function) and is
//! sent when its arrival has come and a slot is free, a freed slot going to the earliest
//! waiting request. A request holds its slot until the client has its last token (its
//! send time + e2e_s) or its rejection. A request's arrival_s as peek() returns it is the
//! moment it is sent: vLLM's request function starts the TTFT clock (`st =
//! time.perf_counter()`) inside the semaphore, so the wait for a slot is in no latency.
class BenchmarkClient {
 public:
  BenchmarkClient(RequestStream& stream, std::optional<int64_t> max_concurrency, bool all_at_once);
  //! The next request, arrival_s set to when it is sent; nullptr when every slot is held
  //! (until finished() or rejected()) or the stream is done.
  const GeneratedRequest* peek();
  //! The request peek() returned was sent.
  void pop();
  //! A sent request ended: its slot frees when the client has its last token.
  void finished(const FinishedRequest& f);
  //! A sent request was refused at `time_s`: its slot frees then.
  void rejected(int64_t index, double time_s);
  //! Every request has been sent.
  bool exhausted() const { return !next_; }

 private:
  RequestStream* stream_;
  bool all_at_once_;
  int64_t idle_slots_;  // slots never used yet (free from t = 0)
  bool limited_;
  std::optional<GeneratedRequest> next_;
  GeneratedRequest ready_;
  std::priority_queue<double, std::vector<double>, std::greater<>> freed_;  // when used slots free
  std::unordered_map<int64_t, double> sent_s_;  // request in flight -> when it was sent
};

}  // namespace kvplan::sim
