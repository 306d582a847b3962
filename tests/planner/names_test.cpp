// planner/names.h: one table gives the printed name, the parser and the error text.
#include <doctest/doctest.h>

#include "planner/names.h"
#include "planner/types.h"

namespace kvplan {
namespace {
enum class Colour { red, green, blue };
constexpr NameTable<Colour, 4> kColours{{{
    {"red", Colour::red}, {"green", Colour::green}, {"blue", Colour::blue}, {"crimson", Colour::red},
}}};
}  // namespace

TEST_CASE("a name table prints canonical names and parses aliases") {
  CHECK(kColours.name(Colour::red) == "red");  // the first entry of a value, not the alias
  CHECK(kColours.parse("crimson") == Colour::red);
  CHECK(kColours.parse("blue") == Colour::blue);
  CHECK_FALSE(kColours.parse("Blue").has_value());  // exact unless the table folds case
  CHECK_FALSE(kColours.parse("").has_value());
  CHECK_FALSE(kColours.parse("re").has_value());
}

TEST_CASE("a name table writes the expected-text and the --help list from its canonical names") {
  CHECK(kColours.expected() == "red, green or blue");
  CHECK(kColours.choices() == "red|green|blue");
  CHECK(kEngineNames.expected() == "ideal, vllm, sglang or trtllm");
  CHECK(kKvQuantNames.choices() == "raw|per-token|kivi|kvquant");
}

TEST_CASE("the planner's enums keep their spellings, config.json's in any case") {
  CHECK(parse_dtype("BFloat16") == DType::bf16);
  CHECK(parse_dtype("half") == DType::fp16);
  CHECK(parse_dtype("float") == DType::fp32);
  CHECK(to_string(DType::fp8) == "fp8");
  CHECK(kDTypeNames.expected() == "fp32, fp16, bf16, fp8, int8, int4 or int2");
  CHECK(parse_weight_quant("AWQ") == WeightQuant::awq);
  CHECK(to_string(KvQuant::per_token) == "per-token");
  // Every value of every planner enum has a name (a missing one would print "?").
  for (DType d : {DType::fp32, DType::fp16, DType::bf16, DType::fp8, DType::int8, DType::int4, DType::int2})
    CHECK(to_string(d) != "?");
  for (WeightQuant q : {WeightQuant::none, WeightQuant::fp8, WeightQuant::int8, WeightQuant::awq, WeightQuant::gptq})
    CHECK(to_string(q) != "?");
}

}  // namespace kvplan
