// The small CSV files kvplan reads (a request trace, a demand curve), split one way. Used
// inside io/ only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kvplan::io {

//! Calls `row` for each data row of `text`: UTF-8 with or without a byte-order mark (as
//! spreadsheet programs save it), LF or CRLF line ends, blank lines skipped, fields split at
//! commas (kvplan's formats have no quoting). The first non-blank line must be `header`
//! (spaces and tabs ignored), else InputError naming `file`. `where` is " on line N", for
//! the caller's messages.
void for_each_csv_row(
    const std::string& text, const std::string& file, std::string_view header,
    const std::function<void(const std::vector<std::string_view>& fields, int64_t line_no, const std::string& where)>&
        row);

}  // namespace kvplan::io
