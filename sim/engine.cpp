// One engine: a request's life and the end of a step (sim/engine.h; the step's
// composition is sim/compose.cpp). See sim.h for the semantics and the event order.
#include "sim/engine.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>
#include <list>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/requests.h"

namespace kvplan::sim {

Engine::Engine(const Simulator::Impl& sim, const Workload& w, const SimOptions& opt, int64_t requests,
               bool hold_finished)
    : sim_(sim), table_(*sim.blocks), workload_(w), opt_(with_scheduler(sim, opt)),
      limits_(sim.limits(opt_.scheduler, opt.num_blocks.value_or(sim.num_blocks))),
      wall0_(std::chrono::steady_clock::now()), hold_finished_(hold_finished), request_count_(requests),
      // Data-parallel attention (--dp): the dp ranks' pools, sequence limits and token
      // budgets are pooled into one scheduler (balanced ranks; docs/parallelism.md).
      pool_(opt.num_blocks.value_or(sim.num_blocks) * sim.opts.dp),
      max_seqs_(limits_.max_num_seqs * sim.opts.dp),
      token_budget_(opt_.scheduler == Scheduler::static_batch ? limits_.max_num_batched_tokens
                                                              : limits_.max_num_batched_tokens * sim.opts.dp),
      caching_(sim.opts.enable_prefix_caching.value_or(true) && opt_.scheduler != Scheduler::static_batch),
      watermark_blocks_(limits_.watermark_blocks > 0 ? v0_watermark_blocks(pool_.total()) : 0),
      request_overhead_s_(sim.opts.calibration.request_overhead_s),
      output_overhead_s_(sim.opts.calibration.output_overhead_s),
      output_overhead_per_seq_s_(sim.opts.calibration.output_overhead_per_seq_s),
      api_queue_(opt.api_server_queue),
      async_scheduling_(sim.opts.async_scheduling.value_or(sim.defaults.async_scheduling) &&
                        opt.scheduler == Scheduler::chunked),
      stream_(sim.stream),
      stream_phase_(sim.stream.interval > 1 ? static_cast<size_t>(sim.stream.interval) : 0) {
  if (request_count_ < 0) throw InputError("simulate", "requests", "an integer >= 0");
  if (pool_.total() < 1)
    throw InputError(sim.where, "", "memory left for a KV pool of at least one block (a larger GPU, --tp, "
                     "or quantization)", sim.pool_note.empty() ? "none left" : sim.pool_note);
  if (max_seqs_ < 1) throw InputError("serving options", "max_num_seqs", "an integer >= 1");
  if ((opt_.scheduler == Scheduler::chunked || opt_.scheduler == Scheduler::trtllm) && token_budget_ < max_seqs_)
    throw InputError("serving options", "max_num_batched_tokens",
                     std::string("at least max_num_seqs with the ") + std::string(to_string(opt_.scheduler)) +
                         " scheduler (every running request decodes in each step)",
                     std::to_string(token_budget_) + " < " + std::to_string(max_seqs_));
  if (opt.preemption == Preemption::swap && !(opt.host_link_bytes_per_s > 0))
    throw InputError("simulate", "host_link_bytes_per_s", "a positive number");
  if (const auto tier = host_kv_tier(*sim.model, sim.opts, opt.num_blocks.value_or(sim.num_blocks))) {
    if (!caching_)
      throw InputError("command line", "--kv-offloading-size",
                       "a scheduler with a prefix cache (the host tier is found by prefix; --scheduler static keeps none)",
                       std::string(to_string(opt_.scheduler)));
    if (!(opt.host_link_bytes_per_s > 0))
      throw InputError("simulate", "host_link_bytes_per_s", "a positive number (the host KV tier loads over it)");
    host_.emplace(tier->blocks * sim.opts.dp);  // each DP rank is an engine with its own tier
    tally_.counts.host_tier.capacity_blocks = tier->blocks * sim.opts.dp;
    host_block_load_s_ = static_cast<double>(tier->block_bytes_per_gpu) / opt.host_link_bytes_per_s;
    if (tier->disk_blocks > 0) {
      if (!(opt.disk_bytes_per_s > 0))
        throw InputError("simulate", "disk_bytes_per_s", "a positive number (the disk KV tier loads from it)");
      host_->add_below(tier->disk_blocks * sim.opts.dp);
      tally_.counts.disk_tier.capacity_blocks = tier->disk_blocks * sim.opts.dp;
      if (!(opt.disk_write_bytes_per_s > 0))
        throw InputError("simulate", "disk_write_bytes_per_s", "a positive number (the disk KV tier is written at it)");
      if (!(opt.disk_latency_s >= 0)) throw InputError("simulate", "disk_latency_s", "a number >= 0");
      disk_block_load_s_ = static_cast<double>(tier->block_bytes_per_gpu) / opt.disk_bytes_per_s;
      // The host tier of a DP engine is its ranks' tiers together, so its demotions are
      // spread over their dp drives.
      disk_block_write_s_ = static_cast<double>(tier->block_bytes_per_gpu) / opt.disk_write_bytes_per_s /
                            static_cast<double>(sim.opts.dp);
      disk_latency_s_ = opt.disk_latency_s;
    }
    if (tier->remote_blocks > 0) {
      if (!(opt.remote_bytes_per_s > 0))
        throw InputError("simulate", "remote_bytes_per_s", "a positive number (the remote KV tier loads over it)");
      if (!(opt.remote_latency_s >= 0))
        throw InputError("command line", "--remote-latency-us",
                         "the store's latency per fetch in microseconds beside --kv-remote-size (no public figure "
                         "to default to)",
                         "none");
      // One store for the fleet: the first replica makes it, the others are handed it.
      remote_ = opt.shared_remote ? opt.shared_remote : std::make_shared<HostTier>(tier->remote_blocks);
      tally_.counts.remote_tier.capacity_blocks = remote_->capacity();
      remote_block_load_s_ = static_cast<double>(tier->block_bytes_per_gpu) / opt.remote_bytes_per_s;
      remote_latency_s_ = opt.remote_latency_s;
    }
  }
  if (opt.preemption == Preemption::swap && (opt_.scheduler == Scheduler::sglang || opt_.scheduler == Scheduler::trtllm))
    throw InputError("command line", "--swap",
                     "the continuous or chunked scheduler (SGLang retracts and TensorRT-LLM pauses by recompute)",
                     std::string(to_string(opt_.scheduler)));
  if (const BatchWait& bw = opt.trtllm.batch_wait; bw.enabled()) {
    const std::string flag = bw.timeout_iters > 0 ? "--batch-wait-timeout-iters" : "--batch-wait-max-tokens-ratio";
    if (opt_.scheduler != Scheduler::trtllm)
      throw InputError("command line", flag, "the trtllm scheduler (TensorRT-LLM's PyExecutor batch waiting)",
                       std::string(to_string(opt_.scheduler)));
    // Added by NVIDIA/TensorRT-LLM PR #7416 (September 2025) after the 1.0 release branch.
    const std::string& v = sim.opts.engine_version;
    if (sim.opts.engine == kvplan::Engine::trtllm && (v == "0" || v == "1.0"))
      throw InputError("command line", flag, "TensorRT-LLM 1.1 or later (batch waiting arrived in 1.1)",
                       "trtllm@" + (v == "0" ? std::string("0.x") : v));
    if (bw.timeout_iters < 0 || !(bw.max_tokens_ratio >= 0 && bw.max_tokens_ratio <= 1))
      throw InputError("command line", flag, "iterations >= 0 and a ratio in [0, 1]",
                       std::to_string(bw.timeout_iters) + ", " + std::to_string(bw.max_tokens_ratio));
  }
  if (!(opt.sglang.schedule_conservativeness >= 0) || !std::isfinite(opt.sglang.schedule_conservativeness))
    throw InputError("command line", "--schedule-conservativeness", "a number >= 0",
                     std::to_string(opt.sglang.schedule_conservativeness));
  // SGLang Scheduler.__init__ with global_config's constants (SGLANG_INIT_NEW_TOKEN_RATIO
  // 0.7, SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR 0.14, SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS 600).
  init_new_token_ratio_ = std::min(0.7 * opt.sglang.schedule_conservativeness, 1.0);
  min_new_token_ratio_ = std::min(init_new_token_ratio_ * 0.14, 1.0);
  new_token_ratio_decay_ = (init_new_token_ratio_ - min_new_token_ratio_) / 600;
  new_token_ratio_ = init_new_token_ratio_;
  tally_.warmup_left = opt.warmup_requests;
  if (sim.spec_model) {
    // vLLM V1's scheduler is the one whose speculative bookkeeping is modelled: each
    // running request schedules 1 + k tokens (num_tokens_with_spec) out of the step's
    // token budget and allocate_slots reserves its lookahead slots
    // (vllm/v1/core/sched/scheduler.py).
    if (opt_.scheduler != Scheduler::chunked)
      throw InputError("command line", "--scheduler",
                       "chunked (vLLM V1's scheduler) with speculative decoding: SGLang's, TensorRT-LLM's, V0's and "
                       "static batching's speculative scheduling are not modelled",
                       std::string(to_string(opt_.scheduler)));
    spec_k_ = sim.spec_model->draft_tokens();
    spec_seed_ = opt.seed ^ 0x5bd1e9955bd1e995ULL;  // its own stream: lengths and arrivals are unchanged
    if (token_budget_ < max_seqs_ * (1 + spec_k_))
      throw InputError("serving options", "max_num_batched_tokens",
                       "at least max_num_seqs x (1 + num_speculative_tokens) = " +
                           std::to_string(max_seqs_ * (1 + spec_k_)) +
                           " with speculative decoding (each running request schedules 1 + k tokens a step; vLLM "
                           "would cut the drafts of the last ones, which is not modelled)",
                       std::to_string(token_budget_));
  }
  if (w.lora.given()) {
    if (!sim.opts.lora)
      throw InputError(w.file.empty() ? "workload" : w.file, "lora",
                       "--enable-lora beside a workload whose requests use LoRA adapters", "no --enable-lora");
    if (!(opt.host_link_bytes_per_s > 0))
      throw InputError("simulate", "host_link_bytes_per_s", "a positive number (LoRA adapters load over it)");
    // SGLang's and TensorRT-LLM's schedulers know no max_loras rule (and their engines'
    // LoRA is not modelled: planner/lora.h).
    if (opt_.scheduler == Scheduler::sglang || opt_.scheduler == Scheduler::trtllm)
      throw InputError("command line", "--scheduler",
                       "chunked, continuous or static with a workload on LoRA adapters (vLLM's max_loras rule)",
                       std::string(to_string(opt_.scheduler)));
    const LoraMemory mem = lora_memory(*sim.model, sim.opts);
    lora_tracked_ = true;
    tally_.counts.lora.tracked = true;
    max_loras_ = mem.slots;
    max_cpu_loras_ = mem.cpu_slots;
    // An adapter is copied into its slot at the slot's size (adapters of a lower rank
    // than --max-lora-rank copy less: an upper bound) over the GPU's own host link.
    lora_slot_load_s_ = static_cast<double>(mem.slot_bytes_per_gpu) / opt.host_link_bytes_per_s;
    const auto n = static_cast<size_t>(w.lora.adapters);
    adapter_running_.assign(n, 0);
    gpu_slot_.assign(n, -1);
    slot_adapter_.assign(static_cast<size_t>(max_loras_), -1);
    slot_last_used_.assign(static_cast<size_t>(max_loras_), 0);
    host_at_.assign(n, host_lru_.end());
  }
}

SimOptions Engine::with_scheduler(const Simulator::Impl& sim, SimOptions opt) {
  opt.scheduler = sim.resolve(opt.scheduler);
  return opt;
}

// ------------------------------------------------------------------------- driving

void Engine::schedule() {
  // vLLM V1's async scheduling (EngineCore.step_with_batch_queue with a batch queue of 2,
  // vllm/v1/engine/core.py; AsyncScheduler, vllm/v1/core/sched/async_scheduler.py)
  // composes the step that follows a running step at that step's start, before its
  // outputs are in: a step run back to back after the last one saw only the requests
  // that had arrived when the last one started. When nothing else was there to compose,
  // the engine takes the newcomers at once.
  const bool ahead = async_scheduling_ && now_ == step_end_s_;
  let_in(ahead ? step_start_s_ : now_);
  if (idle() && !inbox_.empty()) let_in(now_ = std::max(now_, inbox_.front().seen_s));
  if (opt_.check_invariants) check();
  if (idle()) return;
  const double dt = compose_step(ahead);
  if (!(dt > 0)) {
    if (!inbox_.empty()) {
      // Nothing could run ahead of them: compose again with them, once the API server
      // has handed the first one over.
      now_ = std::max(now_, inbox_.front().seen_s);
      let_in(now_);
      return;
    }
    stalled_ = true;  // until a submit or a release
    return;
  }
  step_running_ = true;
  step_s_ = dt;
  step_start_s_ = now_;
}

void Engine::let_in(double cutoff_s) {
  size_t kept = 0;
  for (size_t i = 0; i < inbox_.size(); ++i) {
    if (inbox_[i].seen_s <= cutoff_s) {
      arrive(inbox_[i].request, inbox_[i].preloaded, inbox_[i].seen_s);
    } else {
      inbox_[kept++] = inbox_[i];
    }
  }
  inbox_.resize(kept);
}

void Engine::release(int64_t request, double time_s) {
  if (held_.find(request) == held_.end())
    throw std::logic_error("simulator: release of a request that holds no blocks");
  if (step_running_) {
    releases_.push_back(request);
    return;
  }
  if ((stalled_ || idle()) && now_ < time_s) now_ = time_s;
  stalled_ = false;
  free_held(request);
}

void Engine::free_held(int64_t request) {
  const auto it = held_.find(request);
  EngineRequest& r = at(it->second);
  held_blocks_ -= r.blocks;
  free_blocks(r);
  free_slots_.push_back(it->second);
  held_.erase(it);
}

int64_t Engine::cached_prefix_blocks(const GeneratedRequest& g) const {
  const PromptContent content{g.group_key, g.prompt_key, g.shared_tokens};
  if (!caching_ || content.unique()) return 0;
  const int64_t prompt = std::max<int64_t>(g.prompt_tokens, 1);
  // As lookup(): the full blocks of the first P - 1 tokens can hit.
  return cache_.hits(content, (prompt - 1) / table_.block_size(), table_.block_size());
}

SimResult Engine::summary(RunTally& t) const {
  return summarize(t, workload_.slo, pool_.total(), table_.block_size());
}

SimResult Engine::result() {
  if (opt_.check_invariants && pool_.used() != 0) throw std::logic_error("simulator: blocks still in use at the end");
  SimResult r = summarize(tally_, workload_.slo, pool_.total(), table_.block_size());
  r.num_blocks = pool_.total() / sim_.opts.dp;  // per GPU (utilizations are over the pooled ranks)
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
  r.tokens_per_wall_s = r.wall_s > 0 ? static_cast<double>(r.tokens_simulated) / r.wall_s : 0;
  return r;
}

// ------------------------------------------------------------------------- slots, lists, blocks

int32_t Engine::alloc_slot() {
  if (!free_slots_.empty()) {
    const int32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  requests_.emplace_back();
  return static_cast<int32_t>(requests_.size() - 1);
}

void Engine::push_running(int32_t slot) {
  EngineRequest& r = at(slot);
  r.prev = tail_;
  r.next = -1;
  if (tail_ >= 0) at(tail_).next = slot; else head_ = slot;
  tail_ = slot;
  ++n_running_;
  if (r.adapter >= 0) lora_enter(r.adapter);
}

void Engine::unlink_running(int32_t slot) {
  EngineRequest& r = at(slot);
  if (r.prev >= 0) at(r.prev).next = r.next; else head_ = r.next;
  if (r.next >= 0) at(r.next).prev = r.prev; else tail_ = r.prev;
  r.prev = r.next = -1;
  --n_running_;
  if (r.adapter >= 0) lora_leave(r.adapter);
}

// ------------------------------------------------------------------------- speculative decoding

int64_t Engine::spec_gain(const EngineRequest& r, int64_t step, int64_t generated) const {
  // Draft i is kept when drafts 1..i all were: P(at least i kept) = a1 ... ai, so one
  // uniform u keeps the i drafts with u < that product (the products decrease).
  // (Compared as 53-bit integers, u = draw / 2^53, without branches: the outcome is random.
  // splitmix64 over (request key + step) is a counter-based stream.)
  const uint64_t draw = splitmix64(r.spec_key + static_cast<uint64_t>(step)) >> 11;
  int64_t kept = 0;
  for (const uint64_t t : sim_.spec_at_least_draw) kept += draw < t ? 1 : 0;
  return std::min(1 + kept, r.output - generated);
}

int64_t Engine::spec_generated(EngineRequest& r) {
  for (; r.spec_step < decode_steps_; ++r.spec_step) r.spec_gen += spec_gain(r, r.spec_step, r.spec_gen);
  return r.spec_gen;
}

int64_t Engine::spec_blocks(const EngineRequest& r, int64_t generated) const {
  // A step holds the cached context, the 1 + k tokens it verifies and the k lookahead
  // slots (spec_slots_per_step); vLLM caps scheduled tokens at max_model_len.
  return table_.blocks_for(std::min(r.prompt + generated - 1 + sim_.spec_slots, sim_.max_model_len));
}

int64_t& Engine::spec_ahead(int64_t step) {
  const auto i = static_cast<size_t>(step - decode_steps_);
  if (i >= spec_ahead_.size()) {
    std::vector<int64_t> grown(std::max(spec_ahead_.size() * 2, std::bit_ceil(i + 1)), 0);
    for (size_t k = 0; k < spec_ahead_.size(); ++k) grown[k] = spec_ahead_[(spec_head_ + k) & (spec_ahead_.size() - 1)];
    spec_ahead_ = std::move(grown);
    spec_head_ = 0;
  }
  return spec_ahead_[(spec_head_ + i) & (spec_ahead_.size() - 1)];
}

void Engine::spec_walk(int32_t slot) {
  EngineRequest& r = at(slot);
  int64_t step = r.spec_horizon, g = r.spec_horizon_gen;
  // The fewest tokens generated at which a step's slots need more than r.blocks: from the
  // token count that first needs more blocks (BlockTable growth points), none past
  // max_model_len (spec_blocks caps there).
  int64_t more_at = std::numeric_limits<int64_t>::max();
  if (spec_blocks(r, g) > r.blocks) {
    more_at = g;
  } else {
    int64_t t = std::min(r.prompt + g - 1 + sim_.spec_slots, sim_.max_model_len);
    while ((t = table_.next_growth_tokens(t)) >= 0 && t <= sim_.max_model_len && table_.blocks_for(t) <= r.blocks) {}
    if (t >= 0 && t <= sim_.max_model_len) more_at = t - r.prompt + 1 - sim_.spec_slots;
  }
  for (; g < r.output && g < more_at; ++step) {
    const int64_t gain = spec_gain(r, step, g);
    spec_ahead(step) += gain;
    g += gain;
  }
  r.spec_horizon = step;
  r.spec_horizon_gen = g;
  push_event(g >= r.output ? 2 * (step - 1) + 1 : 2 * step, slot);
}

void Engine::spec_join(int32_t slot) {
  EngineRequest& r = at(slot);
  r.spec_key = splitmix64(spec_seed_ + static_cast<uint64_t>(r.id));
  r.spec_step = r.spec_horizon = decode_steps_;
  r.spec_gen = r.spec_horizon_gen = r.generated;
  context_sum_ += r.prompt + r.generated;
  spec_walk(slot);
}

void Engine::spec_leave(EngineRequest& r) {
  int64_t g = spec_generated(r);
  context_sum_ -= r.prompt + g;
  r.generated = g;
  r.cached = r.prompt + g - 1;
  // Its tokens drawn for the steps up to its horizon leave the sums due then.
  for (int64_t step = decode_steps_; step < r.spec_horizon; ++step) {
    const int64_t gain = spec_gain(r, step, g);
    spec_ahead(step) -= gain;
    g += gain;
  }
}

// ------------------------------------------------------------------------- LoRA

bool Engine::lora_blocked(EngineRequest& r) {
  if (r.adapter < 0 || adapter_running_[static_cast<size_t>(r.adapter)] > 0 || adapters_running_ < max_loras_)
    return false;
  if (!r.lora_waited) {
    r.lora_waited = true;
    ++tally_.counts.lora.waited_requests;
  }
  return true;
}

void Engine::lora_enter(int32_t a) {
  const auto ai = static_cast<size_t>(a);
  if (adapter_running_[ai]++ > 0) return;
  ++adapters_running_;
  // vLLM's worker touches every requested adapter in its host cache each step
  // (LRUCacheWorkerLoRAManager._apply_adapters, capacity max_cpu_loras): a running
  // adapter is never the one evicted. An adapter loaded past the cache (from its files)
  // enters it, evicting the least recently used one not running, whose GPU slot empties
  // with it (AdapterLRUCache._on_remove deactivates it).
  if (host_at_[ai] != host_lru_.end()) {
    host_lru_.splice(host_lru_.begin(), host_lru_, host_at_[ai]);
  } else {
    ++tally_.counts.lora.host_misses;
    host_lru_.push_front(a);
    host_at_[ai] = host_lru_.begin();
    if (static_cast<int64_t>(host_lru_.size()) > max_cpu_loras_) {
      auto victim = std::prev(host_lru_.end());
      while (adapter_running_[static_cast<size_t>(*victim)] > 0) --victim;
      const auto vi = static_cast<size_t>(*victim);
      if (gpu_slot_[vi] >= 0) {
        slot_adapter_[static_cast<size_t>(gpu_slot_[vi])] = -1;
        gpu_slot_[vi] = -1;
      }
      host_at_[vi] = host_lru_.end();
      host_lru_.erase(victim);
    }
  }
  if (gpu_slot_[ai] >= 0) return;
  // A GPU slot: an empty one, else the one whose adapter stopped running longest ago
  // (at most max_loras adapters run, this one included, so one is idle).
  int32_t best = -1;
  for (size_t i = 0; i < slot_adapter_.size(); ++i) {
    const int32_t x = slot_adapter_[i];
    if (x < 0) {
      best = static_cast<int32_t>(i);
      break;
    }
    if (adapter_running_[static_cast<size_t>(x)] == 0 &&
        (best < 0 || slot_last_used_[i] < slot_last_used_[static_cast<size_t>(best)]))
      best = static_cast<int32_t>(i);
  }
  if (best < 0) throw std::logic_error("simulator: more adapters running than LoRA slots");
  const auto bi = static_cast<size_t>(best);
  if (slot_adapter_[bi] >= 0) gpu_slot_[static_cast<size_t>(slot_adapter_[bi])] = -1;
  slot_adapter_[bi] = a;
  gpu_slot_[ai] = best;
  // The copy into the slot runs before the step's forward pass (set_active_adapters in
  // the model runner): on the step's critical path.
  ++tally_.counts.lora.gpu_loads;
  tally_.counts.lora.load_s += lora_slot_load_s_;
  lora_load_step_s_ += lora_slot_load_s_;
}

void Engine::lora_leave(int32_t a) {
  const auto ai = static_cast<size_t>(a);
  if (--adapter_running_[ai] > 0) return;
  --adapters_running_;
  slot_last_used_[static_cast<size_t>(gpu_slot_[ai])] = ++lora_clock_;
}

LoraStepLoad Engine::lora_load() const {
  LoraStepLoad l;
  for (int32_t s : step_prefills_) {
    const EngineRequest& r = at(s);
    if (r.adapter < 0) continue;
    l.tokens += static_cast<double>(r.chunk);
    if (r.cached + r.chunk >= r.prompt + r.generated) l.logit_rows += 1;  // its last chunk samples
  }
  if (decode_step_) {  // 1 + k verified rows per decoder with speculation
    l.tokens += static_cast<double>(adapter_decoders_ * (1 + spec_k_));
    l.logit_rows += static_cast<double>(adapter_decoders_ * (1 + spec_k_));
  }
  l.adapters = static_cast<double>(adapters_running_);
  return l;
}

void Engine::emit(RequestEventKind k, const EngineRequest& r, std::optional<double> time_s) const {
  if (!opt_.on_request) return;
  opt_.on_request(
      RequestEvent{k, r.id, time_s.value_or(now_), r.generated, r.prompt, r.output, r.blocks,
                   k == RequestEventKind::first_token || k == RequestEventKind::finished ? delivered_s_ : 0});
}

void Engine::free_blocks(EngineRequest& r) {
  pool_.give_back(r.blocks);
  r.blocks = 0;
  if (caching_) {
    // Tail first, as vLLM frees them (block_pool.free_blocks(reversed(...))): a prompt's
    // last blocks are evicted before its first, keeping shared prefixes longest.
    for (int64_t i = r.cache_blocks - 1; i >= 0; --i)
      cache_.unref(PrefixCache::key(r.content, i, table_.block_size()));
    r.cache_blocks = 0;
  }
}

int64_t Engine::lookup(EngineRequest& r) {
  // KV that arrived from a prefill instance covers all but the last prompt token, which
  // the decode instance recomputes to sample the first output token (vLLM V1,
  // Scheduler._update_waiting_for_remote_kv: "if num_computed_tokens == request.num_tokens:
  // num_computed_tokens -= 1").
  if (r.preloaded > 0) return r.cached = r.preloaded;
  if (!caching_ || r.content.unique()) return 0;
  const int64_t block_size = table_.block_size();
  const int64_t max_blocks = (r.prompt - 1) / block_size;
  const int64_t hit = cache_.hits(r.content, max_blocks, block_size);
  // vLLM asks the connector for the blocks past the GPU cache's hit
  // (get_num_new_matched_tokens after get_computed_blocks).
  r.host_hit_blocks =
      host_ ? host_->hits(r.content, hit, max_blocks, block_size, &r.disk_hit_blocks, remote_.get(), &r.remote_hit_blocks)
            : 0;
  r.cached = (hit + r.host_hit_blocks) * block_size;
  return r.cached;
}

void Engine::ref_hits(EngineRequest& r) {
  if (!caching_ || r.preloaded > 0) return;
  const int64_t hit = r.cached / table_.block_size();
  for (int64_t i = 0; i < hit; ++i) cache_.ref(PrefixCache::key(r.content, i, table_.block_size()));
  r.cache_blocks = hit;
  tally_.counts.cached_prompt_tokens += r.cached;
  if (!host_) return;
  r.host_stored = hit;  // the GPU's hits are not stored again; the loaded ones are there
  if (r.host_hit_blocks == 0) return;
  const int64_t first = hit - r.host_hit_blocks;
  // A disk read waits for the demotions queued on the drive before it (first come first
  // served: an upper bound, as a drive interleaves them), then pays one latency and its
  // bytes. The backlog is then spent: the step's later reads run after this one (their
  // times add up in the step) and the demotions its promotion causes queue from now on.
  charge_disk_writes();
  double disk_s = 0, disk_wait_s = 0;
  if (r.disk_hit_blocks > 0) {
    disk_wait_s = std::max(0.0, disk_write_until_s_ - now_);
    disk_write_until_s_ = std::min(disk_write_until_s_, now_);
    disk_s = disk_wait_s + disk_latency_s_ + static_cast<double>(r.disk_hit_blocks) * disk_block_load_s_;
  }
  if (r.disk_hit_blocks > 0 || r.remote_hit_blocks > 0) {
    // The host tier's blocks are touched before the others are promoted into it, so that a
    // promotion never demotes a block this request is loading.
    for (int64_t i = first; i < hit; ++i)
      if (const uint64_t k = PrefixCache::key(r.content, i, table_.block_size()); host_->contains(k)) host_->store(k);
  }
  if (r.remote_hit_blocks > 0) {
    // The store's hits are touched in its LRU (the blocks found above it are not looked
    // up there: LMCache's lookup stops at the first backend that has the key).
    const int64_t stored = remote_->stored(), evicted = remote_->evicted();
    const HostTier* disk = host_->below();
    for (int64_t i = first; i < hit; ++i)
      if (const uint64_t k = PrefixCache::key(r.content, i, table_.block_size());
          !host_->contains(k) && !(disk && disk->contains(k)))
        remote_->store(k);
    count_remote_writes(stored, evicted);
  }
  for (int64_t i = first; i < hit; ++i) host_->store(PrefixCache::key(r.content, i, table_.block_size()));
  // The blocks cross the host link into the blocks just allocated before the request's
  // chunk can run: charged to the step that schedules it, as a swap-in is. Blocks from the
  // disk are read into host memory first (LMCache's local disk and HiCache's storage
  // backends load through a host buffer), then cross the same link; the store above
  // promoted them to the host tier.
  const double host_s = static_cast<double>(r.host_hit_blocks) * host_block_load_s_;
  // Blocks from the store: one fetch's latency, then its bytes over this GPU's network
  // link into host memory (LMCache's remote backends and HiCache's storage backends
  // fetch into a host buffer), then the host link; the disk's and the store's reads are
  // charged in sequence, as the disk's and the host link's are.
  const double remote_s =
      r.remote_hit_blocks > 0 ? remote_latency_s_ + static_cast<double>(r.remote_hit_blocks) * remote_block_load_s_ : 0;
  swap_s_ += host_s + disk_s + remote_s;
  SimResult::HostTier& t = tally_.counts.host_tier;
  t.hit_tokens += (r.host_hit_blocks - r.disk_hit_blocks - r.remote_hit_blocks) * table_.block_size();
  t.loads += 1;
  t.load_s += host_s;
  if (r.disk_hit_blocks > 0) {
    SimResult::DiskTier& d = tally_.counts.disk_tier;
    d.hit_tokens += r.disk_hit_blocks * table_.block_size();
    d.loads += 1;
    d.load_s += disk_s;
    d.wait_s += disk_wait_s;
  }
  if (r.remote_hit_blocks > 0) {
    SimResult::RemoteTier& m = tally_.counts.remote_tier;
    m.hit_tokens += r.remote_hit_blocks * table_.block_size();
    m.loads += 1;
    m.load_s += remote_s;
  }
}

void Engine::charge_disk_writes() {
  const HostTier* disk = host_->below();
  if (!disk || disk->stored() == disk_written_) return;
  // LMCache's local disk backend writes on its own thread (submit_put_task): no step time,
  // but the drive's.
  const double write_s = static_cast<double>(disk->stored() - disk_written_) * disk_block_write_s_;
  disk_written_ = disk->stored();
  disk_write_until_s_ = std::max(disk_write_until_s_, now_) + write_s;
  tally_.counts.disk_tier.write_s += write_s;
}

void Engine::count_remote_writes(int64_t stored_before, int64_t evicted_before) {
  SimResult::RemoteTier& m = tally_.counts.remote_tier;
  m.stored_blocks += remote_->stored() - stored_before;
  m.evicted_blocks += remote_->evicted() - evicted_before;
}

void Engine::store_to_host(EngineRequest& r, int64_t full) {
  const int64_t block_size = table_.block_size();
  // Full prompt blocks have content a later prompt can hit; the rest (a unique prompt's,
  // the output's) only take room.
  const int64_t named = std::min(full, r.prompt / block_size);
  // The store is written through as the host tier is (LMCache's StorageManager puts each
  // chunk to every backend it has, the remote one on its own thread): no step time.
  const int64_t remote_stored = remote_ ? remote_->stored() : 0, remote_evicted = remote_ ? remote_->evicted() : 0;
  for (; r.host_stored < named; ++r.host_stored) {
    const uint64_t k = PrefixCache::key(r.content, r.host_stored, block_size);
    if (k == 0) break;
    host_->store(k);
    if (remote_) remote_->store(k);
    ++tally_.counts.host_tier.stored_blocks;
  }
  if (full > r.host_stored) {
    host_->store_anonymous(full - r.host_stored);
    if (remote_) remote_->store_anonymous(full - r.host_stored);
    tally_.counts.host_tier.stored_blocks += full - r.host_stored;
    r.host_stored = full;
  }
  tally_.counts.host_tier.evicted_blocks = host_->evicted();
  if (const HostTier* disk = host_->below()) {
    tally_.counts.disk_tier.stored_blocks = disk->stored();
    tally_.counts.disk_tier.evicted_blocks = disk->evicted();
  }
  charge_disk_writes();
  if (remote_) count_remote_writes(remote_stored, remote_evicted);
}

void Engine::register_blocks(EngineRequest& r) {
  if (!caching_) return;
  const int64_t full = std::min(r.cached, r.prompt) / table_.block_size();
  if (host_) store_to_host(r, full);
  if (r.content.unique()) return;
  for (; r.cache_blocks < full; ++r.cache_blocks) {
    const uint64_t k = PrefixCache::key(r.content, r.cache_blocks, table_.block_size());
    if (k == 0) break;  // the rest of the prompt is unique
    cache_.ref(k);
  }
}

// ------------------------------------------------------------------------- a request's life

void Engine::arrive(const GeneratedRequest& g, int64_t preloaded, double seen_s) {
  tally_.arrival(g.arrival_s);
  ++tally_.counts.events;
  const int32_t s = alloc_slot();
  EngineRequest& r = at(s);
  const uint32_t epoch = r.epoch;
  r = EngineRequest{};
  r.epoch = epoch + 1;
  r.id = g.index;
  r.arrival_s = g.arrival_s;
  r.seen_s = seen_s;
  r.prompt = std::max<int64_t>(g.prompt_tokens, 1);
  r.output = std::max<int64_t>(g.output_tokens, 1);
  r.content = PromptContent{g.group_key, g.prompt_key, g.shared_tokens};
  r.adapter = lora_tracked_ ? g.adapter : -1;
  r.preloaded = std::clamp<int64_t>(preloaded, 0, r.prompt - 1);
  r.state = RequestState::waiting;
  emit(RequestEventKind::arrived, r, r.arrival_s);
  if (refuse(r)) {
    SimResult& c = tally_.counts;
    ++c.rejected;
    ++(r.prompt >= sim_.max_model_len || prompt_over_token_budget(r) ? c.rejected_max_model_len : c.rejected_pool);
    emit(RequestEventKind::rejected, r);
    r.state = RequestState::free;
    free_slots_.push_back(s);
    return;
  }
  waiting_.push_back(s);
}

bool Engine::refuse(EngineRequest& r) {
  // vLLM rejects prompts that leave no room for an output token and stops generation at
  // max_model_len; a request whose full length cannot fit the pool could never finish.
  if (r.prompt >= sim_.max_model_len || prompt_over_token_budget(r)) return true;
  const int64_t cap = sim_.max_model_len - r.prompt;
  if (r.output > cap) {
    r.output = cap;
    ++tally_.counts.truncated;
  }
  if (table_.blocks_for(r.prompt + r.output - 1) > pool_.total()) return true;
  if (spec() && r.output > 1 && spec_blocks(r, r.output - 1) > pool_.total()) return true;  // its last step's slots
  // V0 never admits a prompt that would leave less than the watermark (AllocStatus.NEVER).
  return watermark_blocks_ > 0 && table_.blocks_for(r.prompt) > pool_.total() - watermark_blocks_;
}

bool Engine::prompt_over_token_budget(const EngineRequest& r) const {
  // TensorRT-LLM without chunked context refuses a prompt longer than max_num_tokens
  // (tensorrt_llm/llmapi/llm.py _check_arguments: "The sum of prompt length (...), query
  // length (...) should not exceed max_num_tokens (...)").
  return opt_.scheduler == Scheduler::trtllm && !opt_.trtllm.enable_chunked_prefill &&
         r.prompt > limits_.max_num_batched_tokens;
}

void Engine::admit(int32_t slot, int64_t chunk) {
  EngineRequest& r = at(slot);
  r.state = RequestState::prefilling;
  r.chunk = chunk;
  if (!r.was_scheduled) {
    r.was_scheduled = true;
    r.scheduled_s = now_;
  }
  push_running(slot);
  prefilling_.push_back(slot);
  step_prefills_.push_back(slot);
  emit(RequestEventKind::scheduled, r);
}

void Engine::join_decoders(int32_t slot, bool covers_next) {
  EngineRequest& r = at(slot);
  const int64_t next_ctx = r.prompt + r.generated;
  r.state = RequestState::decoding;
  r.context_offset = next_ctx - decode_steps_;
  ++n_decoders_;
  if (r.adapter >= 0) ++adapter_decoders_;
  if (spec()) {
    spec_join(slot);
    return;
  }
  context_sum_ += next_ctx;
  if (!stream_phase_.empty()) stream_join(slot);
  const int64_t last_step = decode_steps_ + (r.output - 1 - r.generated);
  push_event(2 * last_step + 1, slot);
  if (!r.reserved) {
    const int64_t t = table_.next_growth_tokens(covers_next ? next_ctx : next_ctx - 1);
    if (t >= 0 && t - r.context_offset <= last_step) push_event(2 * (t - r.context_offset), slot);
  }
}

void Engine::preempt(int32_t slot) {
  EngineRequest& r = at(slot);
  unlink_running(slot);
  r.preloaded = 0;  // its transferred KV is gone with its blocks: recomputed here
  if (r.state == RequestState::decoding) {
    --n_decoders_;
    if (r.adapter >= 0) --adapter_decoders_;
    stream_leave(r);
    if (spec()) {
      spec_leave(r);
    } else {
      context_sum_ -= r.context_offset + decode_steps_;
      r.generated = r.context_offset + decode_steps_ - r.prompt;  // its context in this step is P + g
      r.cached = r.context_offset + decode_steps_ - 1;
    }
  } else if (r.state == RequestState::prefilling) {
    prefilling_.erase(std::find(prefilling_.begin(), prefilling_.end(), slot));
    auto it = std::find(step_prefills_.begin(), step_prefills_.end(), slot);
    if (it != step_prefills_.end()) step_prefills_.erase(it);
    r.chunk = 0;
  }
  ++r.epoch;
  ++tally_.counts.preemptions;
  preempted_this_step_ = true;
  if (opt_.preemption == Preemption::swap && r.state == RequestState::decoding) {
    swap_s_ += static_cast<double>(r.blocks) * sim_.block_bytes_per_gpu / opt_.host_link_bytes_per_s;
    free_blocks(r);
    r.state = RequestState::swapped;
    swapped_.push_back(slot);
  } else {
    free_blocks(r);
    r.cached = 0;
    r.state = RequestState::waiting;
    waiting_.push_front(slot);
  }
  emit(RequestEventKind::preempted, r);
}

void Engine::finish(int32_t slot) {
  EngineRequest& r = at(slot);
  unlink_running(slot);
  if (r.state == RequestState::decoding) {
    --n_decoders_;
    if (r.adapter >= 0) --adapter_decoders_;
    stream_leave(r);
    // After its last step a decoder's context is its whole length (with speculation its
    // last gain was capped there).
    context_sum_ -= spec() ? r.prompt + r.output : r.context_offset + decode_steps_;
  } else if (r.state == RequestState::prefilling) {
    prefilling_.erase(std::find(prefilling_.begin(), prefilling_.end(), slot));
  }
  // The blocks its output filled were written through as they filled (vLLM's connector
  // stores every full block of the request's tokens); nothing can hit them.
  if (host_) store_to_host(r, (r.prompt + r.output - 1) / table_.block_size());
  if (hold_finished_) {
    held_blocks_ += r.blocks;
    held_.emplace(r.id, slot);
  } else {
    free_blocks(r);
  }
  ++r.epoch;
  r.state = RequestState::free;
  emit(RequestEventKind::finished, r);
  if (!hold_finished_) free_slots_.push_back(slot);
  FinishedRequest f;
  f.index = r.id;
  f.prompt_tokens = r.prompt;
  f.output_tokens = r.output;
  f.finish_s = now_;
  // Latencies run from the client's send to its delivery of the first and the last
  // token. Without the API server's queue the per-request time outside the engine loop
  // (HTTP, tokenization) is a delay that adds to both.
  const double outside_s = api_queue_ ? 0 : request_overhead_s_;
  f.ttft_s = r.first_token_s - r.arrival_s + outside_s;
  f.e2e_s = delivered_s_ - r.arrival_s + outside_s;
  f.queued_s = r.scheduled_s - r.seen_s;
  if (r.output > 1) f.tpot_s = (delivered_s_ - r.first_token_s) / static_cast<double>(r.output - 1);
  tally_.finish(f, request_count_, workload_.slo);
  if (opt_.on_finish) opt_.on_finish(f);
}

// ------------------------------------------------------------------------- the step's end

void Engine::end_step() {
  step_running_ = false;
  const int64_t n_dec = decode_step_ ? n_decoders_ : 0;
  account_step(step_s_);
  // The decoders whose last token came out of the step are known before the step's
  // outputs are delivered (a finished request sends its last chunk whatever the stream
  // interval) and leave once they are.
  if (n_dec > 0) retire_decoders();
  deliver_outputs(n_dec);
  for (const int32_t slot : finishing_) finish(slot);
  finishing_.clear();
  advance_prefills();
  for (int64_t request : releases_) free_held(request);
  releases_.clear();
}

void Engine::account_step(double dt) {
  const int64_t n_dec = decode_step_ ? n_decoders_ : 0;
  const int64_t batch = n_dec + static_cast<int64_t>(step_prefills_.size());
  SimResult& c = tally_.counts;
  c.batch_max = std::max(c.batch_max, batch);
  tally_.batch_time += static_cast<double>(batch) * dt;
  tally_.blocks_time += static_cast<double>(pool_.used()) * dt;
  tally_.adapters_time += static_cast<double>(adapters_running_) * dt;
  c.busy_s += dt;
  ++c.steps;
  ++c.events;
  now_ += dt;
  step_end_s_ = now_;
  if (opt_.on_step) {
    int64_t prefill_tokens = 0;
    for (int32_t s : step_prefills_) prefill_tokens += at(s).chunk;
    opt_.on_step(StepSample{now_, dt, prefill_tokens, n_dec, batch, pool_.used(),
                            static_cast<int64_t>(waiting_.size() + swapped_.size()), n_running_});
  }
}

void Engine::deliver_outputs(int64_t decoders) {
  // vLLM V1: EngineCore ends the step with one EngineCoreOutput per sequence that
  // produced a token (Scheduler.update_from_output) and sends them over ZMQ to the API
  // server process, whose output handler (AsyncLLM._run_output_handler ->
  // OutputProcessor.process_outputs: detokenize, build RequestOutput, wake the stream)
  // takes one step's outputs after the other while the engine runs the next step. It is
  // a task on the API server's one asyncio loop, beside the requests' input processing
  // (AsyncLLM.add_request -> process_inputs, tokenization; SimOptions::api_server_queue):
  // the loop switches tasks at each await, so a step's outputs are processed between
  // two requests' inputs, not behind the whole backlog of a burst, and the time they take
  // delays the requests still waiting for the server. A step with no sampled token (only
  // partial prefill chunks) sends nothing to deliver. With a stream interval above 1 a
  // sequence's token goes out only when the engine's rule sends it (StreamDelivery;
  // SGLang's stream_output_generation and TensorRT-LLM's _handle_responses skip the
  // others before they reach the output path, vLLM's OutputProcessor keeps them back
  // before building a RequestOutput): the rest wait in the engine at no output cost.
  int64_t outputs = decoders;
  size_t due = 0;
  if (!stream_phase_.empty() && decoders > 0) {
    due = stream_phase_due();
    outputs = static_cast<int64_t>(stream_phase_[due].size());
    for (const int32_t s : finishing_) outputs += at(s).stream_phase == static_cast<int32_t>(due) ? 0 : 1;
  }
  for (int32_t s : step_prefills_) {
    const EngineRequest& r = at(s);
    if (r.cached + r.chunk >= r.prompt + r.generated && stream_.sends(r.generated + 1, r.output)) ++outputs;
  }
  if (outputs == 0) return;
  const double busy_s = output_overhead_s_ + output_overhead_per_seq_s_ * static_cast<double>(outputs);
  delivered_s_ = std::max(now_, output_free_s_) + busy_s;
  output_free_s_ = delivered_s_;
  if (!stream_phase_.empty() && decoders > 0) {
    for (const int32_t s : stream_phase_[due]) stream_chunk(at(s));
    for (const int32_t s : finishing_)
      if (at(s).stream_phase != static_cast<int32_t>(due)) stream_chunk(at(s));
  }
  if (!api_queue_ || !(busy_s > 0) || api_free_s_ <= now_) return;
  // Inputs not yet handed over move back by the outputs' time (from the newest: the
  // inbox is in handover order).
  api_free_s_ += busy_s;
  for (auto it = inbox_.rbegin(); it != inbox_.rend() && it->seen_s > now_; ++it) it->seen_s += busy_s;
}

void Engine::retire_decoders() {
  int64_t gained = n_decoders_;
  if (spec()) {
    gained = std::exchange(spec_ahead_[spec_head_], 0);
    spec_head_ = (spec_head_ + 1) & (spec_ahead_.size() - 1);
    tally_.counts.spec.decoder_steps += n_decoders_;
    tally_.counts.spec.decoded_tokens += gained;
  }
  tally_.counts.tokens_simulated += gained;
  ++decode_steps_;
  context_sum_ += gained;
  // Requests whose last token came out of this step leave.
  while (!heap_.empty() && heap_.top().key <= 2 * decode_steps_ - 1) {
    const DecodeEvent ev = heap_.top();
    heap_.pop();
    ++tally_.counts.events;
    if (!live(ev)) continue;
    EngineRequest& r = at(ev.slot);
    r.generated = r.output;
    finishing_.push_back(ev.slot);
  }
}

size_t Engine::stream_phase_due() const {
  const int64_t n = stream_.interval;
  return static_cast<size_t>(((-decode_steps_) % n + n) % n);
}

void Engine::stream_join(int32_t slot) {
  EngineRequest& r = at(slot);
  // After decode step D (decode_steps_ == D once it ran) it holds g = context_offset + D -
  // prompt tokens, sent when g - offset is a multiple of N.
  const int64_t n = stream_.interval;
  const int64_t phase = ((r.context_offset - r.prompt - stream_.offset) % n + n) % n;
  std::vector<int32_t>& list = stream_phase_[static_cast<size_t>(phase)];
  r.stream_phase = static_cast<int32_t>(phase);
  r.stream_pos = static_cast<int32_t>(list.size());
  list.push_back(slot);
}

void Engine::stream_leave(EngineRequest& r) {
  if (r.stream_phase < 0) return;
  std::vector<int32_t>& list = stream_phase_[static_cast<size_t>(r.stream_phase)];
  const int32_t moved = list.back();
  list[static_cast<size_t>(r.stream_pos)] = moved;
  at(moved).stream_pos = r.stream_pos;
  list.pop_back();
  r.stream_phase = -1;
}

void Engine::stream_chunk(EngineRequest& r) {
  if (opt_.on_chunk) opt_.on_chunk(delivered_s_ - r.chunk_s);
  r.chunk_s = delivered_s_;
}

void Engine::advance_prefills() {
  for (int32_t s : step_prefills_) {
    EngineRequest& r = at(s);
    tally_.counts.tokens_simulated += r.chunk;
    r.cached += r.chunk;
    r.chunk = 0;
    register_blocks(r);
    if (r.cached < r.prompt + r.generated) continue;  // more chunks to come
    ++r.generated;
    if (!r.has_first_token) {
      r.has_first_token = true;
      r.first_token_s = r.chunk_s = delivered_s_;
      emit(RequestEventKind::first_token, r);
    } else if (!stream_phase_.empty() && stream_.sends(r.generated, r.output)) {
      stream_chunk(r);  // the token of a preempted request's prefill again
    }
    if (r.generated >= r.output) {
      finish(s);
    } else {
      prefilling_.erase(std::find(prefilling_.begin(), prefilling_.end(), s));
      join_decoders(s);
    }
  }
  step_prefills_.clear();
}

}  // namespace kvplan::sim
