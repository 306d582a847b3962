// A small JSON writer (the harness must not need nlohmann on the device machine).
// Writes compact-but-readable JSON: objects and arrays open and close explicitly.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace kvplan::gv {

class JsonWriter {
 public:
  JsonWriter& begin_object() { value_prefix(); out_ += '{'; first_.push_back(true); return *this; }
  JsonWriter& end_object() { first_.pop_back(); out_ += '}'; return *this; }
  JsonWriter& begin_array() { value_prefix(); out_ += '['; first_.push_back(true); return *this; }
  JsonWriter& end_array() { first_.pop_back(); out_ += ']'; return *this; }
  JsonWriter& key(std::string_view k) {
    comma();
    out_ += "\n";
    out_.append(2 * first_.size(), ' ');
    quote(k);
    out_ += ": ";
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view s) { value_prefix(); quote(s); return *this; }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b) { value_prefix(); out_ += b ? "true" : "false"; return *this; }
  JsonWriter& value(int64_t v) { value_prefix(); out_ += std::to_string(v); return *this; }
  JsonWriter& value(double v) {
    value_prefix();
    if (!std::isfinite(v)) { out_ += "null"; return *this; }  // JSON has no inf/nan
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out_ += buf;
    return *this;
  }
  JsonWriter& null() { value_prefix(); out_ += "null"; return *this; }
  template <class T> JsonWriter& field(std::string_view k, T v) { key(k); return value(v); }
  const std::string& str() const { return out_; }

 private:
  void comma() {
    if (first_.empty()) return;
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
  void value_prefix() {
    if (after_key_) { after_key_ = false; return; }
    comma();
  }
  void quote(std::string_view s) {
    out_ += '"';
    for (char c : s) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\t': out_ += "\\t"; break;
        case '\r': out_ += "\\r"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            out_ += buf;
          } else {
            out_ += c;
          }
      }
    }
    out_ += '"';
  }
  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace kvplan::gv
