// The one home of the percentiles and the SLO verdict (sim/metrics.h).
#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "planner/types.h"

namespace kvplan::sim {

Percentiles percentiles(std::vector<double>& v) {
  Percentiles p;
  if (v.empty()) return p;
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  p.p50 = nearest_rank(v, 0.50);
  p.p90 = nearest_rank(v, 0.90);
  p.p99 = nearest_rank(v, 0.99);
  return p;
}

double p99_with_failures(const std::vector<double>& v, int64_t failed) {
  std::vector<double> all = v;
  all.insert(all.end(), static_cast<size_t>(failed), std::numeric_limits<double>::infinity());
  if (all.empty()) return 0;
  return percentiles(all).p99;
}

bool request_meets_slo(const Slo& slo, double ttft_s, int64_t output_tokens, double tpot_s) {
  const bool ttft_ok = slo.ttft_p99_s <= 0 || ttft_s <= slo.ttft_p99_s;
  return ttft_ok && (output_tokens <= 1 || slo.tpot_p99_s <= 0 || tpot_s <= slo.tpot_p99_s);
}

bool meets_slo(const Slo& slo, const std::vector<double>& ttft_s, const std::vector<double>& tpot_s,
               int64_t completed, int64_t rejected) {
  return completed > 0 && slo.given() &&
         (slo.ttft_p99_s <= 0 || p99_with_failures(ttft_s, rejected) <= slo.ttft_p99_s) &&
         (slo.tpot_p99_s <= 0 || p99_with_failures(tpot_s, rejected) <= slo.tpot_p99_s);
}

int64_t min_requests_for_percentile(double p) {
  if (!(p > 0 && p < 1)) throw InputError("SLO", "percentile", "a fraction in (0, 1)", std::to_string(p));
  // n - ceil(p n) >= k holds from n = ceil(k / (1 - p)); the small epsilon absorbs the
  // rounding of 10 / 0.01 to 1000.0000000000001.
  auto n = static_cast<int64_t>(std::ceil(static_cast<double>(kTailRequests) / (1 - p) - 1e-9));
  while (n - static_cast<int64_t>(std::ceil(p * static_cast<double>(n) - 1e-9)) < kTailRequests) ++n;
  return n;
}

void RunTally::arrival(double arrival_s) {
  ++counts.arrived;
  if (!any_arrival) {
    first_arrival_s = arrival_s;
    any_arrival = true;
  }
}

void RunTally::finish(const FinishedRequest& f, int64_t requests, const Slo& slo) {
  if (warmup_left > 0) {
    --warmup_left;
    ++counts.warmup;
    warmup_end_s = std::max(warmup_end_s, f.finish_s);
    return;
  }
  ++counts.completed;
  counts.output_tokens += f.output_tokens;
  counts.prompt_tokens += f.prompt_tokens;
  last_finish_s = std::max(last_finish_s, f.finish_s);
  ttft_s.push_back(f.ttft_s);
  e2e_s.push_back(f.e2e_s);
  queue_s.push_back(f.queued_s);
  if (2 * f.index < requests) {
    queue_first_half_s += f.queued_s;
    ++n_first_half;
  } else if (4 * f.index >= 3 * requests) {
    queue_last_quarter_s += f.queued_s;
    ++n_last_quarter;
  }
  if (f.output_tokens > 1) tpot_s.push_back(f.tpot_s);
  if (request_meets_slo(slo, f.ttft_s, f.output_tokens, f.tpot_s)) ++good;
}

void RunTally::add(const RunTally& o) {
  SimResult& r = counts;
  const SimResult& x = o.counts;
  r.arrived += x.arrived;
  r.completed += x.completed;
  r.rejected += x.rejected;
  r.rejected_max_model_len += x.rejected_max_model_len;
  r.rejected_pool += x.rejected_pool;
  r.preemptions += x.preemptions;
  r.batch_wait_steps += x.batch_wait_steps;
  r.truncated += x.truncated;
  r.output_tokens += x.output_tokens;
  r.prompt_tokens += x.prompt_tokens;
  r.cached_prompt_tokens += x.cached_prompt_tokens;
  r.batch_max = std::max(r.batch_max, x.batch_max);
  r.busy_s += x.busy_s;
  r.steps += x.steps;
  r.events += x.events;
  r.tokens_simulated += x.tokens_simulated;
  r.warmup += x.warmup;
  r.lora.tracked = r.lora.tracked || x.lora.tracked;
  r.lora.gpu_loads += x.lora.gpu_loads;
  r.lora.host_misses += x.lora.host_misses;
  r.lora.waited_requests += x.lora.waited_requests;
  r.lora.load_s += x.lora.load_s;
  r.spec.decoder_steps += x.spec.decoder_steps;
  r.spec.decoded_tokens += x.spec.decoded_tokens;
  r.host_tier.capacity_blocks += x.host_tier.capacity_blocks;
  r.host_tier.hit_tokens += x.host_tier.hit_tokens;
  r.host_tier.loads += x.host_tier.loads;
  r.host_tier.stored_blocks += x.host_tier.stored_blocks;
  r.host_tier.evicted_blocks += x.host_tier.evicted_blocks;
  r.host_tier.load_s += x.host_tier.load_s;
  r.disk_tier.capacity_blocks += x.disk_tier.capacity_blocks;
  r.disk_tier.hit_tokens += x.disk_tier.hit_tokens;
  r.disk_tier.loads += x.disk_tier.loads;
  r.disk_tier.stored_blocks += x.disk_tier.stored_blocks;
  r.disk_tier.evicted_blocks += x.disk_tier.evicted_blocks;
  r.disk_tier.load_s += x.disk_tier.load_s;
  r.disk_tier.write_s += x.disk_tier.write_s;
  r.disk_tier.wait_s += x.disk_tier.wait_s;
  r.remote_tier.capacity_blocks = std::max(r.remote_tier.capacity_blocks, x.remote_tier.capacity_blocks);
  r.remote_tier.hit_tokens += x.remote_tier.hit_tokens;
  r.remote_tier.loads += x.remote_tier.loads;
  r.remote_tier.stored_blocks += x.remote_tier.stored_blocks;
  r.remote_tier.evicted_blocks += x.remote_tier.evicted_blocks;
  r.remote_tier.load_s += x.remote_tier.load_s;
  adapters_time += o.adapters_time;
  warmup_end_s = std::max(warmup_end_s, o.warmup_end_s);
  ttft_s.insert(ttft_s.end(), o.ttft_s.begin(), o.ttft_s.end());
  tpot_s.insert(tpot_s.end(), o.tpot_s.begin(), o.tpot_s.end());
  e2e_s.insert(e2e_s.end(), o.e2e_s.begin(), o.e2e_s.end());
  queue_s.insert(queue_s.end(), o.queue_s.begin(), o.queue_s.end());
  good += o.good;
  queue_first_half_s += o.queue_first_half_s;
  queue_last_quarter_s += o.queue_last_quarter_s;
  n_first_half += o.n_first_half;
  n_last_quarter += o.n_last_quarter;
  if (o.any_arrival) first_arrival_s = any_arrival ? std::min(first_arrival_s, o.first_arrival_s) : o.first_arrival_s;
  any_arrival = any_arrival || o.any_arrival;
  last_finish_s = std::max(last_finish_s, o.last_finish_s);
  batch_time += o.batch_time;
  blocks_time += o.blocks_time;
  peak_blocks = std::max(peak_blocks, o.peak_blocks);
}

SimResult summarize(RunTally& t, const Slo& slo, int64_t num_blocks, int64_t block_size) {
  SimResult r = t.counts;
  r.slo = slo;
  r.num_blocks = num_blocks;
  r.block_size = block_size;
  r.peak_blocks = t.peak_blocks;
  r.peak_kv_utilization = static_cast<double>(t.peak_blocks) / static_cast<double>(num_blocks);
  if (r.busy_s > 0) {
    r.batch_mean = t.batch_time / r.busy_s;
    r.lora.adapters_mean = t.adapters_time / r.busy_s;
    r.mean_kv_utilization = t.blocks_time / r.busy_s / static_cast<double>(num_blocks);
  }
  const double start_s = r.warmup > 0 ? std::max(t.first_arrival_s, t.warmup_end_s) : t.first_arrival_s;
  r.duration_s = r.completed > 0 ? t.last_finish_s - start_s : 0;
  if (r.duration_s > 0) {
    r.requests_per_s = static_cast<double>(r.completed) / r.duration_s;
    r.output_tokens_per_s = static_cast<double>(r.output_tokens) / r.duration_s;
    r.prompt_tokens_per_s = static_cast<double>(r.prompt_tokens) / r.duration_s;
    r.goodput_requests_per_s = static_cast<double>(t.good) / r.duration_s;
  }
  const int64_t judged = r.completed + r.rejected;
  r.slo_attainment = judged > 0 ? static_cast<double>(t.good) / static_cast<double>(judged) : 0;
  // The verdict reads the latencies before percentiles() reorders them (it copies them).
  r.meets_slo = meets_slo(slo, t.ttft_s, t.tpot_s, r.completed, r.rejected);
  r.ttft_s = percentiles(t.ttft_s);
  r.tpot_s = percentiles(t.tpot_s);
  r.e2e_s = percentiles(t.e2e_s);
  r.queue_s = percentiles(t.queue_s);
  if (t.n_first_half > 0 && t.n_last_quarter > 0)
    r.queue_growth_s = t.queue_last_quarter_s / static_cast<double>(t.n_last_quarter) -
                       t.queue_first_half_s / static_cast<double>(t.n_first_half);
  return r;
}

}  // namespace kvplan::sim

namespace kvplan::sim {

void ItlTally::step(double end_s, double duration_s, int64_t decode_seqs, int64_t batch) {
  if (!prefill_first_) {
    if (decode_seqs > 0) gaps_.emplace_back(duration_s, decode_seqs);
    return;
  }
  if (decode_seqs > 0) {
    int64_t left = decode_seqs;
    for (auto it = joined_.rbegin(); it != joined_.rend() && left > 0; ++it) {
      const int64_t n = std::min(it->second, left);
      gaps_.emplace_back(end_s - it->first, n);
      left -= n;
    }
    if (left > 0) gaps_.emplace_back(end_s - last_decode_end_s_, left);
    joined_.clear();
    last_decode_end_s_ = end_s;
  }
  if (batch > decode_seqs) joined_.emplace_back(end_s, batch - decode_seqs);
}

Percentiles ItlTally::summary() {
  Percentiles p;
  int64_t n = 0;
  double sum = 0;
  for (const auto& [gap, count] : gaps_) {
    n += count;
    sum += gap * static_cast<double>(count);
  }
  if (n == 0) return p;
  p.mean = sum / static_cast<double>(n);
  std::sort(gaps_.begin(), gaps_.end());
  // The nearest rank (as nearest_rank) over the gaps, each repeated `count` times.
  const auto at = [&](double q) {
    const auto rank = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(q * static_cast<double>(n))), 1, n);
    int64_t seen = 0;
    for (const auto& [gap, count] : gaps_) {
      seen += count;
      if (seen >= rank) return gap;
    }
    return gaps_.back().first;
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  return p;
}

}  // namespace kvplan::sim
