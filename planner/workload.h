// kvplan: what a workload is (ARCHITECTURE.md "Workload file"), as plain values.
// Header-only and standard-library-only (the ground floor), so io/workload_io.cpp fills it
// without the simulator, and the simulator reads it without knowing YAML.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvplan {

//! How requests arrive. `poisson`: exponential gaps at rate_per_s; `gamma`: gamma gaps
//! with mean 1/rate_per_s and coefficient of variation `cv` (cv > 1 is burstier than
//! Poisson, cv = 1 is Poisson); `fixed`: exactly 1/rate_per_s apart; `trace`: the
//! trace's arrival_s column (rate_per_s unused).
enum class ArrivalProcess { poisson, gamma, fixed, trace };

//! One load stage: `rate_per_s` for `duration_s` seconds (inference-perf's
//! `load.stages`, kubernetes-sigs/inference-perf): stages run one after another.
struct Stage {
  double rate_per_s = 1.0;
  double duration_s = 1.0;
};

struct ArrivalSpec {
  ArrivalProcess process = ArrivalProcess::poisson;
  double rate_per_s = 1.0;  // mean arrival rate (not used by `trace`; staged: overall mean)
  double cv = 1.0;          // gamma only: stddev / mean of the gaps
  //! When not empty, arrivals follow `process` at each stage's rate in turn (rate_per_s
  //! is then their request-weighted mean); past the last stage its rate continues.
  std::vector<Stage> stages;
};

//! Prompts with structure (inference-perf's `shared_prefix` data generator): `groups`
//! system prompts of `system_prompt_tokens` tokens, each shared by `users_per_group`
//! users; a request is its user's system prompt followed by that user's question
//! (prompt_tokens draws the question length, once per user). Request i belongs to user
//! i mod (groups x users_per_group), so every user's prompt repeats, as the generator
//! cycles its prompt list. `multi_turn` marks the generator's user sessions (a user's
//! requests are its conversation's turns); the prompt stays the user's prompt (see
//! docs/workloads.md for the evidence). groups == 0: no structure.
struct SharedPrefix {
  int64_t groups = 0;
  int64_t users_per_group = 1;
  int64_t system_prompt_tokens = 0;
  bool multi_turn = false;
};

//! A token-length distribution. `fixed`: `value`; `uniform`: integers in [min, max];
//! `lognormal`: mean `mean` and log-space standard deviation `sigma` (so
//! mu = ln(mean) - sigma^2/2), rounded to the nearest integer and clipped to [min, max];
//! `trace`: the trace's column.
enum class LengthKind { fixed, uniform, lognormal, trace };

struct LengthDist {
  LengthKind kind = LengthKind::fixed;
  int64_t value = 1;      // fixed
  int64_t min = 1;        // uniform, lognormal (clip)
  int64_t max = 1 << 30;  // uniform, lognormal (clip)
  double mean = 1;        // lognormal
  double sigma = 0;       // lognormal
};

//! vLLM bench's `random` dataset (`vllm bench serve --dataset-name random`,
//! vllm/benchmarks/datasets/random.py RandomDataset.get_sampling_params,
//! vllm-project/vllm@237145ea): every prompt is one fixed prefix of `prefix_len` tokens,
//! shared by all requests, then an integer drawn uniformly from [floor(input_len x
//! (1 - r)), ceil(input_len x (1 + r))]; outputs uniformly from [max(1, floor(output_len x
//! (1 - r))), max(1, ceil(output_len x (1 + r)))], r = range_ratio in [0, 1). vLLM first
//! subtracts the tokenizer's special tokens from input_len (and the server adds them back);
//! kvplan has no tokenizer and centres the range on input_len (a difference of at most
//! r x the special tokens at either bound). input_len == 0: not used.
struct RandomDataset {
  int64_t input_len = 0;
  int64_t output_len = 0;
  double range_ratio = 0;
  int64_t prefix_len = 0;
  bool given() const { return input_len > 0; }
  //! vLLM's range around `len` as a length distribution, `plus` added to both bounds and
  //! the lower bound at least `least` (uniform; fixed when the bounds meet).
  LengthDist lengths(int64_t len, int64_t plus, int64_t least) const {
    // The same IEEE operations as vLLM's Python, so the bounds are vLLM's bit for bit.
    const auto lo = static_cast<int64_t>(std::floor(static_cast<double>(len) * (1 - range_ratio)));
    const auto hi = static_cast<int64_t>(std::ceil(static_cast<double>(len) * (1 + range_ratio)));
    LengthDist d;
    d.min = std::max(lo, least) + plus;
    d.max = std::max(hi, least) + plus;
    d.value = d.min;
    d.kind = d.min == d.max ? LengthKind::fixed : LengthKind::uniform;
    return d;
  }
  //! Whole prompts (prefix included): a sampled part may be 0 tokens when a prefix exists.
  LengthDist prompt_lengths() const { return lengths(input_len, prefix_len, 0); }
  LengthDist output_lengths() const { return lengths(output_len, 0, 1); }
  //! The first field vLLM would refuse ("input_len", "output_len", "range_ratio",
  //! "prefix_len"; nullptr when none) and what it expects there.
  const char* invalid_field(std::string* expected) const {
    const auto refuse = [expected](const char* field, const char* what) {
      *expected = what;
      return field;
    };
    if (input_len < 1) return refuse("input_len", "an integer >= 1");
    if (output_len < 1) return refuse("output_len", "an integer >= 1");
    if (!(range_ratio >= 0 && range_ratio < 1)) return refuse("range_ratio", "a number in [0, 1)");
    if (prefix_len < 0) return refuse("prefix_len", "an integer >= 0");
    // vLLM: prefix_len + floor(input_len x (1 - range_ratio)) >= 1.
    if (prompt_lengths().min < 1)
      return refuse("range_ratio", "a ratio leaving prompts of at least 1 token (prefix_len + floor(input_len x (1 - range_ratio)) >= 1)");
    return nullptr;
  }
  //! "input_len 1024, output_len 128, range_ratio 0.5, prefix_len 0", for messages.
  std::string describe() const {
    std::string ratio = std::to_string(range_ratio);
    ratio.erase(ratio.find_last_not_of('0') + 1);
    if (ratio.back() == '.') ratio.pop_back();
    return "input_len " + std::to_string(input_len) + ", output_len " + std::to_string(output_len) +
           ", range_ratio " + ratio + ", prefix_len " + std::to_string(prefix_len);
  }
};

//! One row of a trace CSV (columns arrival_s,prompt_tokens,output_tokens).
struct TraceRow {
  double arrival_s = 0;
  int64_t prompt_tokens = 1;
  int64_t output_tokens = 1;
};

//! The latency targets goodput and --find-max-rate are measured against.
//! A workload may give none (both 0): simulate then reports latencies without a verdict;
//! searches for a rate or a configuration need one.
struct Slo {
  double ttft_p99_s = 0;  // time to first token, 99th percentile; 0 = no target
  double tpot_p99_s = 0;  // time per output token after the first, 99th percentile; 0 = no target
  bool given() const { return ttft_p99_s > 0 || tpot_p99_s > 0; }
};

//! Which LoRA adapter each request asks for (docs/lora.md "Simulator"): `adapters`
//! distinct adapters, a request on the base model with probability `base_fraction`, else
//! on adapter k (1..adapters) with probability proportional to 1 / k^zipf_s (zipf_s 0:
//! uniform). adapters == 0: no key, requests carry no adapter.
struct LoraMix {
  int64_t adapters = 0;
  double zipf_s = 0;
  double base_fraction = 0;
  bool given() const { return adapters > 0; }
};

struct Workload {
  std::string name;
  std::string file;          // where it was loaded from (for messages); may be empty
  std::string source;        // where its shapes come from (free text), may be empty
  int64_t requests = 1000;   // how many requests to generate
  ArrivalSpec arrival;
  LengthDist prompt_tokens;
  LengthDist output_tokens;
  SharedPrefix shared_prefix;
  //! vLLM bench's `random` lengths; when given, prompt_tokens and output_tokens are its
  //! prompt_lengths() and output_lengths() (use_random) and every prompt starts with the
  //! same prefix_len tokens (one prefix-cache group).
  RandomDataset random;
  void use_random(const RandomDataset& r) {
    random = r;
    prompt_tokens = r.prompt_lengths();
    output_tokens = r.output_lengths();
  }
  //! Rows sorted by arrival_s, first at 0 (empty unless something uses the trace).
  std::shared_ptr<const std::vector<TraceRow>> trace;
  std::string trace_file;    // resolved path, for messages
  Slo slo;
  LoraMix lora;              // the `lora` key: adapters per request (needs --enable-lora)

  //! A trace whose arrivals all share one instant (or a single row): a burst with no
  //! arrival rate to report or scale; base_rate_per_s's 1 request/s is only a stand-in.
  bool arrivals_at_one_instant() const {
    return arrival.process == ArrivalProcess::trace && trace && !trace->empty() &&
           trace->back().arrival_s == trace->front().arrival_s;
  }

  //! Mean arrival rate before any --rate scaling: rate_per_s, or for a trace its
  //! rows / span (a trace of one row, or of zero span, counts as 1 request/s).
  double base_rate_per_s() const {
    if (arrival.process != ArrivalProcess::trace) {
      if (arrival.stages.empty()) return arrival.rate_per_s;
      double n = 0, t = 0;
      for (const Stage& st : arrival.stages) {
        n += st.rate_per_s * st.duration_s;
        t += st.duration_s;
      }
      return t > 0 ? n / t : arrival.rate_per_s;
    }
    if (!trace || trace->size() < 2) return 1.0;
    const double span_s = trace->back().arrival_s - trace->front().arrival_s;
    return span_s > 0 ? static_cast<double>(trace->size() - 1) / span_s : 1.0;
  }
};

}  // namespace kvplan
