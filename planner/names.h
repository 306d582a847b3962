// kvplan planner: one name table per enum. Each table is the single home of the names a
// value prints as, the spellings a user may type for it, and the "expected a, b or c"
// text that refuses anything else, so a printed name, a parser and an error message
// cannot drift apart. Standard library only.
#pragma once

#include <array>
#include <cctype>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kvplan {

//! One spelling of an enum value. The first entry of a value is its canonical name (what
//! to_string prints and the expected-text lists); later entries of the same value are
//! aliases that parse to it.
template <typename E>
struct NameEntry {
  std::string_view name;
  E value;
};

template <typename E, size_t N>
class NameTable {
 public:
  //! `fold_case`: parse ignores ASCII case ("BF16" reads as bf16), as config.json dtypes
  //! are written in either case.
  constexpr NameTable(std::array<NameEntry<E>, N> entries, bool fold_case = false)
      : entries_(entries), fold_case_(fold_case) {}

  //! The canonical name of `e` ("?" for a value the table lacks, which a test forbids).
  constexpr std::string_view name(E e) const {
    for (const NameEntry<E>& x : entries_)
      if (x.value == e) return x.name;
    return "?";
  }

  std::optional<E> parse(std::string_view s) const {
    for (const NameEntry<E>& x : entries_)
      if (equal(x.name, s)) return x.value;
    return std::nullopt;
  }

  //! The canonical names as an error message lists them: "a, b or c".
  std::string expected() const { return join(", ", " or "); }
  //! The canonical names as --help lists them: "a|b|c".
  std::string choices() const { return join("|", "|"); }

  constexpr const std::array<NameEntry<E>, N>& entries() const { return entries_; }
  constexpr bool canonical(size_t i) const {
    for (size_t j = 0; j < i; ++j)
      if (entries_[j].value == entries_[i].value) return false;
    return true;
  }

 private:
  bool equal(std::string_view a, std::string_view b) const {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      const auto x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
      if (fold_case_ ? std::tolower(x) != std::tolower(y) : x != y) return false;
    }
    return true;
  }

  std::string join(std::string_view sep, std::string_view last) const {
    size_t count = 0;
    for (size_t i = 0; i < N; ++i) if (canonical(i)) ++count;
    std::string out;
    size_t k = 0;
    for (size_t i = 0; i < N; ++i) {
      if (!canonical(i)) continue;
      if (k > 0) out += k + 1 == count ? last : sep;
      out += entries_[i].name;
      ++k;
    }
    return out;
  }

  std::array<NameEntry<E>, N> entries_;
  bool fold_case_;
};

}  // namespace kvplan
