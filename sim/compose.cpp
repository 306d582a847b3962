// The scheduler's rules: how one engine composes a step (sim.h Scheduler: continuous =
// vLLM V0, chunked = vLLM V1, static batching), and the invariant check.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/engine.h"

namespace kvplan::sim {

double Engine::compose_step() {
  preempted_this_step_ = false;
  decode_step_ = false;
  swap_s_ = 0;
  switch (opt_.scheduler) {
    case Scheduler::continuous: compose_continuous(); break;
    case Scheduler::chunked: compose_chunked(); break;
    case Scheduler::static_batch: compose_static(); break;
  }
  const int64_t n_dec = decode_step_ ? n_decoders_ : 0;
  if (step_prefills_.empty() && n_dec == 0) return 0;
  const StepTimeModel& stm = *sim_.step_model;
  int64_t prefill_tokens = 0;
  double pairs = 0, context = 0;
  const KvTraffic& kv = stm.kv_traffic();
  for (int32_t s : step_prefills_) {
    const EngineRequest& r = at(s);
    pairs += kv.prefill_pairs(r.cached, r.chunk);
    context += static_cast<double>(r.cached);
    prefill_tokens += r.chunk;
  }
  const double dt = stm.step(prefill_tokens, pairs, n_dec, decode_step_ ? decode_keys(kv) : 0,
                             static_cast<int64_t>(step_prefills_.size()), context).time_s +
                    swap_s_;
  if (!(dt > 0) || !std::isfinite(dt)) throw std::logic_error("simulator: step time is not a positive number");
  return dt;
}

void Engine::grow_decoders() {
  // Blocks due before this decode step, in the order they fell due.
  while (!heap_.empty() && heap_.top().key <= 2 * decode_steps_) {
    const DecodeEvent ev = heap_.top();
    heap_.pop();
    ++tally_.counts.events;
    if (!live(ev)) continue;
    if (ev.key != 2 * decode_steps_) throw std::logic_error("simulator: a block event was missed");
    EngineRequest& r = at(ev.slot);
    const int64_t ctx = r.context_offset + decode_steps_;
    const int64_t need = table_.blocks_for(ctx) - r.blocks;
    if (!allocate(ev.slot, need)) continue;
    const int64_t final_step = r.prompt + r.output - 1 - r.context_offset;
    const int64_t t = table_.next_growth_tokens(ctx);
    if (t >= 0 && t - r.context_offset <= final_step) push_event(2 * (t - r.context_offset), ev.slot);
  }
}

void Engine::compose_continuous() {
  // vLLM V0 (_schedule_default): prefills first, whole prompts, and only when nothing is
  // swapped out; a step with prefills has no decodes. Otherwise all running requests
  // decode (preempting the newest when blocks run out), then swapped requests come back
  // if nothing was preempted.
  if (swapped_.empty()) {
    int64_t tokens = 0;
    while (!waiting_.empty() && n_running_ < max_seqs_) {
      const int32_t s = waiting_.front();
      EngineRequest& r = at(s);
      const int64_t len = r.prompt + r.generated;
      const int64_t hit = lookup(r);
      // The first prompt of a step always fits the token budget.
      if (tokens > 0 && tokens + len - hit > token_budget_) break;
      const int64_t need = table_.blocks_for(len);
      // V0's admission watermark: a prompt is admitted only if 1 % of the pool stays free
      // after it (vllm/core/block_manager.py v0.6, can_allocate: free - required >=
      // watermark_blocks = int(0.01 x num_gpu_blocks)), so running decoders keep room to grow.
      // (With nothing running the reserve protects no one: a recomputed request longer
      // than the pool minus the reserve still gets back in.)
      if (pool_.free() < need || (n_running_ > 0 && pool_.free() - need < watermark_blocks_)) break;
      waiting_.pop_front();
      ref_hits(r);
      take_blocks(r, need);
      admit(s, len - hit);
      tokens += len - hit;
    }
    if (!step_prefills_.empty()) return;  // prefill-only step
  }
  decode_step_ = true;
  grow_decoders();
  if (!preempted_this_step_) swap_in();
}

void Engine::swap_in() {
  // FCFS; a swapped-in request decodes in this step, so it gets the blocks of its next
  // context at once.
  while (!swapped_.empty() && n_running_ < max_seqs_) {
    const int32_t s = swapped_.front();
    EngineRequest& r = at(s);
    const int64_t need = table_.blocks_for(r.cached + 1);
    if (pool_.free() < need) break;
    swapped_.pop_front();
    take_blocks(r, need);
    swap_s_ += static_cast<double>(need) * sim_.block_bytes_per_gpu / opt_.host_link_bytes_per_s;
    push_running(s);
    join_decoders(s, true);
  }
}

void Engine::compose_chunked() {
  // vLLM V1: running requests first (decoders one token each, then partial prefills),
  // new requests only when nothing was preempted; one token budget for all.
  decode_step_ = true;
  grow_decoders();
  if (!preempted_this_step_) swap_in();
  int64_t left = token_budget_ - n_decoders_;
  for (size_t i = 0; i < prefilling_.size() && left > 0;) {
    const int32_t s = prefilling_[i];
    EngineRequest& r = at(s);
    const int64_t chunk = std::min(r.prompt + r.generated - r.cached, left);
    const int64_t need = table_.blocks_for(r.cached + chunk) - r.blocks;
    if (!allocate(s, need)) continue;  // s itself was preempted: prefilling_[i] is the next
    r.chunk = chunk;
    step_prefills_.push_back(s);
    left -= chunk;
    ++i;
  }
  if (preempted_this_step_ || !swapped_.empty()) return;
  while (!waiting_.empty() && n_running_ < max_seqs_ && left > 0) {
    const int32_t s = waiting_.front();
    EngineRequest& r = at(s);
    const int64_t hit = lookup(r);
    const int64_t chunk = std::min(r.prompt + r.generated - hit, left);
    const int64_t need = table_.blocks_for(hit + chunk);
    if (pool_.free() < need) break;
    waiting_.pop_front();
    ref_hits(r);
    take_blocks(r, need);
    admit(s, chunk);
    left -= chunk;
  }
}

void Engine::compose_static() {
  if (n_running_ > 0) {  // decode the batch until its last request ends
    decode_step_ = true;
    return;
  }
  while (!waiting_.empty() && n_running_ < max_seqs_) {
    const int32_t s = waiting_.front();
    EngineRequest& r = at(s);
    const int64_t need = table_.blocks_for(r.prompt + r.output - 1);
    if (pool_.free() < need) break;
    waiting_.pop_front();
    take_blocks(r, need);
    r.reserved = true;
    admit(s, r.prompt + r.generated);
  }
}

// Keys the decoders attend to this step: the sum of their contexts, or with sliding
// layers each context capped per layer (KvTraffic), which needs a pass over them.
double Engine::decode_keys(const KvTraffic& kv) const {
  if (!kv.windowed()) return static_cast<double>(context_sum_);
  double keys = 0;
  for (int32_t s = head_; s >= 0; s = at(s).next) {
    const EngineRequest& r = at(s);
    if (r.state == RequestState::decoding) keys += kv.decode_keys(r.context_offset + decode_steps_);
  }
  return keys;
}

void Engine::check() const {
  // Recounts everything the engine keeps in aggregate.
  int64_t blocks = 0, n_dec = 0, ctx = 0, n = 0;
  for (int32_t s = head_; s >= 0; s = at(s).next) {
    const EngineRequest& r = at(s);
    ++n;
    blocks += r.blocks;
    int64_t held = r.cached;
    if (r.state == RequestState::decoding) {
      ++n_dec;
      ctx += r.context_offset + decode_steps_;
      held = r.context_offset + decode_steps_ - 1;
      const int64_t generated = r.context_offset + decode_steps_ - r.prompt;
      if (generated < 1 || generated >= r.output)
        throw std::logic_error("simulator: decoder context outside its request");
    } else if (r.state != RequestState::prefilling) {
      throw std::logic_error("simulator: a running request is neither prefilling nor decoding");
    }
    // The planner's count at the token count rounded up to whole blocks (sim.h).
    const int64_t charged = r.reserved ? r.prompt + r.output - 1 : held;
    const int64_t rounded = table_.block_index(charged) * table_.block_size();
    const int64_t want = kv_blocks_per_request(*sim_.model, sim_.opts, rounded);
    if (r.blocks != want) throw std::logic_error("simulator: request holds the wrong block count");
    if (r.state == RequestState::prefilling && r.cached >= r.prompt + r.generated)
      throw std::logic_error("simulator: prefill already complete");
  }
  if (n != n_running_ || n_dec != n_decoders_ || ctx != context_sum_ || blocks + held_blocks_ != pool_.used())
    throw std::logic_error("simulator: aggregate bookkeeping disagrees with a recount");
  if (pool_.used() > pool_.total() || pool_.used() < 0)
    throw std::logic_error("simulator: blocks in use outside [0, pool]");
  if (n_running_ > max_seqs_) throw std::logic_error("simulator: more than max_num_seqs running");
}

}  // namespace kvplan::sim
