// io/model_registry.h: the registry's table and the docs/models.md block generated from it.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/config_io.h"
#include "io/model_registry.h"

using namespace kvplan;

TEST_CASE("docs/models.md holds the registry table generated from io/model_registry.cpp") {
  const auto path = std::filesystem::path(KVPLAN_TEST_DATA_DIR) / ".." / ".." / "docs" / "models.md";
  const std::string doc = io::read_file(path);
  const std::string begin = "<!-- registry:begin -->\n", end = "<!-- registry:end -->";
  const auto b = doc.find(begin), e = doc.find(end);
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  const std::string generated = io::registry_markdown();
  const std::string current = doc.substr(b + begin.size(), e - b - begin.size());
  if (const char* u = std::getenv("KVPLAN_UPDATE_DOCS"); u && std::string(u) == "1" && current != generated) {
    std::ofstream(path, std::ios::binary) << doc.substr(0, b + begin.size()) + generated + doc.substr(e);
    return;
  }
  CHECK(current == generated);  // run with KVPLAN_UPDATE_DOCS=1 to regenerate
}

TEST_CASE("every alias reads as a registered family, and lookups follow the rows") {
  for (const io::ModelFamily& f : io::model_registry()) {
    CAPTURE(f.model_type);
    if (f.kind == io::RowKind::alias) CHECK(io::find_family(f.model_type) == io::find_family(f.architecture));
    if (f.kind == io::RowKind::wrapper) CHECK(std::string(f.text_key).size() > 0);
  }
  // Gemma3TextConfig's heads when google/gemma-3-4b's text_config leaves them out: 8 heads,
  // 4 K/V heads of 256 (transformers configuration_gemma3.py).
  const io::ModelFamily* g = io::find_family("gemma3_text");
  REQUIRE(g);
  CHECK(io::family_default(g, "num_attention_heads") == 8);
  CHECK(io::family_default(g, "num_key_value_heads") == 4);
  CHECK(io::family_default(g, "head_dim") == 256);
  // LlamaConfig's width (4096) fills a wrapper's llama text_config only.
  const io::ModelFamily* l = io::find_family("llama");
  REQUIRE(l);
  CHECK_FALSE(io::family_default(l, "hidden_size").has_value());
  CHECK(io::family_default(l, "hidden_size", true) == 4096);
  CHECK(io::find_family("no_such_family") == nullptr);
}
