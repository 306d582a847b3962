#include "io/csv.h"

#include "planner/types.h"

namespace kvplan::io {

void for_each_csv_row(
    const std::string& text, const std::string& file, std::string_view header,
    const std::function<void(const std::vector<std::string_view>& fields, int64_t line_no, const std::string& where)>&
        row) {
  size_t pos = 0;
  int64_t line_no = 0;
  bool header_seen = false;
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (std::string_view(text).substr(0, kBom.size()) == kBom) pos = kBom.size();
  std::vector<std::string_view> fields;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    const std::string where = " on line " + std::to_string(line_no);
    if (!header_seen) {
      std::string h;
      for (const char c : line)
        if (c != ' ' && c != '\t') h += c;
      if (h != header)
        throw InputError(file, "", "a header line '" + std::string(header) + "'", "'" + std::string(line) + "'" + where);
      header_seen = true;
      continue;
    }
    fields.clear();
    for (size_t start = 0;;) {
      const size_t comma = line.find(',', start);
      fields.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    row(fields, line_no, where);
  }
}

}  // namespace kvplan::io
