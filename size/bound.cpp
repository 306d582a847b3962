// kvplan size: what a candidate can at best do, before it is simulated (size.h:
// probe_requests, rate_ceiling). The sizing search skips a candidate whose cheapest
// possible deployment costs more than an option already proven (size.cpp).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "size/size.h"

namespace kvplan::size {

ProbeRequests probe_requests(const Workload& w, uint64_t seed, int64_t requests) {
  ProbeRequests p;
  // The simulator draws lengths from their own stream (sim.h), so a probe at any rate
  // sees these requests, and arrival times divided by the rate scale.
  sim::RequestStream stream(w, seed, 1.0, std::max<int64_t>(requests, 1));
  while (auto r = stream.next()) {
    p.prompt_tokens.push_back(std::max<int64_t>(r->prompt_tokens, 1));
    p.output_tokens.push_back(std::max<int64_t>(r->output_tokens, 1));
    p.last_arrival_s = r->arrival_s;
  }
  p.base_rate_per_s = w.base_rate_per_s();
  p.prefix_cached = w.shared_prefix.groups > 0;
  // Staged arrivals change rate at fixed times, which a rate scale does not stretch.
  p.arrivals_scale = w.arrival.stages.empty();
  p.ttft_target_s = w.slo.ttft_p99_s;
  return p;
}

namespace {

//! What rate_ceiling reads of a candidate engine: its limits (sim::EngineLimits, the one
//! home of the defaults the simulator applies), block counts and step-time model.
struct CeilingInputs {
  sim::EngineLimits limits;
  std::function<int64_t(int64_t)> blocks_for;
  const StepTimeModel* stm = nullptr;
};

RateCeiling ceiling(const CeilingInputs& s, sim::Scheduler scheduler, const ProbeRequests& p);

}  // namespace

RateCeiling rate_ceiling(const sim::Simulator& s, sim::Scheduler scheduler, const ProbeRequests& p) {
  CeilingInputs r;
  r.limits = s.limits(scheduler);
  r.blocks_for = [&s](int64_t tokens) { return s.blocks_for(tokens); };
  r.stm = &s.step_model();
  return ceiling(r, scheduler, p);
}

RateCeiling rate_ceiling(const ModelConfig& given, const GpuSpec& g, const ServingOptions& o, sim::Scheduler scheduler,
                         const ProbeRequests& p) {
  // The simulator's limits without its per-block table (O(max_model_len / block size)
  // footprint calls): tests/size checks that both give the same ceiling.
  const ModelConfig m = apply_what_if(given, o);
  const StepTimeModel stm(m, g, o);
  CeilingInputs r;
  r.limits = sim::engine_limits(given, g, o, scheduler);
  r.blocks_for = [&m, &o](int64_t tokens) { return kv_blocks_per_request(m, o, tokens); };
  r.stm = &stm;
  return ceiling(r, scheduler, p);
}

namespace {

RateCeiling ceiling(const CeilingInputs& s, sim::Scheduler scheduler, const ProbeRequests& p) {
  RateCeiling c;
  c.requests = static_cast<int64_t>(p.prompt_tokens.size());
  const int64_t mml = s.limits.max_model_len;
  const int64_t blocks = s.limits.num_blocks;
  // The simulator's admission rules at arrival (sim/engine.cpp, Engine::refuse): a prompt
  // at max_model_len is refused, an output is cut there, a request whose whole length
  // cannot fit the pool is refused, and V0 (continuous, or its chunked scheduler) also
  // refuses a prompt that would leave less than its watermark free in an empty pool.
  const int64_t watermark = s.limits.watermark_blocks;
  const KvTraffic& kv = s.stm->kv_traffic();
  // Blocks grow with the tokens held (windowed layers stop growing at their window), so
  // each limit is a token count, found once: the most tokens whose blocks fit `limit`.
  const auto most_tokens = [&](int64_t limit) {
    int64_t lo = 0, hi = mml;  // blocks_for(lo) <= limit < blocks_for(hi + 1) is sought
    if (s.blocks_for(hi) <= limit) return hi;
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (s.blocks_for(mid) <= limit ? lo : hi) = mid;
    }
    return lo;
  };
  const int64_t fit_tokens = most_tokens(blocks);
  const int64_t admit_tokens = watermark > 0 ? most_tokens(blocks - watermark) : mml;
  double decode_tokens = 0, decode_keys = 0, prefill_tokens = 0, prefill_pairs = 0;
  int64_t shortest_prompt = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < p.prompt_tokens.size(); ++i) {
    const int64_t prompt = p.prompt_tokens[i];
    bool reject = prompt >= mml;
    int64_t output = p.output_tokens[i];
    if (!reject) {
      output = std::min(output, mml - prompt);
      reject = prompt + output - 1 > fit_tokens || prompt > admit_tokens;
    }
    if (reject) {
      ++c.rejected;
      c.rejected_max_model_len += prompt >= mml ? 1 : 0;
      continue;
    }
    shortest_prompt = std::min(shortest_prompt, prompt);
    prefill_tokens += static_cast<double>(prompt);
    prefill_pairs += kv.prefill_pairs(0, prompt);
    // The first output token comes from the prefill; each later one is a decode step
    // over at least the prompt and the tokens before it (decode_keys grows with it).
    decode_tokens += static_cast<double>(output - 1);
    // Decode steps j = 1 .. output - 1 attend to contexts prompt .. prompt + output - 2:
    // the same sum of min(context, window) as prefill_pairs' queries after prompt - 1.
    decode_keys += kv.prefill_pairs(prompt - 1, output - 1);
  }
  // A rejected request counts as infinitely late: p99 TTFT over all n requests is then
  // infinite once more than n - ceil(0.99 n) are rejected (nearest rank, sim/metrics.h),
  // at every arrival rate.
  const auto n = static_cast<double>(c.requests);
  const auto allowed = c.requests - static_cast<int64_t>(std::ceil(0.99 * n));
  c.infeasible = p.ttft_target_s > 0 && c.requests > 0 && c.rejected > allowed;
  if (c.infeasible || scheduler != sim::Scheduler::continuous || !p.arrivals_scale || !(p.last_arrival_s > 0) ||
      decode_tokens + prefill_tokens <= 0)
    return c;

  // V0 runs prefill-only and decode-only steps (sim.h, Scheduler::continuous), so the
  // busy time is at least the decode steps' plus the prefill steps'. Every term of
  // StepTimeModel::step grows at most in proportion to the tokens in the step
  // (rooflines, MoE experts touched, all-reduces and step overheads with a fixed part),
  // so a step of d <= B decoders with K keys takes at least d x phi(K / d), phi(k) =
  // step(B decoders of k keys) / B, convex in k; summed over steps (Jensen) that is at
  // least D x phi(K_total / D). B is the most decoders that can run at once: max-num-seqs,
  // or the pool over the blocks of the shortest prompt, whichever is less. Prefills alike
  // with T = max_num_batched_tokens (whole prompts per step).
  const StepTimeModel& stm = *s.stm;
  // LoRA (--enable-lora): its kernels and adapter loads only lengthen steps, and the
  // simulator may charge fewer adapters than the worst case the step model assumes, so
  // the floor leaves them out (a floor with them could exceed the simulated busy time).
  const LoraStepLoad no_lora{};
  const int64_t by_pool = blocks / std::max<int64_t>(1, s.blocks_for(shortest_prompt));
  c.batch_max = std::max<int64_t>(1, std::min(s.limits.max_num_seqs, by_pool));
  const auto b = static_cast<double>(c.batch_max);
  if (decode_tokens > 0)
    c.decode_busy_s = decode_tokens * stm.step(0, 0, c.batch_max, b * decode_keys / decode_tokens, 1, 0, &no_lora).time_s / b;
  // Prompts served from the prefix cache are not computed: no prefill floor then.
  if (!p.prefix_cached && prefill_tokens > 0) {
    const int64_t t = s.limits.max_num_batched_tokens;
    const auto td = static_cast<double>(t);
    c.prefill_busy_s = prefill_tokens * stm.step(t, td * prefill_pairs / prefill_tokens, 0, 0, 1, 0, &no_lora).time_s / td;
  }
  const double busy_s = c.decode_busy_s + c.prefill_busy_s;
  // Arrivals at k x the workload's rate span last_arrival_s / k. A probe passes only with
  // p99 TTFT within the target and a queue that does not keep growing
  // (cluster::find_max_rate), so at the last arrival at most about a TTFT target's worth of
  // work may still be queued: busy_s <= last_arrival_s / k + ttft, k <= last_arrival_s /
  // (busy_s - ttft). kCeilingSlack allows for what that reasoning leaves out (a p99, not
  // every request; decoding after the first token). Without a TTFT target find_max_rate
  // does not check the queue, so nothing bounds the rate.
  const double drain_s = p.ttft_target_s;
  if (!(drain_s > 0) || !(busy_s > drain_s)) return c;
  c.max_rate_per_s = (1 + kCeilingSlack) * p.base_rate_per_s * p.last_arrival_s / (busy_s - drain_s);
  return c;
}

}  // namespace

}  // namespace kvplan::size
