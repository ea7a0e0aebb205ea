// Escaping of text for a JSON string literal, shared by the trace writer and
// the CLI's JSON output.
#pragma once

#include <string>

namespace asynctp::core {

// Quotes, backslashes and control characters escaped; UTF-8 passes through.
std::string json_escape(const std::string& text);

}  // namespace asynctp::core
