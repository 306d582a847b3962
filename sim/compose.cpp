// The scheduler's rules: how one engine composes a step (sim.h Scheduler: continuous =
// vLLM V0, chunked = vLLM V1, static batching, SGLang's and TensorRT-LLM's schedulers;
// docs/engines.md "Schedulers" cites each rule's source), and the invariant check.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/engine.h"

namespace kvplan::sim {

double Engine::compose_step(bool back_to_back) {
  preempted_this_step_ = false;
  decode_step_ = false;
  swap_s_ = 0;
  lora_load_step_s_ = 0;
  switch (opt_.scheduler) {
    case Scheduler::continuous: compose_continuous(); break;
    case Scheduler::chunked: compose_chunked(); break;
    case Scheduler::static_batch: compose_static(); break;
    case Scheduler::sglang: compose_sglang(); break;
    case Scheduler::trtllm: compose_trtllm(); break;
    case Scheduler::automatic: throw std::logic_error("simulator: the scheduler was not resolved");
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
  const LoraStepLoad lora = lora_tracked_ ? lora_load() : LoraStepLoad{};
  double dt = swap_s_ + lora_load_step_s_;
  if (spec()) {
    dt += spec_step_s(prefill_tokens, pairs, context, lora_tracked_ ? &lora : nullptr);
  } else {
    const StepTime t = stm.step(prefill_tokens, pairs, n_dec, decode_step_ ? decode_keys(kv) : 0,
                                static_cast<int64_t>(step_prefills_.size()), context, lora_tracked_ ? &lora : nullptr);
    // Async scheduling prepares a step that follows a running one while that one is on
    // the GPU (roofline.cpp); a step after idle has nothing to hide its host work behind.
    dt += back_to_back ? std::max(t.gpu_s, t.host_s) : t.gpu_s + t.host_s;
  }
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
    if (spec()) {
      if (r.spec_horizon != decode_steps_) throw std::logic_error("simulator: a speculative block event off its horizon");
      r.spec_step = decode_steps_;
      r.spec_gen = r.spec_horizon_gen;
      if (!allocate(ev.slot, spec_blocks(r, r.spec_gen) - r.blocks)) continue;
      spec_walk(ev.slot);
      continue;
    }
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
      if (lora_blocked(r)) {  // V0 _schedule_prefills: leftover_waiting_sequences
        waiting_.pop_front();
        lora_skipped_.push_back(s);
        continue;
      }
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
    unskip(waiting_);
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
    if (lora_blocked(r)) {  // V0 _schedule_swapped: leftover_swapped
      swapped_.pop_front();
      lora_skipped_.push_back(s);
      continue;
    }
    const int64_t need = spec() ? spec_blocks(r, r.generated) : table_.blocks_for(r.cached + 1);
    if (pool_.free() < need) break;
    swapped_.pop_front();
    take_blocks(r, need);
    swap_s_ += static_cast<double>(need) * sim_.block_bytes_per_gpu / opt_.host_link_bytes_per_s;
    push_running(s);
    join_decoders(s, true);
  }
  unskip(swapped_);
}

void Engine::compose_chunked() {
  // vLLM V1: running requests first (decoders one token each, then partial prefills),
  // new requests only when nothing was preempted; one token budget for all.
  decode_step_ = true;
  grow_decoders();
  if (!preempted_this_step_) swap_in();
  int64_t left = token_budget_ - n_decoders_ * (1 + spec_k_);  // 1 + k tokens per decoder with speculation
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
    if (lora_blocked(r)) {  // V1: skipped_waiting_requests, back at the queue's head after
      waiting_.pop_front();
      lora_skipped_.push_back(s);
      continue;
    }
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
  unskip(waiting_);
}

void Engine::unskip(std::deque<int32_t>& queue) {
  for (auto it = lora_skipped_.rbegin(); it != lora_skipped_.rend(); ++it) queue.push_front(*it);
  lora_skipped_.clear();
}

void Engine::compose_static() {
  if (n_running_ > 0) {  // decode the batch until its last request ends
    decode_step_ = true;
    return;
  }
  while (!waiting_.empty() && n_running_ < max_seqs_) {
    const int32_t s = waiting_.front();
    EngineRequest& r = at(s);
    if (lora_blocked(r)) {
      waiting_.pop_front();
      lora_skipped_.push_back(s);
      continue;
    }
    const int64_t need = table_.blocks_for(r.prompt + r.output - 1);
    if (pool_.free() < need) break;
    waiting_.pop_front();
    take_blocks(r, need);
    r.reserved = true;
    admit(s, r.prompt + r.generated);
  }
  unskip(waiting_);
}

namespace {

// SGLang's constants: CLIP_MAX_NEW_TOKENS_ESTIMATION (schedule_policy.py, 4096: the
// admission estimate of a request's output is clipped there) and
// global_config.retract_decode_steps (20: a retraction frees room for 20 more decode
// steps of every request left).
constexpr int64_t kSglangClipMaxNewTokens = 4096;
constexpr int64_t kSglangRetractDecodeSteps = 20;

}  // namespace

void Engine::compose_sglang() {
  // Scheduler.get_next_batch_to_run (SGLang 0.4/0.5): a prefill batch when
  // get_new_batch_prefill forms one, else update_running_batch's decode step. The ratio
  // goes back to its initial value when the server is idle (event_loop_normal).
  if (n_running_ == 0) new_token_ratio_ = init_new_token_ratio_;
  sglang_prefill();
  if (!step_prefills_.empty()) {
    // Mixed chunk: the running batch decodes in the same step (mix_with_running),
    // without update_running_batch's ratio decay.
    if (opt_.sglang.enable_mixed_chunk && n_decoders_ > 0) {
      decode_step_ = true;
      sglang_grow_decoders();
    }
    return;
  }
  // update_running_batch clears batch_is_full once the running batch shrank (a request
  // finished or was retracted since it was set); an empty batch makes an idle round,
  // after which the prefill is tried again.
  const auto shrank = [this] {
    // Warm-up requests leave the batch too; the tally counts them apart (RunTally::finish).
    const int64_t left = tally_.counts.completed + tally_.counts.warmup + tally_.counts.preemptions;
    if (left == sglang_left_seen_) return false;
    sglang_batch_full_ = false;
    sglang_left_seen_ = left;
    return true;
  };
  if (shrank() && n_decoders_ == 0) sglang_prefill();
  if (!step_prefills_.empty() || n_decoders_ == 0) return;
  decode_step_ = true;
  if (!sglang_grow_decoders())
    new_token_ratio_ = std::max(new_token_ratio_ - new_token_ratio_decay_, min_new_token_ratio_);
  shrank();
}

void Engine::sglang_prefill() {
  // get_new_batch_prefill.
  const bool try_prefill = !prefilling_.empty() || (!waiting_.empty() && !sglang_batch_full_);
  if (!try_prefill) return;
  if (n_decoders_ >= max_seqs_) {
    sglang_batch_full_ = true;
    return;
  }
  const bool mixed = opt_.sglang.enable_mixed_chunk;
  // PrefillAdder, in tokens (SGLang's pool is token-granular; kvplan takes blocks).
  // rem_total_tokens = free + evictable - (ratio x the running requests' remaining
  // outputs, each clipped) - (admitted prompts + their clipped outputs); with mixed
  // chunks the decoders' tokens come off every budget first.
  const int64_t bs = table_.block_size();
  const int64_t mixed_tokens = mixed ? n_decoders_ : 0;
  int64_t rem_input = limits_.max_prefill_tokens * sim_.opts.dp - mixed_tokens;
  int64_t rem_chunk = token_budget_ - mixed_tokens;
  const auto avail = static_cast<double>(pool_.free() * bs);
  auto total_offset = static_cast<double>(mixed_tokens), cur_offset = static_cast<double>(mixed_tokens);
  for (int32_t s = head_; s >= 0; s = at(s).next) {
    const EngineRequest& r = at(s);
    if (r.state != RequestState::decoding) continue;
    const int64_t produced = r.context_offset + decode_steps_ - r.prompt;
    total_offset += static_cast<double>(std::min(r.output - produced, kSglangClipMaxNewTokens)) * new_token_ratio_;
  }
  // add_chunked_req: the request being chunked continues first, with no memory check.
  for (int32_t s : prefilling_) {
    EngineRequest& r = at(s);
    const int64_t rest = r.prompt + r.generated - r.cached;
    const int64_t chunk = std::min(rest, rem_chunk);
    const int64_t need = table_.blocks_for(r.cached + chunk) - r.blocks;
    if (chunk <= 0 || pool_.free() < need) continue;
    take_blocks(r, need);
    r.chunk = chunk;
    step_prefills_.push_back(s);
    total_offset += static_cast<double>(chunk + (chunk < rest ? 0 : std::min(r.output, kSglangClipMaxNewTokens)));
    cur_offset += static_cast<double>(chunk);
    rem_input -= chunk;
    rem_chunk -= chunk;
  }
  // add_one_req over the waiting queue, FCFS (schedule_policy "fcfs").
  while (!waiting_.empty() && rem_chunk > 0 && rem_input > 0) {
    if (n_running_ >= max_seqs_) {
      sglang_batch_full_ = true;
      break;
    }
    const int32_t s = waiting_.front();
    EngineRequest& r = at(s);
    const int64_t hit = lookup(r);
    const int64_t ext = r.prompt + r.generated - hit;
    const int64_t max_new = std::min(r.output, kSglangClipMaxNewTokens);
    if (static_cast<double>(ext + max_new) >= avail - total_offset) {  // AddReqResult.NO_TOKEN
      sglang_batch_full_ = true;
      break;
    }
    if (ext > rem_input && !step_prefills_.empty()) break;  // AddReqResult.OTHER
    // The last request that does not fit chunked_prefill_size is chunked; a chunk
    // reserves no output yet.
    const int64_t chunk = std::min(ext, rem_chunk);
    const int64_t reserve_out = chunk < ext ? 0 : max_new;
    const int64_t need = table_.blocks_for(hit + chunk);
    if (pool_.free() < need) break;  // whole blocks: up to block_size - 1 tokens more than SGLang
    waiting_.pop_front();
    ref_hits(r);
    take_blocks(r, need);
    admit(s, chunk);
    total_offset += static_cast<double>(chunk + reserve_out);
    cur_offset += static_cast<double>(chunk);
    rem_input -= chunk;
    rem_chunk -= chunk;
    if (avail - total_offset <= 0 || avail - cur_offset <= 0) {  // budget_state: NO_TOKEN
      sglang_batch_full_ = true;
      break;
    }
  }
}

bool Engine::sglang_grow_decoders() {
  // The blocks the decoders need before this step (grow_decoders' events), counted first:
  // SGLang checks the decode step's memory before it allocates (check_decode_mem).
  due_.clear();
  int64_t need = 0;
  while (!heap_.empty() && heap_.top().key <= 2 * decode_steps_) {
    const DecodeEvent ev = heap_.top();
    heap_.pop();
    ++tally_.counts.events;
    if (!live(ev)) continue;
    if (ev.key != 2 * decode_steps_) throw std::logic_error("simulator: a block event was missed");
    const EngineRequest& r = at(ev.slot);
    need += table_.blocks_for(r.context_offset + decode_steps_) - r.blocks;
    due_.push_back(ev);
  }
  bool retracted = false;
  if (need > pool_.free()) {
    // retract_decode: requests sorted by (outputs, -prompt), the last popped first, so
    // the one with the fewest outputs (ties: the longest prompt, then the newest) goes,
    // at least one and until 20 decode steps of the rest fit; never the last one.
    retracted = true;
    const int64_t bs = table_.block_size();
    bool first = true;
    while (n_decoders_ > 1 && (first || pool_.free() * bs < kSglangRetractDecodeSteps * n_decoders_)) {
      first = false;
      int32_t victim = -1;
      int64_t victim_out = 0;
      for (int32_t s = head_; s >= 0; s = at(s).next) {
        const EngineRequest& r = at(s);
        if (r.state != RequestState::decoding) continue;
        const int64_t out = r.context_offset + decode_steps_ - r.prompt;
        if (victim < 0 || out < victim_out || (out == victim_out && r.prompt >= at(victim).prompt)) {
          victim = s;
          victim_out = out;
        }
      }
      sglang_retract(victim);
    }
    // new_token_ratio = min(1, (outputs so far + 20 x requests left) / their max_new_tokens).
    double produced = 0, outputs = 0;
    for (int32_t s = head_; s >= 0; s = at(s).next) {
      const EngineRequest& r = at(s);
      if (r.state != RequestState::decoding) continue;
      produced += static_cast<double>(r.context_offset + decode_steps_ - r.prompt);
      outputs += static_cast<double>(r.output);
    }
    if (outputs > 0)
      new_token_ratio_ =
          std::min(1.0, (produced + static_cast<double>(kSglangRetractDecodeSteps * n_decoders_)) / outputs);
  }
  for (const DecodeEvent& ev : due_) {
    if (!live(ev)) continue;  // retracted
    EngineRequest& r = at(ev.slot);
    const int64_t ctx = r.context_offset + decode_steps_;
    if (!allocate(ev.slot, table_.blocks_for(ctx) - r.blocks)) continue;
    const int64_t final_step = r.prompt + r.output - 1 - r.context_offset;
    const int64_t t = table_.next_growth_tokens(ctx);
    if (t >= 0 && t - r.context_offset <= final_step) push_event(2 * (t - r.context_offset), ev.slot);
  }
  return retracted;
}

void Engine::sglang_retract(int32_t slot) {
  // Back to the end of the waiting queue (_extend_requests_to_queue), its KV freed; it
  // re-prefills its prompt and the tokens it produced (reset_for_retract keeps them).
  preempt(slot);
  waiting_.pop_front();
  waiting_.push_back(slot);
}

void Engine::compose_trtllm() {
  // TensorRT-LLM's PyTorch executor (tensorrt_llm/_torch/pyexecutor/scheduler.py
  // SimpleScheduler: the C++ CapacityScheduler, then the MicroBatchScheduler): the
  // requests in generation take one token each, then contexts in arrival order while
  // max_num_tokens and max_batch_size hold, whole prompts unless chunked context is on
  // (a prompt that does not fit the rest of the budget waits: the micro-batch scheduler
  // stops there). GUARANTEED_NO_EVICT admits a context only when the blocks of its prompt
  // and its whole output are free (the running ones already hold theirs), so it never
  // evicts; MAX_UTILIZATION allocates as decoding goes and pauses the newest started
  // request when the pool is short (as vLLM preempts).
  decode_step_ = true;
  if (opt_.trtllm.capacity_policy != CapacityPolicy::guaranteed_no_evict) grow_decoders();
  const int64_t left = token_budget_ - n_decoders_;
  if (opt_.trtllm.batch_wait.enabled() && trtllm_batch_wait(left)) return;
  trtllm_contexts(left, true);
}

int64_t Engine::trtllm_contexts(int64_t left, bool commit) {
  const bool reserve = opt_.trtllm.capacity_policy == CapacityPolicy::guaranteed_no_evict;
  const bool chunking = opt_.trtllm.enable_chunked_prefill;
  int64_t tokens = 0;
  for (size_t i = 0; i < prefilling_.size() && left > 0;) {  // chunked contexts in progress
    const int32_t s = prefilling_[i];
    EngineRequest& r = at(s);
    const int64_t chunk = std::min(r.prompt + r.generated - r.cached, left);
    if (commit) {
      if (!reserve && !allocate(s, table_.blocks_for(r.cached + chunk) - r.blocks)) continue;
      r.chunk = chunk;
      step_prefills_.push_back(s);
    }
    tokens += chunk;
    left -= chunk;
    ++i;
  }
  if (preempted_this_step_) return tokens;
  // A count only: the pool and the running set as the loop would leave them.
  int64_t free = pool_.free(), running = n_running_;
  for (size_t i = 0; i < waiting_.size() && running < max_seqs_ && left > 0;) {
    const int32_t s = commit ? waiting_.front() : waiting_[i];
    EngineRequest& r = at(s);
    const int64_t hit = lookup(r);
    const int64_t len = r.prompt + r.generated - hit;
    if (!chunking && len > left) break;
    const int64_t chunk = std::min(len, left);
    const int64_t need = table_.blocks_for(reserve ? r.prompt + r.output - 1 : hit + chunk);
    if ((commit ? pool_.free() : free) < need) break;
    if (commit) {
      waiting_.pop_front();
      ref_hits(r);
      take_blocks(r, need);
      r.reserved = reserve;
      admit(s, chunk);
    } else {
      free -= need;
      ++i;
    }
    ++running;
    tokens += chunk;
    left -= chunk;
  }
  return tokens;
}

bool Engine::trtllm_batch_wait(int64_t left) {
  // tensorrt_llm/_torch/pyexecutor/py_executor.py (NVIDIA/TensorRT-LLM PR #7416):
  // _schedule passes the scheduler's context requests through _waiting_requests only when
  // the batch also holds generation requests ("if no generation requests, no need to
  // wait, to avoid dead waiting") and attention DP is off. There
  //   stop_waiting = batch_wait_iters_count >= batch_wait_timeout_iters
  //                  or num_scheduled_tokens >= batch_wait_max_tokens_ratio x max_num_tokens
  // with num_scheduled_tokens the contexts' tokens plus 1 per generation request; stopping
  // schedules the contexts and resets the count, waiting drops them from the batch (their
  // KV is allocated only for the scheduled batch, prepare_resources) and counts one.
  if (n_decoders_ == 0) return false;
  const int64_t context_tokens = trtllm_contexts(left, false);
  if (context_tokens == 0) return false;
  const BatchWait& w = opt_.trtllm.batch_wait;
  const int64_t tokens = context_tokens + n_decoders_;
  if (batch_wait_iters_ >= w.timeout_iters ||
      static_cast<double>(tokens) >= w.max_tokens_ratio * static_cast<double>(token_budget_)) {
    batch_wait_iters_ = 0;
    return false;
  }
  ++batch_wait_iters_;
  ++tally_.counts.batch_wait_steps;
  return true;
}

double Engine::spec_step_s(int64_t prefill_tokens, double pairs, double context, const LoraStepLoad* lora) {
  const SpecTimeModel& m = *sim_.spec_model;
  const KvTraffic& kv = m.kv_traffic();
  const KvTraffic* dkv = m.draft_kv_traffic();
  SpecStepLoad l;
  l.prefill_tokens = prefill_tokens;
  l.prefill_pairs = pairs;
  l.prefill_seqs = static_cast<int64_t>(step_prefills_.size());
  l.prefill_context = context;
  l.decoders = n_decoders_;
  l.drafting = n_decoders_;
  for (int32_t s : step_prefills_) {
    const EngineRequest& r = at(s);
    if (dkv) l.draft_prefill_pairs += dkv->prefill_pairs(r.cached, r.chunk);
    if (r.cached + r.chunk >= r.prompt + r.generated) ++l.drafting;  // sampled its first token: drafts for the next step
  }
  const int64_t k = spec_k_;
  if (!kv.windowed() && (!dkv || !dkv->windowed())) {
    // Without windows a decoder's keys are its context C and its drafts' pairs
    // prefill_pairs(C, k) are affine in C: sums over the decoders from the context sum.
    const auto n = static_cast<double>(n_decoders_), sum = static_cast<double>(context_sum_);
    const auto affine = [&](const KvTraffic& t) {
      const double p0 = t.prefill_pairs(0, k);
      return n * p0 + (t.prefill_pairs(1, k) - p0) * sum;
    };
    l.decode_keys = sum;
    l.verify_pairs = affine(kv);
    if (dkv) {
      l.draft_decode_keys = sum;
      l.draft_verify_pairs = affine(*dkv);
    }
  } else {
    for (int32_t s = head_; s >= 0; s = at(s).next) {
      EngineRequest& r = at(s);
      if (r.state != RequestState::decoding) continue;
      const int64_t c = r.prompt + spec_generated(r);
      l.decode_keys += kv.decode_keys(c);
      l.verify_pairs += kv.prefill_pairs(c, k);
      if (dkv) {
        l.draft_decode_keys += dkv->decode_keys(c);
        l.draft_verify_pairs += dkv->prefill_pairs(c, k);
      }
    }
  }
  return m.step(l, lora).time_s();
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
    if (r.state == RequestState::decoding && spec()) {
      // Between its block events a speculative decoder holds at least its cached tokens'
      // blocks and at most what its next step reserves (spec_blocks).
      ++n_dec;
      int64_t g = r.spec_gen;
      for (int64_t d = r.spec_step; d < decode_steps_; ++d) g += spec_gain(r, d, g);
      ctx += r.prompt + g;
      if (g < 1 || g >= r.output) throw std::logic_error("simulator: decoder context outside its request");
      if (r.blocks < table_.blocks_for(r.prompt + g - 1) || r.blocks > spec_blocks(r, g))
        throw std::logic_error("simulator: speculative decoder holds the wrong block count");
      continue;
    }
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
  if (!stream_phase_.empty()) {
    size_t listed = 0;
    for (size_t p = 0; p < stream_phase_.size(); ++p) {
      listed += stream_phase_[p].size();
      for (size_t i = 0; i < stream_phase_[p].size(); ++i) {
        const EngineRequest& r = at(stream_phase_[p][i]);
        if (r.state != RequestState::decoding || r.stream_phase != static_cast<int32_t>(p) ||
            r.stream_pos != static_cast<int32_t>(i))
          throw std::logic_error("simulator: a streaming list holds a request that is not there");
      }
    }
    if (listed != static_cast<size_t>(n_decoders_)) throw std::logic_error("simulator: decoders missing from the streaming lists");
  }
  if (pool_.used() > pool_.total() || pool_.used() < 0)
    throw std::logic_error("simulator: blocks in use outside [0, pool]");
  if (n_running_ > max_seqs_) throw std::logic_error("simulator: more than max_num_seqs running");
}

}  // namespace kvplan::sim
