// Random numbers and the lazy request stream (sim/requests.h). std::mt19937_64 is specified bit for bit
// by the standard; the distributions are ours, so a seed gives the same requests with
// every standard library (std::normal_distribution & co. differ between them).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "planner/types.h"
#include "sim/requests.h"

namespace kvplan::sim {

Rng::Rng(uint64_t seed) : mt_(seed) {}

uint64_t Rng::next_u64() { return mt_(); }

double Rng::uniform() { return static_cast<double>(mt_() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  // Box-Muller (1958): two independent normals from two uniforms; the second is kept.
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * std::numbers::pi * u2;
  spare_ = r * std::sin(theta);
  has_spare_ = true;
  return r * std::cos(theta);
}

double Rng::exponential() { return -std::log(1.0 - uniform()); }

double Rng::gamma(double shape) {
  if (!(shape > 0)) throw std::invalid_argument("gamma shape must be > 0");
  if (shape < 1.0) {
    // Boost: G(a) = G(a + 1) * U^(1/a) (Marsaglia & Tsang 2000, section 6).
    const double u = 1.0 - uniform();
    return gamma(shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  // Marsaglia & Tsang (2000), "A simple method for generating gamma variables".
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0, v = 0;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1.0 - uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

RequestStream::RequestStream(const Workload& w, uint64_t seed, double rate_scale, int64_t count)
    : workload_(&w),
      arrivals_(splitmix64(2 * seed + 1)),
      lengths_(splitmix64(2 * seed + 2)),
      adapters_(splitmix64(~seed)),
      rate_scale_(rate_scale),
      count_(count) {
  if (!(rate_scale > 0) || !std::isfinite(rate_scale))
    throw InputError("simulate", "rate_scale", "a positive finite number", std::to_string(rate_scale));
  const std::string file = w.file.empty() ? "workload" : w.file;
  if (w.arrival.process != ArrivalProcess::trace &&
      (!(w.arrival.rate_per_s > 0) || !std::isfinite(w.arrival.rate_per_s)))
    throw InputError(file, "arrival.rate_per_s", "a positive number", std::to_string(w.arrival.rate_per_s));
  if (w.arrival.process == ArrivalProcess::gamma && (!(w.arrival.cv > 0) || !std::isfinite(w.arrival.cv)))
    throw InputError(file, "arrival.cv", "a positive number", std::to_string(w.arrival.cv));
  for (const auto* d : {&w.prompt_tokens, &w.output_tokens}) {
    const std::string key = d == &w.prompt_tokens ? "prompt_tokens" : "output_tokens";
    if (d->kind == LengthKind::lognormal && (!(d->mean > 0) || !(d->sigma >= 0)))
      throw InputError(file, key, "a lognormal with mean > 0 and sigma >= 0");
    if ((d->kind == LengthKind::uniform || d->kind == LengthKind::lognormal) && (d->min < 1 || d->max < d->min))
      throw InputError(file, key, "1 <= min <= max");
    if (d->kind == LengthKind::lognormal &&
        (static_cast<double>(d->min) > d->mean || static_cast<double>(d->max) < d->mean))
      throw InputError(file, key, "a lognormal whose mean lies within [min, max] (draws are clipped to it)");
    if (d->kind == LengthKind::fixed && d->value < 1) throw InputError(file, key + ".value", "an integer >= 1");
  }
  for (const Stage& st : w.arrival.stages)
    if (!(st.rate_per_s > 0) || !(st.duration_s > 0) || !std::isfinite(st.rate_per_s) || !std::isfinite(st.duration_s))
      throw InputError(file, "arrival.stages", "stages with a positive rate_per_s and duration_s");
  if (!w.arrival.stages.empty()) stage_end_s_ = w.arrival.stages.front().duration_s;
  if (w.random.given()) {
    std::string expected;
    if (const char* field = w.random.invalid_field(&expected))
      throw InputError(file, std::string("random.") + field, expected, w.random.describe());
    if (w.shared_prefix.groups > 0)
      throw InputError(file, "random", "either random or shared_prefix prompts, not both", "both");
  }
  const SharedPrefix& sp = w.shared_prefix;
  if (sp.groups > 0) {
    if (sp.users_per_group < 1 || sp.system_prompt_tokens < 0)
      throw InputError(file, "shared_prefix", "users_per_group >= 1 and system_prompt_tokens >= 0");
    // inference-perf draws every prompt once, up front, and cycles through them.
    const int64_t users = sp.groups * sp.users_per_group;
    user_question_tokens_.reserve(static_cast<size_t>(users));
    for (int64_t u = 0; u < users; ++u) user_question_tokens_.push_back(length(w.prompt_tokens, nullptr, true));
  }
  if (w.lora.given()) {
    if (!(w.lora.zipf_s >= 0) || !(w.lora.base_fraction >= 0 && w.lora.base_fraction < 1))
      throw InputError(file, "lora", "zipf_s >= 0 and base_fraction in [0, 1)");
    // P(k) proportional to 1 / k^s over k = 1..adapters (s = 0: uniform).
    adapter_cdf_.resize(static_cast<size_t>(w.lora.adapters));
    double sum = 0;
    for (int64_t k = 1; k <= w.lora.adapters; ++k) {
      sum += std::pow(static_cast<double>(k), -w.lora.zipf_s);
      adapter_cdf_[static_cast<size_t>(k - 1)] = sum;
    }
    for (double& c : adapter_cdf_) c /= sum;
  }
  const bool needs_trace = w.arrival.process == ArrivalProcess::trace ||
                           w.prompt_tokens.kind == LengthKind::trace ||
                           w.output_tokens.kind == LengthKind::trace;
  if (needs_trace && (!w.trace || w.trace->empty()))
    throw InputError(file, "trace",
                     "trace rows (arrival or a length distribution is 'trace')", "none");
}

int64_t RequestStream::length(const LengthDist& d, const TraceRow* row, bool prompt) {
  switch (d.kind) {
    case LengthKind::fixed:
      return d.value;
    case LengthKind::uniform: {
      const auto span = static_cast<double>(d.max - d.min + 1);
      const auto k = static_cast<int64_t>(std::floor(lengths_.uniform() * span));
      return d.min + std::min(k, d.max - d.min);
    }
    case LengthKind::lognormal: {
      const double mu = std::log(d.mean) - 0.5 * d.sigma * d.sigma;
      const double x = std::exp(mu + d.sigma * lengths_.normal());
      const double clipped = std::clamp(std::round(x), static_cast<double>(d.min),
                                        static_cast<double>(d.max));
      return static_cast<int64_t>(clipped);
    }
    case LengthKind::trace:
      return prompt ? row->prompt_tokens : row->output_tokens;
  }
  return d.value;
}

double RequestStream::next_gap_s(double rate_per_s) {
  switch (workload_->arrival.process) {
    case ArrivalProcess::poisson: return arrivals_.exponential() / rate_per_s;
    case ArrivalProcess::gamma: {
      // Gamma(k, theta) with k = 1/cv^2 and k * theta = 1/rate: mean 1/rate, cv as asked.
      const double k = 1.0 / (workload_->arrival.cv * workload_->arrival.cv);
      return arrivals_.gamma(k) / (k * rate_per_s);
    }
    default: return 1.0 / rate_per_s;
  }
}

std::optional<GeneratedRequest> RequestStream::next() {
  if (produced_ >= count_) return std::nullopt;
  GeneratedRequest r;
  r.index = produced_;
  const Workload& w = *workload_;
  const TraceRow* row = nullptr;
  const std::vector<TraceRow>* trace = w.trace.get();
  switch (w.arrival.process) {
    case ArrivalProcess::trace: {
      // Replays the trace; past its end it starts again one mean gap after its last row.
      const auto n = static_cast<int64_t>(trace->size());
      row = &(*trace)[static_cast<size_t>(produced_ % n)];
      const double first_s = trace->front().arrival_s;
      const double span_s = trace->back().arrival_s - first_s;
      const double period_s = span_s + 1.0 / w.base_rate_per_s();
      const int64_t pass = produced_ / n;  // whole passes over the trace so far
      const auto passes = static_cast<double>(pass);
      clock_s_ = (row->arrival_s - first_s + passes * period_s) / rate_scale_;
      break;
    }
    case ArrivalProcess::poisson:
    case ArrivalProcess::gamma:
    case ArrivalProcess::fixed: {
      // The first request arrives at 0; gaps follow the process.
      if (produced_ > 0) {
        const auto& stages = w.arrival.stages;
        if (stages.empty()) {
          clock_s_ += next_gap_s(w.arrival.rate_per_s * rate_scale_);
        } else {
          const double t = clock_s_ + next_gap_s(stages[stage_].rate_per_s * rate_scale_);
          if (t >= stage_end_s_ && stage_ + 1 < stages.size()) {
            // The next stage starts its own arrivals at its start (inference-perf runs
            // each stage's load from the stage's beginning).
            clock_s_ = stage_end_s_;
            ++stage_;
            stage_end_s_ += stages[stage_].duration_s;
          } else {
            clock_s_ = t;
          }
        }
      }
      break;
    }
  }
  r.arrival_s = clock_s_;
  const bool lengths_from_trace = w.prompt_tokens.kind == LengthKind::trace ||
                                  w.output_tokens.kind == LengthKind::trace;
  if (lengths_from_trace && row == nullptr) {
    // Arrivals are synthetic: lengths come from a random row (prompt and output of the
    // same row, so their correlation is kept).
    const auto n = static_cast<double>(trace->size());
    const auto i = std::min(static_cast<size_t>(lengths_.uniform() * n), trace->size() - 1);
    row = &(*trace)[i];
  }
  if (w.shared_prefix.groups > 0) {
    const SharedPrefix& sp = w.shared_prefix;
    const auto users = static_cast<int64_t>(user_question_tokens_.size());
    const int64_t user = produced_ % users;
    r.group_key = static_cast<uint64_t>(user / sp.users_per_group) + 1;
    r.prompt_key = static_cast<uint64_t>(user) + 1;
    r.shared_tokens = sp.system_prompt_tokens;
    r.prompt_tokens = sp.system_prompt_tokens + user_question_tokens_[static_cast<size_t>(user)];
  } else {
    r.prompt_tokens = length(w.prompt_tokens, row, true);
    if (w.random.prefix_len > 0) {
      // vLLM's random dataset draws its prefix once: every prompt shares it.
      r.group_key = 1;
      r.shared_tokens = w.random.prefix_len;
    }
  }
  r.output_tokens = length(w.output_tokens, row, false);
  if (w.lora.given()) {
    r.adapter = draw_adapter();
    // vLLM's block hashes carry the request's LoRA (vllm/v1/core/kv_cache_utils.py
    // _gen_lora_extra_hash_keys): prompts on different adapters share no cached block.
    const auto tag = static_cast<uint64_t>(r.adapter + 1) << 40;
    if (r.group_key != 0) r.group_key += tag;
    if (r.prompt_key != 0) r.prompt_key += tag;
  }
  ++produced_;
  return r;
}

int32_t RequestStream::draw_adapter() {
  // Two draws per request whatever they decide, so the base fraction leaves the adapters
  // of the requests on adapters where they were.
  const double base = adapters_.uniform(), pick = adapters_.uniform();
  if (base < workload_->lora.base_fraction) return -1;
  const auto it = std::upper_bound(adapter_cdf_.begin(), adapter_cdf_.end(), pick);
  return static_cast<int32_t>(std::min<std::ptrdiff_t>(it - adapter_cdf_.begin(),
                                                       static_cast<std::ptrdiff_t>(adapter_cdf_.size()) - 1));
}

}  // namespace kvplan::sim

namespace kvplan::sim {

BenchmarkClient::BenchmarkClient(RequestStream& stream, std::optional<int64_t> max_concurrency, bool all_at_once)
    : stream_(&stream), all_at_once_(all_at_once), idle_slots_(max_concurrency.value_or(0)),
      limited_(max_concurrency.has_value()) {
  if (limited_ && *max_concurrency < 1)
    throw InputError("simulate", "max_concurrency", "an integer >= 1", std::to_string(*max_concurrency));
  next_ = stream_->next();
}

const GeneratedRequest* BenchmarkClient::peek() {
  if (!next_) return nullptr;
  ready_ = *next_;
  if (all_at_once_) ready_.arrival_s = 0;
  if (!limited_) return &ready_;
  if (idle_slots_ == 0) {
    if (freed_.empty()) return nullptr;
    // Sent when its slot frees, if that is after its own arrival.
    ready_.arrival_s = std::max(ready_.arrival_s, freed_.top());
  }
  return &ready_;
}

void BenchmarkClient::pop() {
  if (limited_) {
    if (idle_slots_ > 0) {
      --idle_slots_;
    } else {
      freed_.pop();
    }
    sent_s_.emplace(ready_.index, ready_.arrival_s);
  }
  next_ = stream_->next();
}

void BenchmarkClient::finished(const FinishedRequest& f) {
  if (!limited_) return;
  const auto it = sent_s_.find(f.index);
  freed_.push(it->second + f.e2e_s);
  sent_s_.erase(it);
}

void BenchmarkClient::rejected(int64_t index, double time_s) {
  if (!limited_) return;
  sent_s_.erase(index);
  freed_.push(time_s);
}

}  // namespace kvplan::sim
