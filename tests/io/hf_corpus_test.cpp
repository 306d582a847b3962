// The config corpus (tests/data/hf_configs): real Hugging Face config.json files, copied
// verbatim or rebuilt from the Hub's rendered page to the byte size it states (SOURCES names
// each one's repository, path and commit, or its page). expected.yaml holds, per file, the KV
// bytes per token and state bytes per request derived by hand (the derivation is written
// beside each number), the published parameter count with its source, or the error an
// unsupported architecture must give.
#include <doctest/doctest.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "io/config_io.h"
#include "io/model_registry.h"
#include "planner/planner.h"

using namespace kvplan;

namespace {
const std::filesystem::path kDir = std::filesystem::path(KVPLAN_TEST_DATA_DIR) / "hf_configs";
}  // namespace

TEST_CASE("every config in the corpus is read exactly, or refused naming what it could not place") {
  const YAML::Node expected = YAML::LoadFile((kDir / "expected.yaml").string());
  REQUIRE(expected.IsMap());
  int64_t supported = 0, refused = 0;
  for (const auto& entry : expected) {
    const std::string file = entry.first.as<std::string>();
    const YAML::Node e = entry.second;
    CAPTURE(file);
    const std::string path = (kDir / file).string();
    if (e["error"]) {
      std::string what;
      try {
        io::load_model(path);
      } catch (const InputError& err) {
        what = err.what();
      }
      for (const auto& part : e["error"]) {
        CAPTURE(what);
        CHECK(what.find(part.as<std::string>()) != std::string::npos);
      }
      ++refused;
      continue;
    }
    ModelConfig m;
    try {
      m = io::load_model(path);
    } catch (const InputError& err) {
      FAIL_CHECK(err.what());
      continue;
    }
    ServingOptions o;
    o.dtype = DType::bf16;  // the derivations count 2-byte elements
    CHECK(kv_bytes_per_token(m, o) == e["kv_bytes_per_token"].as<int64_t>());
    CHECK(state_bytes_per_request(m, o) == e["state_bytes_per_request"].as<int64_t>());
    if (e["params"]) {
      const auto published = e["params"].as<double>();
      const auto counted = static_cast<double>(count_params(m).total());
      CAPTURE(counted);
      CHECK(std::abs(counted - published) / published < 0.01);
    }
    if (e["text_params"]) {
      // A card that counts the language model alone (its towers listed apart).
      const auto published = e["text_params"].as<double>();
      const ParamCount c = count_params(m);
      const auto counted = static_cast<double>(c.total() - c.tower);
      CAPTURE(counted);
      CHECK(std::abs(counted - published) / published < 0.01);
    }
    if (e["weight_bytes"]) {
      // Published checkpoint size (safetensors total): the quantized weights, scales and
      // zero points included, within 5 %.
      ServingOptions q;
      const auto published = e["weight_bytes"].as<double>();
      const auto counted = static_cast<double>(weight_bytes_per_gpu(m, q) + tower_bytes_per_gpu(m, q));
      CAPTURE(counted);
      CHECK(std::abs(counted - published) / published < 0.05);
    }
    ++supported;
  }
  CHECK(supported + refused >= 60);
}

namespace {
std::string corpus_text(const std::string& file) {
  std::ifstream in(kDir / file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string error_of(const std::string& text) {
  try {
    io::parse_model(text, "config.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("Gemma-4: full layers of their own geometry without a V projection, experts beside the dense MLP") {
  const ModelConfig m = io::load_model((kDir / "google--gemma-4-26B-A4B.json").string());
  // text_config: sliding layers 8 K/V heads of 256, full layers (attention_k_eq_v) 2 of 512.
  CHECK(m.swa_num_kv_heads == 8);
  CHECK(m.swa_head_dim == 256);
  CHECK(m.num_kv_heads == 2);
  CHECK(m.head_dim == 512);
  CHECK(m.attn_k_eq_v);
  // enable_moe_block: 128 experts of 704, top 8, and the dense MLP of 2112 beside them.
  CHECK(m.num_experts == 128);
  CHECK(m.experts_per_token == 8);
  CHECK(m.shared_expert_intermediate_size == 2112);
  CHECK_FALSE(m.shared_expert_gate);
  // One full layer by hand: q 8192 + k 1024 + o 8192 rows of 2816 (no v) + q/k norms 2 x 512.
  CHECK(layer_param_count(m, 5).mixer == (8192 + 1024 + 8192) * 2816 + 2 * 512);
  // The NVFP4 checkpoint's ignore list names layers.N.mlp*: the dense MLP (kvplan's shared
  // expert) stays 16-bit, the routed experts (layers.N.experts) are quantized.
  const ModelConfig q = io::load_model((kDir / "nvidia--Gemma-4-26B-A4B-NVFP4.json").string());
  CHECK(q.weight_quant.for_part(WeightPart::shared_experts, 0).method.empty());
  CHECK_FALSE(q.weight_quant.for_part(WeightPart::experts, 0).method.empty());
  CHECK(q.weight_quant.for_part(WeightPart::attention, 0).method.empty());
  // Per-layer embeddings (E2B/E4B) and KV-shared layers are refused by name.
  std::string ple = corpus_text("google--gemma-4-26B-A4B.json");
  const std::string zero = "\"hidden_size_per_layer_input\": 0";
  REQUIRE(ple.find(zero) != std::string::npos);
  ple.replace(ple.find(zero), zero.size(), "\"hidden_size_per_layer_input\": 256");
  CHECK(error_of(ple) ==
        "config.json: key 'hidden_size_per_layer_input': expected 0 (the per-layer embeddings of Gemma-4 E2B/E4B are "
        "not modelled), got 256");
  std::string shared = corpus_text("google--gemma-4-26B-A4B.json");
  const std::string none = "\"num_kv_shared_layers\": 0";
  REQUIRE(shared.find(none) != std::string::npos);
  shared.replace(shared.find(none), none.size(), "\"num_kv_shared_layers\": 20");
  CHECK(error_of(shared) ==
        "config.json: key 'num_kv_shared_layers': expected 0 (Gemma-4's KV-shared layers are not modelled), got 20");
}

TEST_CASE("OLMoE and GPT-NeoX: counted to the parameter, and only Phi's untied LM head has a bias") {
  // OLMoE-1B-7B-0924 by hand: per layer q, k, v, o 4 x 2048^2 = 16,777,216 (no biases), q/k
  // RMSNorms over all heads 2 x 2048, 64 experts x 3 x 2048 x 1024 = 402,653,184, router
  // 2048 x 64 = 131,072, two norms 4,096: 419,569,664 x 16 = 6,713,114,624; embeddings and LM
  // head 2 x 50304 x 2048 = 206,045,184; final norm 2,048.
  const ModelConfig olmoe = io::load_model((kDir / "allenai--OLMoE-1B-7B-0924.json").string());
  CHECK(count_params(olmoe).total() == 6919161856);
  // Pythia-6.9B: the Pythia paper's (arXiv:2304.01373) 6,857,302,016, whose embed_out has no
  // bias; a bias would add 50,432.
  const ModelConfig pythia = io::load_model((kDir / "EleutherAI--pythia-6.9b.json").string());
  CHECK(count_params(pythia).total() == 6857302016);
  CHECK(count_params(pythia).lm_head == int64_t{50432} * 4096);
  // phi-1 (PhiForCausalLM: lm_head = nn.Linear(hidden_size, vocab_size, bias=True)).
  const ModelConfig phi = io::load_model((kDir / "microsoft--phi-1.json").string());
  REQUIRE_FALSE(phi.tie_word_embeddings);
  CHECK(count_params(phi).lm_head == 103054455);  // 50295 x 2048 + 50295
}

TEST_CASE("the corpus: each file has its source and expected entry, at least 150 files, a file for each family") {
  std::set<std::string> files, sourced, expected;
  for (const auto& e : std::filesystem::directory_iterator(kDir))
    if (e.path().extension() == ".json") files.insert(e.path().filename().string());
  std::ifstream sources(kDir / "SOURCES");
  for (std::string line; std::getline(sources, line);)
    if (!line.empty() && line[0] != '#') sourced.insert(line.substr(0, line.find(' ')));
  for (const auto& entry : YAML::LoadFile((kDir / "expected.yaml").string())) expected.insert(entry.first.as<std::string>());
  CHECK(sourced == files);
  CHECK(expected == files);
  CHECK(files.size() >= 150);  // issue 23
  // The family each file is read with (a wrapper's text model), by model_type.
  std::set<std::string> read_as;
  for (const std::string& f : files) {
    const YAML::Node root = YAML::LoadFile((kDir / f).string());
    std::string type = root["model_type"] ? root["model_type"].as<std::string>() : "";
    if (const io::ModelFamily* w = io::find_wrapper(type); w && root[w->text_key] && root[w->text_key]["model_type"])
      type = root[w->text_key]["model_type"].as<std::string>();
    if (const io::ModelFamily* fam = io::find_family(type)) read_as.insert(fam->model_type);
  }
  // Every family in the registry is read from at least one real config.json of the corpus.
  std::set<std::string> missing;
  for (const io::ModelFamily& fam : io::model_registry())
    if (fam.kind == io::RowKind::family && !read_as.contains(fam.model_type)) missing.insert(fam.model_type);
  CHECK(missing.empty());
}

TEST_CASE("the corpus: at least 60 entries released in 2025-2026, each with the basis of its month") {
  // RELEASES: `file YYYY-MM on|after basis`; "after" months are lower bounds (a derivative
  // or a later version of a dated model). Every model was in the corpus by 2026-12, so a
  // month in 2025 or later, bound or not, places the release in 2025-2026.
  std::ifstream in(kDir / "RELEASES");
  REQUIRE(in);
  std::set<std::string> seen;
  int64_t in_2025_2026 = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    CAPTURE(line);
    std::istringstream fields(line);
    std::string file, month, how, basis;
    fields >> file >> month >> how;
    std::getline(fields, basis);
    CHECK(std::filesystem::exists(kDir / file));
    CHECK(seen.insert(file).second);
    REQUIRE(month.size() == 7);
    CHECK(month[4] == '-');
    const int year = std::stoi(month.substr(0, 4)), mon = std::stoi(month.substr(5));
    CHECK((mon >= 1 && mon <= 12));
    CHECK(year <= 2026);
    CHECK((how == "on" || how == "after"));
    CHECK(basis.size() > 10);  // a source named, not only a date
    if (year >= 2025) ++in_2025_2026;
  }
  CHECK(in_2025_2026 >= 60);  // issue 23
}

TEST_CASE("LFM2: short-conv layers hold a state of conv_L_cache - 1 inputs, the MLP width follows Lfm2MLP") {
  const ModelConfig m = io::load_model((kDir / "LiquidAI--LFM2-1.2B.json").string());
  // full_attn_idxs 2, 5, 8, 10, 12, 14 attend; the other 10 layers are short convolutions.
  REQUIRE(m.layer_mixer.size() == 16);
  CHECK(m.mixer(2) == Mixer::attention);
  CHECK(m.mixer(3) == Mixer::short_conv);
  CHECK(m.attention_layers() == 6);
  // int(2 x 12288 / 3) = 8192, x 1.0, a multiple of 256 already.
  CHECK(m.intermediate_size == 8192);
  // A conv layer by hand: in_proj 2048 x 3 x 2048 + conv 2048 x 3 + out_proj 2048 x 2048.
  CHECK(layer_param_count(m, 3).mixer == 2048 * 6144 + 2048 * 3 + 2048 * 2048);
  // TP 2: each GPU holds half the conv channels, (3 - 1) x 1024 x 2 B = 4096 B per conv layer.
  ServingOptions o;
  o.dtype = DType::bf16;
  o.tp = 2;
  CHECK(state_bytes_per_request_per_gpu(m, o) == 10 * 4096);
  // The same model through LFM2.5-VL's text_config, layer_types instead of full_attn_idxs.
  const ModelConfig vl = io::load_model((kDir / "LiquidAI--LFM2.5-VL-1.6B.json").string());
  CHECK(vl.layer_mixer == m.layer_mixer);
  // HF builds the conv on hidden_size, vLLM on conv_dim: a config where they differ is refused.
  std::string wide = corpus_text("LiquidAI--LFM2-1.2B.json");
  const std::string conv = "\"conv_dim\": 2048";
  REQUIRE(wide.find(conv) != std::string::npos);
  wide.replace(wide.find(conv), conv.size(), "\"conv_dim\": 4096");
  CHECK(error_of(wide) == "config.json: key 'conv_dim': expected hidden_size (2048), got 4096");
}

TEST_CASE("SmolLM3: NoPE layers change no size, and they slide only with use_sliding_window") {
  const ModelConfig m = io::load_model((kDir / "HuggingFaceTB--SmolLM3-3B.json").string());
  CHECK(m.tie_word_embeddings);  // SmolLM3Config's default: the file leaves the key out
  CHECK(m.layer_window.size() == 36);
  CHECK(std::all_of(m.layer_window.begin(), m.layer_window.end(), [](int64_t w) { return w == 0; }));
  // Without layer_types, SmolLM3Config slides the layers without RoPE (no_rope_layers 0:
  // every 4th) when use_sliding_window is set.
  std::string text = corpus_text("HuggingFaceTB--SmolLM3-3B.json");
  const auto b = text.find("\"layer_types\""), e = text.find("\"max_position_embeddings\"");
  REQUIRE(b != std::string::npos);
  text.erase(b, e - b);
  const auto replace = [&](const std::string& from, const std::string& to) {
    REQUIRE(text.find(from) != std::string::npos);
    text.replace(text.find(from), from.size(), to);
  };
  replace("\"sliding_window\": null", "\"sliding_window\": 4096");
  CHECK(io::parse_model(text, "config.json").layer_window.empty());  // use_sliding_window false
  replace("\"use_sliding_window\": false", "\"use_sliding_window\": true");
  const ModelConfig s = io::parse_model(text, "config.json");
  REQUIRE(s.layer_window.size() == 36);
  CHECK(s.layer_window[2] == 0);
  CHECK(s.layer_window[3] == 4096);
  CHECK(std::count(s.layer_window.begin(), s.layer_window.end(), 4096) == 9);
  // Biases on the gated MLP are not counted: refused by name.
  std::string biased = corpus_text("HuggingFaceTB--SmolLM3-3B.json");
  biased.replace(biased.find("\"mlp_bias\": false"), 17, "\"mlp_bias\": true");
  CHECK(error_of(biased) == "config.json: key 'mlp_bias': expected false (biases on the gated MLP are not counted), got true");
}

TEST_CASE("Voxtral: the Whisper encoder and its projector are counted from audio_config") {
  const ModelConfig m = io::load_model((kDir / "mistralai--Voxtral-Mini-3B-2507.json").string());
  // By hand: conv1 128 x 1280 x 3 + 1280, conv2 1280^2 x 3 + 1280, positions 1500 x 1280,
  // 32 layers x (4 x 1280^2 + 3 x 1280 + 2 x 1280 x 5120 + 5120 + 1280 + 4 x 1280), final
  // LayerNorm 2 x 1280 = 636,968,960; projector 5120 x 3072 + 3072 x 3072 = 25,165,824.
  CHECK(m.tower_params == 636968960 + 25165824);
  // An audio tower under a wrapper that does not name its kind is refused.
  std::string other = corpus_text("mistralai--Voxtral-Mini-3B-2507.json");
  other.replace(other.find("\"model_type\": \"voxtral\""), 23, "\"model_type\": \"llava\"");
  CHECK(error_of(other) ==
        "config.json: key 'audio_config': expected a model without an audio tower (kvplan counts Voxtral's Whisper "
        "encoder only), got an audio tower");
}

TEST_CASE("Mllama: cross-attention layers cache one image's K/V per request, no K/V per token") {
  const ModelConfig m = io::load_model((kDir / "meta-llama--Llama-3.2-90B-Vision-Instruct.json").string());
  CHECK(m.mixer(3) == Mixer::cross_attention);
  CHECK(m.mixer(4) == Mixer::attention);
  CHECK(m.attention_layers() == 80);
  // max_num_tiles 4 x ((560 / 14)^2 patches + 1 class token) = 6404 image tokens.
  CHECK(m.cross_attention_tokens == 6404);
  // TP 8: one K/V head per GPU, 2 x 1 x 128 x 6404 x 2 B in each of the 20 layers.
  ServingOptions o;
  o.dtype = DType::bf16;
  o.tp = 8;
  CHECK(state_bytes_per_request_per_gpu(m, o) == 20 * 2 * 128 * 6404 * 2);
  // A cross-attention layer by hand: q/o 8192 x 8192 each, k/v 8192 x 1024 each, q/k norms
  // 2 x 128, two gates.
  CHECK(layer_param_count(m, 3).mixer == 2 * 8192 * 8192 + 2 * 8192 * 1024 + 2 * 128 + 2);
  // embed_tokens has vocab_size + 8 rows, the LM head vocab_size.
  const ParamCount c = count_params(m);
  CHECK(c.embedding == (128256 + 8) * int64_t{8192});
  CHECK(c.lm_head == 128256 * int64_t{8192});
  // The engine models do not follow a cross-attention cache: refused by name.
  ServingOptions v;
  v.engine = Engine::vllm;
  v.tp = 8;
  CHECK_THROWS_AS(validate(m, v, "test"), InputError);
}

TEST_CASE("DeepSeek-V4: compressed sparse attention read from compress_ratios, MXFP4 experts, planned with its cache") {
  const ModelConfig m = io::load_model((kDir / "deepseek-ai--DeepSeek-V4-Flash.json").string());
  REQUIRE(m.is_csa());
  CHECK(m.compress_ratio(0) == 1);  // 0 in the file: the window alone (vLLM max(1, ratio))
  CHECK(m.compress_ratio(2) == 4);
  CHECK(m.compress_ratio(3) == 128);
  // Layer 2 (ratio 4) by hand: wq_a + wkv 4096 x (1024 + 512) = 6,291,456, their norms 1,536,
  // wq_b 1024 x 64 x 512, wo_a 64 x 512 x 1024, wo_b 8 x 1024 x 4096 = 33,554,432 each, 64
  // sinks: 106,956,352; compressor 4 x 2 x 512 + 4096 x 4 x 512 + 512 = 8,393,216; indexer
  // wq_b 1024 x 64 x 128 = 8,388,608 + weights_proj 4096 x 64 = 262,144 + its compressor
  // 4 x 2 x 128 + 4096 x 4 x 128 + 128 = 2,098,304; 126,098,624 in all.
  CHECK(layer_param_count(m, 2).mixer == 126098624);
  ServingOptions o;
  o.dtype = DType::bf16;
  // 1,000 tokens: every layer's window 128 x 584 B x 43 = 3,214,336; ratio 4: 250 entries
  // x (584 + 132) B x 21 = 3,759,000; ratio 128: 7 x 584 B x 20 = 81,760; 7,055,096 in all.
  CHECK(kv_bytes_per_request(m, o, 1000) == 7055096);
  // expert_dtype fp4: the routed experts MXFP4 (4 bits, e8m0 per 32), the rest block FP8.
  CHECK(m.weight_quant.for_part(WeightPart::experts, 5).bits == 4);
  CHECK(m.weight_quant.for_part(WeightPart::experts, 5).group == 32);
  CHECK(m.weight_quant.for_part(WeightPart::attention, 5).bits == 8);
  CHECK(m.weight_quant.for_part(WeightPart::shared_experts, 5).bits == 8);
  // deepseek_ref without expert_dtype: the experts as quantization_config says (FP8).
  const ModelConfig ref = io::load_model((kDir / "sgl-project--DeepSeek-V4-Flash-FP8.json").string());
  CHECK(ref.weight_quant.for_part(WeightPart::experts, 5).bits == 8);
  CHECK(m.index_topk == 512);
  // Planned (planner/flops.cpp, kv_traffic.cpp), with its cache and without DCP only.
  CHECK_NOTHROW(validate(m, o, "command line"));
  o.kv_cache = false;
  std::string what;
  try {
    validate(m, o, "command line");
  } catch (const InputError& e) {
    what = e.what();
  }
  CHECK(what.find("compressed sparse attention") != std::string::npos);
  CHECK(what.find("--no-kv-cache") != std::string::npos);
}

TEST_CASE("ModelOpt MIXED_PRECISION: quantized_layers read part by part") {
  const ModelConfig m = io::load_model((kDir / "nvidia--Qwen3.6-35B-A3B-NVFP4.json").string());
  const QuantSpec& q = m.weight_quant;
  CHECK(q.engine_method == "modelopt_mixed");
  // self_attn / linear_attn: FP8 W8A8; experts and shared expert: W4A16 NVFP4 (fp8 scale
  // per 16, weight-only); the LM head W4A16 NVFP4 too.
  CHECK(q.for_part(WeightPart::attention, 3).bits == 8);
  CHECK(q.for_part(WeightPart::attention, 3).compute == DType::fp8);
  CHECK(q.for_part(WeightPart::experts, 3).bits == 4);
  CHECK(q.for_part(WeightPart::experts, 3).group == 16);
  CHECK_FALSE(q.for_part(WeightPart::experts, 3).fp4_activations);
  CHECK(q.for_part(WeightPart::shared_experts, 3).bits == 4);
  REQUIRE(q.lm_head != nullptr);
  CHECK(q.lm_head->bits == 4);
  // No dense MLP in this MoE model: the part is never named, so it is 16-bit.
  CHECK_FALSE(q.for_part(WeightPart::dense_mlp, 3).active());
  // A part in two formats is refused.
  std::string two = corpus_text("nvidia--Qwen3.6-35B-A3B-NVFP4.json");
  const std::string one = "\"model.language_model.layers.7.self_attn.q_proj\": {\n        \"quant_algo\": \"FP8\"";
  REQUIRE(two.find(one) != std::string::npos);
  two.replace(two.find(one), one.size(),
              "\"model.language_model.layers.7.self_attn.q_proj\": {\n        \"quant_algo\": \"NVFP4\"");
  CHECK(error_of(two).find("one format per part in every layer") != std::string::npos);
}

TEST_CASE("LLaVA-1.5: a llama text_config takes LlamaConfig's defaults, the projector is two linear layers") {
  const ModelConfig m = io::load_model((kDir / "llava-hf--llava-1.5-7b-hf.json").string());
  // text_config names vocab_size and max_position_embeddings only; LlavaConfig builds the
  // rest from LlamaConfig: hidden 4096, 32 layers of 32 heads (= K/V heads), MLP 11008.
  CHECK(m.hidden_size == 4096);
  CHECK(m.num_layers == 32);
  CHECK(m.num_heads == 32);
  CHECK(m.num_kv_heads == 32);
  CHECK(m.intermediate_size == 11008);
  CHECK(m.vocab_size == 32064);
  // Generic ViT estimate of CLIP-L/14-336: 24 x (4 x 1024^2 + 4 x 1024 + 2 x 1024 x 4096 + 4096
  // + 1024 + 4 x 1024) = 302,309,376, patch 3 x 14^2 x 1024 + 1024 = 603,136, positions
  // 24^2 x 1024 = 589,824; LlavaMultiModalProjector 1024 x 4096 + 4096 x 4096 + 2 x 4096 =
  // 20,979,712.
  CHECK(m.tower_params == 302309376 + 603136 + 589824 + 20979712);
  // The defaults hold only inside a wrapper: a top-level llama config must state its width.
  std::string top = corpus_text("llava-hf--llava-1.5-7b-hf.json");
  const auto b = top.find("\"text_config\": {"), e = top.find("},", b);
  REQUIRE(b != std::string::npos);
  top = "{" + top.substr(b + 16, e - b - 16) + "}";
  CHECK(error_of(top).find("key 'hidden_size'") != std::string::npos);
}

TEST_CASE("Falcon as first published (RefinedWeb): read as vLLM's RWConfig reads it") {
  const ModelConfig m = io::load_model((kDir / "tiiuae--falcon-40b.json").string());
  // n_layer 60, n_head 128, n_head_kv 8; hidden_size 8192 forces the new decoder: K/V heads
  // from n_head_kv and two LayerNorms a layer; the MLP 4 x 8192 (no ffn_hidden_size).
  CHECK(m.num_layers == 60);
  CHECK(m.num_heads == 128);
  CHECK(m.num_kv_heads == 8);
  CHECK(m.norms_per_layer == 2);
  CHECK(m.intermediate_size == 32768);
  CHECK(m.tie_word_embeddings);
  // Falcon-7B's first config (RefinedWebModel, hidden 4544, 71 heads, no n_head_kv):
  // multi_query, one K/V head, one LayerNorm a layer.
  std::string seven = corpus_text("tiiuae--falcon-40b.json");
  const auto replace = [&](const std::string& from, const std::string& to) {
    REQUIRE(seven.find(from) != std::string::npos);
    seven.replace(seven.find(from), from.size(), to);
  };
  replace("\"RefinedWeb\"", "\"RefinedWebModel\"");
  replace("\"hidden_size\": 8192", "\"hidden_size\": 4544");
  replace("\"n_head\": 128", "\"n_head\": 71");
  replace("\"n_head_kv\": 8,\n", "\"multi_query\": true,\n");
  const ModelConfig s = io::parse_model(seven, "config.json");
  CHECK(s.num_kv_heads == 1);
  CHECK(s.norms_per_layer == 1);
  CHECK(s.intermediate_size == 4 * 4544);
}

TEST_CASE("Qwen2-VL: a vision_config saved without Qwen2VLVisionConfig's defaults takes them") {
  const std::string file = "pbarker--Qwen2-VL-7B-sk-googleflights-full-750-47ep.json";
  const ModelConfig m = io::load_model((kDir / file).string());
  // depth 32, embed_dim 1280, mlp_ratio 4 (quick_gelu, not gated), patch 14 over 2 frames, a
  // merger over 2 x 2 patches into the text width 3584, by hand: 32 x (4 x 1280^2 + 4 x 1280 +
  // 2 x 1280 x 5120 + 5120 + 1280 + 4 x 1280) = 629,678,080; patch 3 x 2 x 14^2 x 1280 + 1280
  // = 1,506,560; merger 5120^2 + 5120 + 5120 x 3584 + 3584 + 2 x 1280 = 44,575,744.
  CHECK(m.tower_params == 629678080 + 1506560 + 44575744);
  // The same tower with every key written out, as Qwen/Qwen2-VL-7B-Instruct's own file has it.
  std::string full = corpus_text(file);
  const std::string stripped = "\"in_chans\": 3,";
  REQUIRE(full.find(stripped) != std::string::npos);
  full.replace(full.find(stripped), stripped.size(),
               "\"depth\": 32, \"embed_dim\": 1280, \"mlp_ratio\": 4, \"num_heads\": 16, \"in_chans\": 3, \"hidden_size\": "
               "3584, \"patch_size\": 14, \"spatial_merge_size\": 2, \"temporal_patch_size\": 2,");
  CHECK(io::parse_model(full, "config.json").tower_params == m.tower_params);
  // Without model_type qwen2_vl the vision_config names no class whose defaults apply: refused.
  std::string unnamed = corpus_text(file);
  const std::string named = "\"model_type\": \"qwen2_vl\",\n    \"spatial_patch_size\"";
  REQUIRE(unnamed.find(named) != std::string::npos);
  unnamed.replace(unnamed.find(named), named.size(), "\"spatial_patch_size\"");
  CHECK(error_of(unnamed) == "config.json: key 'vision_config': expected hidden_size (or embed_dim) and num_hidden_layers (or "
                             "depth), got nothing");
}
