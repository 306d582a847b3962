// The Simulator (one engine's fixed parts: pool, block table, step times), its limits,
// the drive interface and the lone run (sim.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "sim/engine.h"

namespace kvplan::sim {

std::string_view to_string(Scheduler s) { return kSchedulerNames.name(s); }
std::optional<Scheduler> parse_scheduler(std::string_view s) { return kSchedulerNames.parse(s); }

namespace {

//! --max-model-len, else the model's (what-ifs applied), else kDefaultMaxModelLen.
int64_t max_model_len_of(const ModelConfig& applied, const ServingOptions& o) {
  const int64_t derived = derived_max_model_len(applied);
  return o.max_model_len.value_or(derived > 0 ? derived : kDefaultMaxModelLen);
}

// SGLang's server_args.max_prefill_tokens default.
constexpr int64_t kSglangMaxPrefillTokens = 16384;
// TensorRT-LLM's max_batch_size default (llmapi BaseLlmArgs / BuildConfig).
constexpr int64_t kTrtllmMaxBatchSize = 2048;
// vLLM V0's max_num_batched_tokens floor without chunked prefill (SchedulerConfig).
constexpr int64_t kV0MinBatchedTokens = 2048;
// The chunked budget of an engine that states none (--engine ideal): V1's 8192.
constexpr int64_t kIdealChunkedTokens = 8192;

std::string release_of(const ServingOptions& o) {
  return o.engine_version.empty() ? engine_versions(o.engine).back() : o.engine_version;
}

SchedulerChoice choose(Scheduler requested, const ServingOptions& o, const EngineBatchDefaults& d, int64_t mml) {
  if (requested != Scheduler::automatic) return {requested, "--scheduler " + std::string(to_string(requested))};
  switch (o.engine) {
    case kvplan::Engine::vllm:
      if (!d.vllm_v0)
        return {Scheduler::chunked, "auto: vLLM " + release_of(o) + " (V1) always chunks prefills" +
                                        (o.async_scheduling.value_or(d.async_scheduling) ? ", async scheduling" : "")};
      if (d.chunked_prefill)
        return {Scheduler::chunked, "auto: vLLM " + release_of(o) + " (V0) turns chunked prefill on at max_model_len " +
                                        std::to_string(mml) + " > 32768"};
      return {Scheduler::continuous,
              "auto: vLLM " + release_of(o) + " (V0) without chunked prefill at max_model_len " + std::to_string(mml)};
    case kvplan::Engine::sglang: return {Scheduler::sglang, "auto: SGLang " + release_of(o)};
    case kvplan::Engine::trtllm: return {Scheduler::trtllm, "auto: TensorRT-LLM " + release_of(o) + " in-flight batching"};
    case kvplan::Engine::ideal: break;
  }
  // Speculation is modelled on vLLM V1's scheduler only (sim/engine.h).
  if (o.spec) return {Scheduler::chunked, "auto: --engine ideal chunks prefills, as vLLM V1 does with speculative decoding"};
  return {Scheduler::continuous, "auto: --engine ideal batches continuously"};
}

//! The lone engine behind a benchmark client (SimOptions::max_concurrency, all_at_once):
//! the open-loop run's loop, with the client choosing each request's send time and
//! learning of each end through the engine's observers (chained to the caller's).
SimResult run_client(const Simulator::Impl& impl, const Workload& w, const SimOptions& opt, RequestStream& stream,
                     int64_t count) {
  BenchmarkClient client(stream, opt.max_concurrency, opt.all_at_once);
  ItlTally itl(opt.scheduler == Scheduler::continuous);
  SimOptions o = opt;
  o.on_finish = [&client, &opt](const FinishedRequest& f) {
    client.finished(f);
    if (opt.on_finish) opt.on_finish(f);
  };
  o.on_request = [&client, &opt](const RequestEvent& e) {
    if (e.kind == RequestEventKind::rejected) client.rejected(e.request, e.time_s);
    if (opt.on_request) opt.on_request(e);
  };
  // A chunk of several tokens is one gap (vLLM bench's itl, one per chunk): the engine
  // measures them when the stream interval is above 1, the steps give them otherwise.
  const bool chunks = impl.stream.interval > 1;
  o.on_step = [&itl, &opt, chunks](const StepSample& s) {
    if (!chunks) itl.step(s.time_s, s.duration_s, s.decode_seqs, s.batch);
    if (opt.on_step) opt.on_step(s);
  };
  if (chunks)
    o.on_chunk = [&itl, &opt](double gap_s) {
      itl.gap(gap_s);
      if (opt.on_chunk) opt.on_chunk(gap_s);
    };
  Engine engine(impl, w, o, count, false);
  for (;;) {
    const double t = engine.next_step_s();
    const GeneratedRequest* g = client.peek();
    if (g && g->arrival_s <= t) {
      engine.submit(*g, 0);
      client.pop();
      continue;
    }
    if (t == std::numeric_limits<double>::infinity()) break;
    engine.step();
  }
  // Cannot happen: a slot is held only by a request the engine still has.
  if (engine.has_work() || !client.exhausted()) throw std::logic_error("simulator: the client stalled");
  SimResult r = engine.result();
  r.itl_s = itl.summary();
  return r;
}

EngineLimits limits_of(const ServingOptions& o, const EngineBatchDefaults& d, Scheduler s, int64_t max_model_len,
                       int64_t num_blocks, int64_t block_size) {
  s = choose(s, o, d, max_model_len).scheduler;
  EngineLimits l;
  l.max_model_len = max_model_len;
  l.max_num_seqs = o.max_num_seqs;
  l.num_blocks = num_blocks;
  const int64_t chunked = d.chunked_tokens > 0 ? d.chunked_tokens : kIdealChunkedTokens;
  switch (s) {
    case Scheduler::continuous: l.max_num_batched_tokens = std::max<int64_t>(max_model_len, kV0MinBatchedTokens); break;
    case Scheduler::chunked:
    case Scheduler::trtllm: l.max_num_batched_tokens = chunked; break;
    case Scheduler::sglang: {
      l.max_num_batched_tokens = chunked;
      l.max_prefill_tokens = kSglangMaxPrefillTokens;
      // Scheduler.__init__ / ModelRunner: max_running_requests = min(max_total_num_tokens
      // // 2, req_to_token_pool.size), the pool sized min(max(int(tokens / context_len x
      // 512), 2048), 4096) requests.
      const int64_t tokens = num_blocks * block_size;
      const int64_t pool_reqs = std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(tokens) /
                                                                         static_cast<double>(max_model_len) * 512),
                                                    2048, 4096);
      if (!o.max_num_seqs_given) l.max_num_seqs = std::max<int64_t>(1, std::min(tokens / 2, pool_reqs));
      break;
    }
    case Scheduler::static_batch: l.max_num_batched_tokens = std::numeric_limits<int64_t>::max() / 4; break;
    case Scheduler::automatic: throw std::logic_error("simulator: unresolved scheduler");
  }
  if (s == Scheduler::trtllm && !o.max_num_seqs_given) l.max_num_seqs = kTrtllmMaxBatchSize;
  if (o.max_num_batched_tokens) l.max_num_batched_tokens = *o.max_num_batched_tokens;
  const bool watermark = s == Scheduler::continuous || (s == Scheduler::chunked && d.vllm_v0);
  l.watermark_blocks = watermark ? v0_watermark_blocks(num_blocks) : 0;
  return l;
}

}  // namespace

int64_t v0_watermark_blocks(int64_t pool_blocks) { return static_cast<int64_t>(0.01 * static_cast<double>(pool_blocks)); }

SchedulerChoice resolve_scheduler(Scheduler requested, const ModelConfig& m, const GpuSpec& g, const ServingOptions& o) {
  const ModelConfig applied = apply_what_if(m, o);
  return choose(requested, o, engine_batch_defaults(applied, g, o), max_model_len_of(applied, o));
}

EngineLimits engine_limits(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o, Scheduler s) {
  const ModelConfig applied = apply_what_if(m, o);
  const int64_t mml = max_model_len_of(applied, o);
  return limits_of(o, engine_batch_defaults(applied, g, o), s, mml,
                   capacity(applied, o, memory_budget(applied, g, o), mml).num_blocks, kv_block_tokens(o));
}

EngineLimits Simulator::Impl::limits(Scheduler s, int64_t pool_blocks) const {
  return limits_of(opts, defaults, s, max_model_len, pool_blocks, blocks->block_size());
}

// ------------------------------------------------------------------------- Simulator

Simulator::Simulator(const ModelConfig& m, const GpuSpec& g, const ServingOptions& o)
    : impl_(std::make_unique<Impl>()) {
  validate(m, o, "serving options");
  if (!o.kv_cache)
    throw InputError("serving options", "--no-kv-cache",
                     "a KV cache (the simulator models vLLM's paged KV pool)", "--no-kv-cache");
  Impl& s = *impl_;
  s.model = std::make_shared<const ModelConfig>(apply_what_if(m, o));
  s.opts = o;
  s.step_model = std::make_unique<StepTimeModel>(*s.model, g, o);
  if (o.spec) {
    validate_spec(*s.model, o, "serving options");
    s.spec_model = std::make_unique<SpecTimeModel>(*s.model, g, o);
    s.spec_slots = spec_slots_per_step(*o.spec);
    double p = 1;
    for (const double a : resolve_acceptance(*o.spec, *s.model).rates) {
      p *= a;
      s.spec_at_least_draw.push_back(static_cast<uint64_t>(std::ldexp(p, 53)));
    }
  }
  if (o.block_size < 1) throw InputError("serving options", "block_size", "an integer >= 1");
  s.max_model_len = max_model_len_of(*s.model, o);
  s.defaults = engine_batch_defaults(*s.model, g, o);
  s.stream = stream_delivery(o);
  const MemoryBudget budget = memory_budget(*s.model, g, o);
  const Capacity cap = capacity(*s.model, o, budget, s.max_model_len);
  s.num_blocks = cap.num_blocks;
  s.where = s.model->name + " on " + g.name;
  s.pool_note = !budget.note.empty() ? budget.note : cap.limited_by;
  s.block_bytes_per_gpu = static_cast<double>(kv_block_bytes_per_gpu(*s.model, o));
  s.blocks = std::make_unique<BlockTable>(*s.model, o, s.max_model_len, s.where);
}

Simulator::~Simulator() = default;

int64_t Simulator::num_blocks() const { return impl_->num_blocks; }
int64_t Simulator::block_size() const { return impl_->blocks->block_size(); }
int64_t Simulator::max_model_len() const { return impl_->max_model_len; }
int64_t Simulator::blocks_for(int64_t tokens) const {
  if (tokens < 0 || tokens > impl_->max_model_len + impl_->blocks->block_size())
    return kv_blocks_per_request(*impl_->model, impl_->opts, tokens);
  return impl_->blocks->blocks_for(tokens);
}
EngineLimits Simulator::limits(Scheduler s) const { return impl_->limits(s, impl_->num_blocks); }
Scheduler Simulator::Impl::resolve(Scheduler s) const { return choose(s, opts, defaults, max_model_len).scheduler; }
SchedulerChoice Simulator::scheduler(Scheduler requested) const {
  return choose(requested, impl_->opts, impl_->defaults, impl_->max_model_len);
}
const StepTimeModel& Simulator::step_model() const { return *impl_->step_model; }
const ServingOptions& Simulator::options() const { return impl_->opts; }

SimResult Simulator::run(const Workload& w, const SimOptions& opt) const {
  const int64_t count = opt.requests.value_or(w.requests);
  RequestStream stream(w, opt.seed, opt.rate_scale, count);
  if (opt.max_concurrency || opt.all_at_once) return run_client(*impl_, w, opt, stream, count);
  // The same engine and drive interface as EngineInstance's, without its indirection.
  Engine engine(*impl_, w, opt, count, false);
  std::optional<GeneratedRequest> next = stream.next();
  for (;;) {
    const double t = engine.next_step_s();
    if (next && next->arrival_s <= t) {
      engine.submit(*next, 0);
      next = stream.next();
      continue;
    }
    if (t == std::numeric_limits<double>::infinity()) break;
    engine.step();
  }
  // Cannot happen: every request that was not rejected fits the empty pool.
  if (engine.has_work()) throw std::logic_error("simulator: stalled with requests waiting");
  return engine.result();
}

// ------------------------------------------------------------------------- EngineInstance

EngineInstance::EngineInstance(const Simulator& s, const Workload& w, const SimOptions& opt, int64_t requests,
                               bool hold_finished)
    : engine_(std::make_unique<Engine>(*s.impl_, w, opt, requests, hold_finished)) {}
EngineInstance::~EngineInstance() = default;
EngineInstance::EngineInstance(EngineInstance&&) noexcept = default;
EngineInstance& EngineInstance::operator=(EngineInstance&&) noexcept = default;

void EngineInstance::submit(const GeneratedRequest& g, int64_t preloaded_tokens) {
  engine_->submit(g, preloaded_tokens);
}
double EngineInstance::next_step_s() const { return engine_->next_step_s(); }
bool EngineInstance::step_running() const { return engine_->step_running(); }
void EngineInstance::step() { engine_->step(); }
void EngineInstance::release(int64_t request, double time_s) { engine_->release(request, time_s); }
int64_t EngineInstance::outstanding() const { return engine_->outstanding(); }
int64_t EngineInstance::kv_blocks_used() const { return engine_->blocks_used(); }
int64_t EngineInstance::kv_pool_blocks() const { return engine_->pool_blocks(); }
int64_t EngineInstance::cached_prefix_blocks(const GeneratedRequest& g) const {
  return engine_->cached_prefix_blocks(g);
}
std::shared_ptr<HostTier> EngineInstance::remote_store() const { return engine_->remote_store(); }
bool EngineInstance::has_work() const { return engine_->has_work(); }
const RunTally& EngineInstance::tally() const { return engine_->tally(); }
SimResult EngineInstance::summary(RunTally& t) const { return engine_->summary(t); }
SimResult EngineInstance::result() { return engine_->result(); }

}  // namespace kvplan::sim
