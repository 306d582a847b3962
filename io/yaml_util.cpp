#include "io/yaml_util.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <sstream>
#include <string_view>
#include <unordered_map>

namespace kvplan::io {

namespace {

std::string show(const YAML::Node& v) {
  if (v.IsScalar()) return "'" + v.Scalar() + "'";
  if (v.IsSequence()) return "a list";
  if (v.IsMap()) return "a mapping";
  return "null";
}

// A scalar as a finite double, or nullopt when it is not a number at all.
std::optional<double> as_number(const YAML::Node& v) {
  if (!v.IsScalar()) return std::nullopt;
  const std::string& s = v.Scalar();
  if (s.empty()) return std::nullopt;
  std::istringstream in(s);
  in.imbue(std::locale::classic());
  double d = 0;
  in >> d;
  if (in.fail() || !in.eof()) {
    // YAML spellings of special floats are numbers, just not usable ones.
    if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::nan("");
    if (s == ".inf" || s == ".Inf" || s == "+.inf") return HUGE_VAL;
    if (s == "-.inf" || s == "-.Inf") return -HUGE_VAL;
    return std::nullopt;
  }
  return d;
}

YAML::Node child(const YAML::Node& n, const std::string& key) {
  const YAML::Node v = n[key];
  if (!v.IsDefined() || v.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  return v;
}

// Builds, from nlohmann's SAX events, the node yaml-cpp builds from the same text:
// scalars hold their text (numbers as nlohmann writes them back, which round-trips), maps
// keep file order and, as yaml-cpp's own reading, every key (lookups find the first).
// Not nlohmann's DOM: ordered_json inserts by linear search (quadratic on a 22k-key map);
// not Node::operator[] either, which also searches first: force_insert and push_back.
// With `aside`, a quantization_config.quantized_layers mapping goes into a ModuleTable
// instead (its place in the tree an empty mapping): each entry's value is recorded as its
// events, and a node is built once per distinct value (bench/RESULTS.md, issue 23).
class JsonToYaml : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit JsonToYaml(bool aside) : aside_(aside) {}
  YAML::Node root;
  std::vector<std::pair<YAML::Node, ModuleTable>> tables;

  bool null() override { return event('n', {}); }
  bool boolean(bool b) override { return event('s', b ? "true" : "false"); }
  bool number_integer(number_integer_t v) override { return event('s', std::to_string(v)); }
  bool number_unsigned(number_unsigned_t v) override { return event('s', std::to_string(v)); }
  bool number_float(number_float_t v, const string_t&) override { return event('s', nlohmann::json(v).dump()); }
  bool string(string_t& v) override { return event('s', v); }
  bool binary(binary_t&) override { return false; }  // never produced by the JSON lexer
  bool start_object(std::size_t) override { return event('{', {}); }
  bool end_object() override { return event('}', {}); }
  bool start_array(std::size_t) override { return event('[', {}); }
  bool end_array() override { return event(']', {}); }
  bool key(string_t& k) override { return event('k', k); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

  //! Replays events recorded by `record` (a value of a table read aside) into this tree.
  void replay(std::string_view events) {
    while (!events.empty()) {
      const char kind = events[0];
      size_t len = 0;
      std::memcpy(&len, events.data() + 1, sizeof len);
      build(kind, events.substr(1 + sizeof len, len));
      events.remove_prefix(1 + sizeof len + len);
    }
  }

 private:
  struct Open {
    YAML::Node node;
    bool map;
    std::string key;  // the key it sits under in its parent mapping
  };
  bool aside_;
  std::vector<Open> open_;
  std::string key_;
  // The table being read aside (an index into tables), the nesting inside its current
  // entry's value, that value's events and the values seen so far.
  std::optional<size_t> table_;
  int depth_ = 0;
  std::string events_;
  std::unordered_map<std::string, size_t> value_index_;

  bool event(char kind, std::string_view text) {
    if (table_) return record(kind, text);
    if (aside_ && kind == '{' && !open_.empty() && open_.back().map && key_ == "quantized_layers" &&
        open_.back().key == "quantization_config") {
      const YAML::Node placeholder(YAML::NodeType::Map);
      add(placeholder);
      table_ = tables.size();
      tables.emplace_back(placeholder, ModuleTable{});
      value_index_.clear();
      return true;
    }
    build(kind, text);
    return true;
  }

  void build(char kind, std::string_view text) {
    switch (kind) {
      case 'n': add(YAML::Node(YAML::NodeType::Null)); break;
      case 's': add(YAML::Node(std::string(text))); break;
      case 'k': key_ = text; break;
      case '{':
      case '[': {
        const YAML::Node n(kind == '{' ? YAML::NodeType::Map : YAML::NodeType::Sequence);
        add(n);
        open_.push_back({n, kind == '{', open_.empty() || !open_.back().map ? std::string() : key_});
        break;
      }
      default: open_.pop_back();
    }
  }

  void add(const YAML::Node& v) {
    if (open_.empty()) root = v;
    else if (open_.back().map) open_.back().node.force_insert(key_, v);
    else open_.back().node.push_back(v);
  }

  bool record(char kind, std::string_view text) {
    ModuleTable& t = tables[*table_].second;
    if (depth_ == 0) {
      if (kind == '}') {  // the end of the table
        table_.reset();
        return true;
      }
      if (kind == 'k') {
        t.entries.emplace_back(std::string(text), 0);
        events_.clear();
        return true;
      }
    }
    events_ += kind;
    const size_t len = text.size();
    events_.append(reinterpret_cast<const char*>(&len), sizeof len);
    events_.append(text);
    if (kind == '{' || kind == '[') ++depth_;
    if (kind == '}' || kind == ']') --depth_;
    if (depth_ > 0) return true;
    // The value is whole: the node of an equal value, else a new one.
    const auto [it, is_new] = value_index_.try_emplace(events_, t.values.size());
    if (is_new) {
      JsonToYaml value(false);
      value.replay(events_);
      t.values.push_back(value.root);
    }
    t.entries.back().second = it->second;
    return true;
  }
};

// JSON (a config.json) through nlohmann, whose lexer reads a large file much
// faster than yaml-cpp's regex scanner (bench/RESULTS.md, issue 23); nullopt when the text
// is not a strict JSON object, which yaml-cpp then reads (YAML, Python's NaN/Infinity) or
// reports with its line and column.
std::optional<JsonToYaml> parse_json_object(const std::string& text, bool aside) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return std::nullopt;
  JsonToYaml sax(aside);
  if (!nlohmann::json::sax_parse(text, &sax)) return std::nullopt;
  return sax;
}

YAML::Node parse_yaml(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(file, "", "valid YAML or JSON",
                     "a syntax error at line " + std::to_string(e.mark.line + 1) + ", column " +
                         std::to_string(e.mark.column + 1) + " (" + e.msg + ")");
  }
  if (!root.IsDefined() || root.IsNull()) throw InputError(file, "", "a mapping of keys to values", "an empty file");
  if (!root.IsMap()) throw InputError(file, "", "a mapping of keys to values", show(root));
  return root;
}

}  // namespace

YAML::Node parse_yaml_mapping(const std::string& text, const std::string& file) {
  if (auto json = parse_json_object(text, false)) return json->root;
  return parse_yaml(text, file);
}

ModelDocument parse_model_document(const std::string& text, const std::string& file) {
  if (auto json = parse_json_object(text, true)) return {json->root, std::move(json->tables)};
  return {parse_yaml(text, file), {}};
}

ModuleTable ModelDocument::take_table(const YAML::Node& map) {
  for (auto& [node, table] : aside)
    if (node.is(map)) return std::move(table);
  ModuleTable t;
  for (const auto& kv : map) {
    t.entries.emplace_back(kv.first.as<std::string>(), t.values.size());
    t.values.push_back(kv.second);
  }
  return t;
}

std::optional<double> opt_num(const YAML::Node& n, const std::string& key, const std::string& file,
                              double min_value, double max_value) {
  const YAML::Node v = child(n, key);
  if (!v.IsDefined()) return std::nullopt;
  const auto d = as_number(v);
  const std::string range = "a finite number >= " + YAML::Node(min_value).Scalar() +
                            (max_value < 1e300 ? " and <= " + YAML::Node(max_value).Scalar() : "");
  if (!d || !std::isfinite(*d) || *d < min_value || *d > max_value) throw InputError(file, key, range, show(v));
  return d;
}

double req_num(const YAML::Node& n, const std::string& key, const std::string& file, double min_value,
               double max_value) {
  const auto d = opt_num(n, key, file, min_value, max_value);
  if (!d) throw InputError(file, key, "a number (the key is required)", "nothing");
  return *d;
}

std::optional<int64_t> opt_int(const YAML::Node& n, const std::string& key, const std::string& file,
                               int64_t min_value) {
  const YAML::Node v = child(n, key);
  if (!v.IsDefined()) return std::nullopt;
  const auto d = as_number(v);
  const std::string expected = "an integer >= " + std::to_string(min_value);
  // 9.2e18 is the largest double below 2^63: anything above cannot be a byte count.
  if (!d || !std::isfinite(*d) || *d != std::floor(*d) || *d < static_cast<double>(min_value) || *d > 9.2e18)
    throw InputError(file, key, expected, show(v));
  return static_cast<int64_t>(*d);
}

int64_t req_int(const YAML::Node& n, const std::string& key, const std::string& file, int64_t min_value) {
  const auto i = opt_int(n, key, file, min_value);
  if (!i) throw InputError(file, key, "an integer >= " + std::to_string(min_value) + " (the key is required)", "nothing");
  return *i;
}

std::optional<bool> opt_bool(const YAML::Node& n, const std::string& key, const std::string& file) {
  const YAML::Node v = child(n, key);
  if (!v.IsDefined()) return std::nullopt;
  if (v.IsScalar()) {
    const std::string& s = v.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  throw InputError(file, key, "true or false", show(v));
}

std::optional<std::string> opt_str(const YAML::Node& n, const std::string& key, const std::string& file) {
  const YAML::Node v = child(n, key);
  if (!v.IsDefined()) return std::nullopt;
  if (!v.IsScalar()) throw InputError(file, key, "a string", show(v));
  return v.Scalar();
}

std::string req_str(const YAML::Node& n, const std::string& key, const std::string& file) {
  const auto s = opt_str(n, key, file);
  if (!s) throw InputError(file, key, "a string (the key is required)", "nothing");
  return *s;
}

}  // namespace kvplan::io
