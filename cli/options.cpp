#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string_view>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/spec_options.h"
#include "io/config_io.h"
#include "planner/planner.h"
#include "planner/units.h"

namespace kvplan::cli {

namespace {
const std::string kWhere = "command line";

std::string opt(const std::string& name) { return "--" + name; }

std::vector<std::string> values(const po::variables_map& vm, const std::string& name) {
  if (!vm.count(name)) return {""};
  return split_list(vm[name].as<std::string>(), opt(name));
}

template <typename T, typename Parse>
T parse_enum(const std::string& s, const std::string& option, const std::string& expected, Parse parse) {
  const auto v = parse(s);
  if (!v) throw InputError(kWhere, option, expected, "'" + s + "'");
  return *v;
}
}  // namespace

const char* const kListHelp =
    "Lists: comma-separated values (--tp 1,2 --kv-cache-dtype fp16,int4) expand to one row or\n"
    "candidate per combination (simulate takes one value each); each value may be given once.\n"
    "Numbers: 4096 or 4_096; 4,096 only in an option that takes one value. In a list, a comma\n"
    "between 1-3 digits and exactly 3 digits (4,096 or 64,256) reads both as a thousands\n"
    "separator and as a list, and is refused: write 4096 for the number or '64, 256' (a space\n"
    "after the comma) for the list.\n";

Format parse_format(const std::string& s) {
  if (const auto f = kFormatNames.parse(s)) return *f;
  throw InputError(kWhere, "--format", kFormatNames.expected(), "'" + s + "'");
}

namespace {
bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

//! "4,096" or "4_096": 1-3 digits, then groups of exactly three after one separator kind.
std::optional<std::string> ungroup(const std::string& s, char sep) {
  if (s.find(sep) == std::string::npos) return std::nullopt;
  std::string digits;
  size_t start = 0;
  for (bool first = true;; first = false) {
    const size_t at = s.find(sep, start);
    const std::string_view group = std::string_view(s).substr(start, at == std::string::npos ? std::string::npos : at - start);
    if (!all_digits(group) || (first ? group.size() > 3 : group.size() != 3)) return std::nullopt;
    digits += group;
    if (at == std::string::npos) return digits;
    start = at + 1;
  }
}
}  // namespace

std::vector<std::string> split_list(const std::string& s, const std::string& option) {
  // "4,096" reads as 4096 with a thousands separator (kvplan prints numbers that way) and
  // as the list 4, 96: refuse rather than guess. A comma is ambiguous when 1-3 bare digits
  // precede it and exactly three bare digits follow it up to the next comma or the end.
  std::vector<std::string_view> raw;
  for (size_t start = 0;;) {
    const size_t comma = s.find(',', start);
    raw.push_back(std::string_view(s).substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (size_t i = 1; i < raw.size(); ++i)
    if (all_digits(raw[i - 1]) && raw[i - 1].size() <= 3 && all_digits(raw[i]) && raw[i].size() == 3)
      throw InputError(kWhere, option,
                       std::string(raw[i - 1]) + std::string(raw[i]) + " or " + std::string(raw[i - 1]) + "_" +
                           std::string(raw[i]) + " for one number, or '" + std::string(raw[i - 1]) + ", " +
                           std::string(raw[i]) + "' (a space after the comma) for a list",
                       "'" + s + "', which reads both as one number and as a list");
  std::vector<std::string> out;
  for (const auto r : raw) {
    std::string item(r);
    const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    item = b == std::string::npos ? "" : item.substr(b, e - b + 1);
    if (item.empty()) throw InputError(kWhere, option, "a value or a comma-separated list of values", "'" + s + "'");
    if (std::find(out.begin(), out.end(), item) != out.end())
      throw InputError(kWhere, option, "each value once", "'" + item + "' twice in '" + s + "'");
    out.push_back(item);
  }
  return out;
}

int64_t parse_int_option(const std::string& s, const std::string& option, int64_t min_value) {
  // Digit grouping is accepted where it cannot be a list: "4_096" always, "4,096" in an
  // option that takes one value (a list option has split it, or refused it, already).
  std::string text = s;
  if (auto d = ungroup(s, '_')) text = *d;
  else if (auto c = ungroup(s, ',')) text = *c;
  size_t used = 0;
  long long v = 0;
  bool too_big = false;
  try {
    v = std::stoll(text, &used);
  } catch (const std::out_of_range&) {
    too_big = text[0] != '-';
  } catch (const std::exception&) {
    used = 0;
  }
  // Digits beyond the 64-bit range: the bound they pass is the upper one, so name it.
  if (too_big && !text.empty() && all_digits(text))
    throw InputError(kWhere, option, "an integer from " + std::to_string(min_value) + " to 9223372036854775807 (2^63 - 1)",
                     "'" + s + "'");
  if (used != text.size() || text.empty() || !all_digits(text.substr(text[0] == '-' ? 1 : 0)) || v < min_value)
    throw InputError(kWhere, option, "an integer >= " + std::to_string(min_value), "'" + s + "'");
  return v;
}

namespace {
//! A bound as the code writes it: 0.001, 1e-9, 1e12 (fmt's {:g} gives 1e-09 and 1e+12).
std::string bound_text(double v) {
  std::string t = fmt::format("{:g}", v);
  const size_t e = t.find('e');
  if (e == std::string::npos) return t;
  std::string exp = t.substr(e + 1);
  const bool negative = exp[0] == '-';
  exp = exp.substr(exp[0] == '-' || exp[0] == '+' ? 1 : 0);
  exp.erase(0, std::min(exp.find_first_not_of('0'), exp.size() - 1));
  return t.substr(0, e + 1) + (negative ? "-" : "") + exp;
}
}  // namespace

double parse_num_option(const std::string& s, const std::string& option, double min_value, double max_value) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || !(v >= min_value && v <= max_value))
    throw InputError(kWhere, option, "a number in [" + bound_text(min_value) + ", " + bound_text(max_value) + "]", "'" + s + "'");
  return v;
}

void add_serving_options(po::options_description& desc) {
  const auto s = [] { return po::value<std::string>(); };
  desc.add_options()
      ("tensor-parallel-size,tp", s(), "GPUs per tensor-parallel group (list ok)")
      ("pipeline-parallel-size,pp", s(), "pipeline stages (list ok)")
      ("dtype", s(), "weights and activations: fp32|fp16|bf16 (default: the model's)")
      ("quantization", s(), ("weights: auto|" + kWeightQuantNames.choices() +
                             " (auto and none: as the checkpoint is stored; a quantized checkpoint takes only its own method)")
                                .c_str())
      ("kv-cache-dtype", s(), "auto|fp16|bf16|fp8|int8|int4|int2")
      ("kv-quant", s(), ("quantized KV metadata: " + kKvQuantNames.choices()).c_str())
      ("kv-group", s(), "quantization group size (per-token: 128, kivi: 32)")
      ("kv-residual", s(), "fp16 residual tokens (kivi: 128)")
      ("block-size", s(), "paged KV block size in tokens (16)")
      ("gpu-memory-utilization", s(), "fraction of GPU memory the engine may use (0.9; --engine sglang: SGLang's own default)")
      ("max-model-len", s(), "longest request, tokens")
      ("max-num-seqs", s(), "most sequences in one batch (256; --engine vllm: vLLM's default, 1024 on >= 70 GiB GPUs other than A100)")
      ("max-num-batched-tokens", s(), "most tokens in one step (engine default)")
      ("engine", s(), ("memory accounting: " + kEngineNames.choices() + ", optionally @VERSION (vllm@0.10)").c_str())
      ("entry-point", s(), "vLLM entry point whose defaults apply: server (vllm serve) or llm (offline LLM())")
      ("kv-heads", s(), "what-if: replace num_key_value_heads")
      ("no-kv-cache", po::bool_switch(), "naive recompute, no cache (the seed's baseline)")
      ("calibration", s(), "time-model profile: a kvplan.calibration/1 or /2 file, a catalog name, or none for the datasheet roofline (default h100-sxm-vllm; docs/calibration.md)")
      ("enable-prefix-caching", s(), "on|off: reuse cached prompt blocks (default on, as vLLM V1, SGLang, TRT-LLM)")
      ("kv-offloading-size", s(), "vLLM KV offloading: GiB (2^30 bytes) of host memory for KV blocks below the GPU pool, the engine's over its tp x pp GPUs (0 = off; list ok; docs/kv-tiers.md)")
      ("kv-offloading-backend", s(), "with --kv-offloading-size: native (vLLM's OffloadingConnector, the default); lmcache is not modelled")
      ("enable-hierarchical-cache", po::bool_switch(), "SGLang HiCache: a host-memory KV tier below the GPU pool (--engine sglang; docs/kv-tiers.md)")
      ("hicache-ratio", s(), "with --enable-hierarchical-cache: the host pool in GPU pools (2.0; > 1)")
      ("hicache-size", s(), "with --enable-hierarchical-cache: the host pool in GB (1e9 bytes) per GPU, instead of the ratio (0)")
      ("hicache-write-policy", s(), "with --enable-hierarchical-cache: write_through (the default; the others are not modelled)")
      ("kv-remote-size", s(), "a remote KV store below the host tier, shared by every replica: GiB (2^30 bytes) for the whole store, as a Mooncake store's global segments summed (0 = off; docs/kv-tiers.md)")
      ("kv-disk-size", s(), "a local-disk (NVMe) KV tier below the host tier: GiB (2^30 bytes), the engine's over its tp x pp GPUs, as LMCache's LMCACHE_MAX_LOCAL_DISK_SIZE (0 = off; docs/kv-tiers.md)")
      ("async-scheduling", s(), "on|off: vLLM V1 composes the next step while one runs, so arrivals wait one step more (default off; docs/calibration.md)")
      ("stream-interval", s(), "tokens per streamed chunk after the first, as SGLang's --stream-interval, TensorRT-LLM's stream_interval and vLLM's (0.12+) send them (1; docs/engines.md \"Streaming\")")
      ("expert-parallel-size,ep", s(), "MoE: GPUs the routed experts are spread over, whole (a divisor of tp x dp; 1 = experts split over tp x dp; list ok)")
      ("enable-expert-parallel", po::bool_switch(), "vLLM's flag: --ep = --tp x --dp")
      ("data-parallel-size,dp", s(), "MoE: data-parallel attention ranks of --tp GPUs each, sharing the MoE layers (list ok)")
      ("num-redundant-experts", s(), "MoE with --ep: EPLB's extra expert slots per layer (0)")
      ("decode-context-parallel-size,dcp", s(), "vLLM DCP: shard each request's KV by position over groups of N of the --tp GPUs (a divisor of tp, and of tp / KV heads for GQA; 1 = off; list ok; size: auto = every size vLLM runs; docs/long-context.md)")
      ("prefill-context-parallel-size", s(), "vLLM PCP: only 1 (prefill context parallelism is not modelled; docs/long-context.md)")
      ("enable-lora", po::bool_switch(), "serve LoRA adapters: vLLM's slots leave the KV pool, its LoRA kernels join each step (docs/lora.md)")
      ("max-loras", s(), "with --enable-lora: adapter slots on the GPU, the most distinct adapters in a batch (1; list ok)")
      ("max-lora-rank", s(), "with --enable-lora: the rank every slot is allocated at, 1|8|16|32|64|128|256|320|512 (16; list ok)")
      ("max-cpu-loras", s(), "with --enable-lora: adapters cached in host memory, >= --max-loras (default --max-loras)")
      ("lora-target-modules", s(), "with --enable-lora: the modules wrapped, e.g. 'q_proj,v_proj' (default every supported module)");
  add_spec_options(desc);
}

void add_output_options(po::options_description& desc) {
  desc.add_options()
      ("format", po::value<std::string>(),
       (kFormatNames.choices() + " (default table; CSV and JSON carry raw numbers, units in the names)").c_str())
      ("output,o", po::value<std::string>(), "write to FILE instead of stdout (a failed write exits 2)")
      ("force", po::bool_switch(), "overwrite the -o file if it exists");
}

std::vector<ServingOptions> expand_serving_options(const po::variables_map& vm) {
  ServingOptions base;
  base.kv_cache = !(vm.count("no-kv-cache") && vm["no-kv-cache"].as<bool>());
  // The measured profile is the default: the bare datasheet roofline misses the engine's
  // CPU time per step and per request (TTFT about 34 % low on measured vLLM runs,
  // bench/ACCURACY.md); `none` asks for that roofline.
  const std::string calibration = vm.count("calibration") ? vm["calibration"].as<std::string>() : io::kDefaultCalibration;
  if (calibration != "none") base.calibration = io::load_calibration(calibration);
  if (vm.count("enable-prefix-caching")) {
    const std::string v = vm["enable-prefix-caching"].as<std::string>();
    if (v != "on" && v != "off") throw InputError("--enable-prefix-caching", "", "on or off", "'" + v + "'");
    base.enable_prefix_caching = v == "on";
  }
  if (vm.count("kv-offloading-backend")) {
    const std::string v = vm["kv-offloading-backend"].as<std::string>();
    if (v == "lmcache")
      throw InputError(kWhere, "--kv-offloading-backend",
                       "native (LMCache's connector keeps its own capacity and chunking, which is not modelled)", "'lmcache'");
    if (v != "native") throw InputError(kWhere, "--kv-offloading-backend", "native or lmcache", "'" + v + "'");
    if (!vm.count("kv-offloading-size"))
      throw InputError(kWhere, "--kv-offloading-backend", "--kv-offloading-size beside it (vLLM requires the size)", "");
  }
  if (vm.count("enable-hierarchical-cache") && vm["enable-hierarchical-cache"].as<bool>()) {
    base.hicache = ServingOptions::HiCache{};
    if (vm.count("hicache-ratio"))
      base.hicache->ratio = parse_num_option(vm["hicache-ratio"].as<std::string>(), "--hicache-ratio", 1e-6, 1e6);
    if (vm.count("hicache-size"))
      base.hicache->size_bytes_per_gpu =
          std::llround(parse_num_option(vm["hicache-size"].as<std::string>(), "--hicache-size", 0, 1e6) * kBytesPerGB);
    if (vm.count("hicache-write-policy")) {
      const std::string v = vm["hicache-write-policy"].as<std::string>();
      if (v != "write_through")
        throw InputError(kWhere, "--hicache-write-policy",
                         "write_through (write_back and write_through_selective back blocks up on other events, which "
                         "is not modelled)",
                         "'" + v + "'");
    }
  } else {
    for (const char* flag : {"hicache-ratio", "hicache-size", "hicache-write-policy"})
      if (vm.count(flag))
        throw InputError(kWhere, std::string("--") + flag, "--enable-hierarchical-cache beside it (HiCache is off without it)",
                         "");
  }
  if (vm.count("kv-disk-size"))
    base.kv_disk_bytes =
        std::llround(parse_num_option(vm["kv-disk-size"].as<std::string>(), "--kv-disk-size", 0, 1e7) * kBytesPerGiB);
  if (vm.count("kv-remote-size"))
    base.kv_remote_bytes =
        std::llround(parse_num_option(vm["kv-remote-size"].as<std::string>(), "--kv-remote-size", 0, 1e9) * kBytesPerGiB);
  if (vm.count("async-scheduling")) {
    const std::string v = vm["async-scheduling"].as<std::string>();
    if (v != "on" && v != "off") throw InputError("--async-scheduling", "", "on or off", "'" + v + "'");
    base.async_scheduling = v == "on";
  }
  if (vm.count("stream-interval"))
    base.stream_interval = parse_int_option(vm["stream-interval"].as<std::string>(), "--stream-interval", 1);
  base.spec = parse_spec_options(vm);
  if (vm.count("enable-lora") && vm["enable-lora"].as<bool>()) {
    base.lora = LoraOptions{};
    if (vm.count("max-cpu-loras")) base.lora->max_cpu_loras = parse_int_option(vm["max-cpu-loras"].as<std::string>(), "--max-cpu-loras");
    if (vm.count("lora-target-modules")) {
      // vLLM takes the names space-separated; a comma separates them here too.
      std::string name;
      for (const char c : vm["lora-target-modules"].as<std::string>() + ",") {
        if (c != ',' && c != ' ') name += c;
        else if (!name.empty()) base.lora->target_modules.push_back(std::exchange(name, {}));
      }
      if (base.lora->target_modules.empty())
        throw InputError(kWhere, "--lora-target-modules", "one module name or more", "''");
    }
  } else {
    for (const char* flag : {"max-loras", "max-lora-rank", "max-cpu-loras", "lora-target-modules"})
      if (vm.count(flag))
        throw InputError(kWhere, std::string("--") + flag, "--enable-lora beside it (LoRA is off without it)", "");
  }

  std::vector<ServingOptions> rows{base};
  // Each option multiplies the rows by its list; the first option varies slowest.
  const auto expand = [&](const std::string& name, auto apply) {
    if (!vm.count(name)) return;
    const auto items = values(vm, name);
    std::vector<ServingOptions> next;
    for (const auto& r : rows)
      for (const auto& item : items) {
        ServingOptions o = r;
        apply(o, item);
        next.push_back(o);
      }
    rows = std::move(next);
  };
  expand("tensor-parallel-size", [](ServingOptions& o, const std::string& v) { o.tp = parse_int_option(v, "--tensor-parallel-size"); });
  expand("pipeline-parallel-size", [](ServingOptions& o, const std::string& v) { o.pp = parse_int_option(v, "--pipeline-parallel-size"); });
  expand("dtype", [](ServingOptions& o, const std::string& v) {
    if (v == "auto") return;
    o.dtype = parse_enum<DType>(v, "--dtype", "auto, fp32, fp16 or bf16", parse_dtype);
  });
  expand("quantization", [](ServingOptions& o, const std::string& v) {
    if (v == "auto") return;  // as the checkpoint's quantization_config says
    if (v == "gguf")
      throw InputError(kWhere, "--quantization", "a config.json checkpoint's method (kvplan does not read GGUF files)",
                       "'gguf'");
    o.quantization = parse_enum<WeightQuant>(v, "--quantization", "auto, " + kWeightQuantNames.expected(), parse_weight_quant);
    o.quantization_given = true;
  });
  expand("kv-cache-dtype", [](ServingOptions& o, const std::string& v) {
    if (v == "auto") return;
    o.kv_cache_dtype = parse_enum<DType>(v, "--kv-cache-dtype", "auto, fp16, bf16, fp8, int8, int4 or int2", parse_dtype);
  });
  expand("kv-quant", [](ServingOptions& o, const std::string& v) {
    o.kv_quant = parse_enum<KvQuant>(v, "--kv-quant", kKvQuantNames.expected(), parse_kv_quant);
  });
  expand("kv-group", [](ServingOptions& o, const std::string& v) { o.kv_group = parse_int_option(v, "--kv-group"); });
  expand("kv-residual", [](ServingOptions& o, const std::string& v) { o.kv_residual = parse_int_option(v, "--kv-residual", 0); });
  expand("block-size", [](ServingOptions& o, const std::string& v) { o.block_size = parse_int_option(v, "--block-size"); });
  expand("gpu-memory-utilization", [](ServingOptions& o, const std::string& v) {
    o.gpu_memory_utilization = parse_num_option(v, "--gpu-memory-utilization", 1e-3, 1.0);
  });
  expand("max-model-len", [](ServingOptions& o, const std::string& v) { o.max_model_len = parse_int_option(v, "--max-model-len"); });
  expand("max-num-seqs", [](ServingOptions& o, const std::string& v) {
    o.max_num_seqs = parse_int_option(v, "--max-num-seqs");
    o.max_num_seqs_given = true;
  });
  expand("max-loras", [](ServingOptions& o, const std::string& v) { o.lora->max_loras = parse_int_option(v, "--max-loras", 0); });
  expand("max-lora-rank", [](ServingOptions& o, const std::string& v) {
    o.lora->max_lora_rank = parse_int_option(v, "--max-lora-rank", 0);
  });
  expand("max-num-batched-tokens", [](ServingOptions& o, const std::string& v) {
    o.max_num_batched_tokens = parse_int_option(v, "--max-num-batched-tokens");
  });
  expand("kv-offloading-size", [](ServingOptions& o, const std::string& v) {
    // vllm/config/vllm.py: cpu_bytes_to_use = kv_offloading_size * (1 << 30).
    o.kv_offloading_bytes = std::llround(parse_num_option(v, "--kv-offloading-size", 0, 1e6) * kBytesPerGiB);
  });
  expand("engine", [](ServingOptions& o, const std::string& v) {
    // ENGINE[@VERSION]: vllm@0.10 selects that release's accounting; none = the latest.
    const size_t at = v.find('@');
    o.engine = parse_enum<Engine>(v.substr(0, at), "--engine", kEngineNames.expected(), parse_engine);
    if (at == std::string::npos) return;
    const std::vector<std::string> known = engine_versions(o.engine);
    o.engine_version = match_engine_version(o.engine, v.substr(at + 1));
    if (o.engine_version.empty()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + std::string(to_string(o.engine)) + "@" + k;
      throw InputError(kWhere, "--engine", known.empty() ? "no version for this engine" : "one of " + list,
                       "'" + v + "'");
    }
  });
  expand("entry-point", [](ServingOptions& o, const std::string& v) {
    if (v != "server" && v != "llm") throw InputError(kWhere, "--entry-point", "server or llm", "'" + v + "'");
    o.offline_entry = v == "llm";
  });
  expand("kv-heads", [](ServingOptions& o, const std::string& v) { o.kv_heads = parse_int_option(v, "--kv-heads"); });
  expand("data-parallel-size", [](ServingOptions& o, const std::string& v) { o.dp = parse_int_option(v, "--data-parallel-size"); });
  expand("expert-parallel-size", [](ServingOptions& o, const std::string& v) { o.ep = parse_int_option(v, "--expert-parallel-size"); });
  expand("decode-context-parallel-size", [](ServingOptions& o, const std::string& v) {
    // `auto` is a search over sizes: cmd_size takes it before the options are expanded.
    if (v == "auto")
      throw InputError(kWhere, "--decode-context-parallel-size", "an integer >= 1 (auto: alone, with kvplan size)",
                       "'auto'");
    o.dcp = parse_int_option(v, "--decode-context-parallel-size");
  });
  if (vm.count("prefill-context-parallel-size")) {
    const std::string v = vm["prefill-context-parallel-size"].as<std::string>();
    if (parse_int_option(v, "--prefill-context-parallel-size") != 1)
      throw InputError(kWhere, "--prefill-context-parallel-size",
                       "1 (prefill context parallelism is not modelled: vLLM PR #28718 added the flag with PCP "
                       "switched off until its attention backends landed; docs/long-context.md)",
                       "'" + v + "'");
  }
  expand("num-redundant-experts", [](ServingOptions& o, const std::string& v) {
    o.redundant_experts = parse_int_option(v, "--num-redundant-experts", 0);
  });
  if (vm.count("enable-expert-parallel") && vm["enable-expert-parallel"].as<bool>()) {
    if (vm.count("expert-parallel-size"))
      throw InputError(kWhere, "--enable-expert-parallel", "either it (EP = TP x DP) or --expert-parallel-size, not both",
                       "both");
    for (ServingOptions& r : rows) r.ep = r.tp * r.dp;
  }
  // `--kv-cache-dtype fp16,int4 --kv-quant raw,kivi`: on the fp16 cache both schemes are
  // the same row; print it once.
  std::vector<ServingOptions> out;
  for (const auto& r : rows) {
    const ServingOptions o = r.kv_cache_dtype ? without_kv_scheme(r, *r.kv_cache_dtype) : r;
    if (std::none_of(out.begin(), out.end(), [&](const ServingOptions& x) { return same_options(x, o); }))
      out.push_back(o);
  }
  return out;
}

ServingOptions without_kv_scheme(const ServingOptions& o, DType kv) {
  if (dtype_bits(kv) < 16) return o;
  ServingOptions n = o;
  const ServingOptions defaults;
  n.kv_quant = defaults.kv_quant;
  n.kv_group = defaults.kv_group;
  n.kv_residual = defaults.kv_residual;
  return n;
}

bool same_options(const ServingOptions& a, const ServingOptions& b) {
  const auto key = [](const ServingOptions& o) {
    return std::tie(o.tp, o.pp, o.dtype, o.quantization, o.quantization_given, o.kv_cache_dtype, o.kv_quant, o.kv_group, o.kv_residual,
                    o.block_size, o.gpu_memory_utilization, o.max_model_len, o.max_num_seqs, o.max_num_seqs_given,
                    o.max_num_batched_tokens, o.engine, o.kv_heads, o.kv_cache, o.ep, o.dp, o.dcp,
                    o.redundant_experts, o.spec, o.lora, o.kv_offloading_bytes, o.hicache, o.kv_disk_bytes, o.kv_remote_bytes, o.enable_prefix_caching,
                    o.async_scheduling, o.stream_interval, o.engine_version, o.offline_entry);
  };
  return key(a) == key(b);
}

po::variables_map parse(const Args& args, const po::options_description& desc) {
  po::variables_map vm;
  try {
    const auto style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(args).options(desc).style(style).run(), vm);
    po::notify(vm);
  } catch (const po::invalid_command_line_syntax& e) {
    // Boost's own sentence ("the required argument for option '--model' is missing")
    // would read doubled after "expected ..., got": say what was missing instead.
    if (e.kind() == po::invalid_syntax::missing_parameter)
      throw InputError(kWhere, e.get_option_name(), "a value after the option", "nothing");
    if (e.kind() == po::invalid_syntax::empty_adjacent_parameter)
      throw InputError(kWhere, e.get_option_name(), "a value after the '='", "nothing");
    if (e.kind() == po::invalid_syntax::extra_parameter)
      throw InputError(kWhere, e.get_option_name(), "no value (it is a switch)", "a value");
    throw InputError(kWhere, e.get_option_name(), "the syntax --help shows (" + std::string(e.what()) + ")");
  } catch (const po::unknown_option& e) {
    throw InputError(kWhere, e.get_option_name(), "an option --help lists", "an option it does not list");
  } catch (const po::multiple_occurrences& e) {
    throw InputError(kWhere, e.get_option_name(), "the option once", "it more than once");
  } catch (const po::error& e) {
    // Boost's message is a whole sentence: "expected ..., got <it>" would read doubled.
    throw InputError(kWhere, "", "options as --help lists them (" + std::string(e.what()) + ")");
  }
  return vm;
}

void check_output_path(const std::string& option, const std::string& path, bool force) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !force)
    throw InputError(option, "", "a file that does not exist yet (or --force to overwrite it)", "'" + path + "' exists");
  if (std::filesystem::is_directory(path, ec)) throw InputError(option, "", "a file path", "'" + path + "', a directory");
}

void refuse_same_path(const po::variables_map& vm, const std::string& a, const std::string& b) {
  if (!vm.count(a) || !vm.count(b)) return;
  std::error_code ec1, ec2;
  const auto pa = std::filesystem::weakly_canonical(vm[a].as<std::string>(), ec1);
  const auto pb = std::filesystem::weakly_canonical(vm[b].as<std::string>(), ec2);
  if (!ec1 && !ec2 && pa == pb)
    throw InputError(kWhere, "--" + b, "a path other than --" + a + "'s (one would overwrite the other)",
                     "'" + vm[b].as<std::string>() + "'");
}

void write_output(const std::string& option, const std::string& path, const std::string& text, bool force) {
  check_output_path(option, path, force);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(option, "", "a writable path", "'" + path + "', which cannot be opened for writing");
  out << text;
  out.close();
  // A full disk or /dev/full fails only when the buffer is flushed: check after close.
  if (out.fail()) throw InputError(option, "", "a path that can be written in full", "'" + path + "': write failed");
}

namespace {
//! Where emit() writes in this thread while capture_output runs a command (else stdout).
thread_local std::string* captured = nullptr;
}  // namespace

std::string capture_output(int (*command)(const Args&), const Args& args) {
  std::string text;
  struct Restore {
    std::string* outer;
    ~Restore() { captured = outer; }
  } restore{std::exchange(captured, &text)};
  if (const int code = command(args); code != 0)
    throw std::runtime_error("the command returned exit code " + std::to_string(code));
  return text;
}

void emit(const po::variables_map& vm, const std::string& text) {
  if (!vm.count("output")) {
    if (captured) *captured += text;
    else std::cout << text;
    return;
  }
  write_output("--output", vm["output"].as<std::string>(), text, vm.count("force") && vm["force"].as<bool>());
}

}  // namespace kvplan::cli
