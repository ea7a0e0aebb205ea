// A small streaming JSON writer (no dependency for one object): commas,
// escaping and indentation handled here; NaN, infinity and an empty optional
// become null, since JSON has no spelling for the first two.
#pragma once

#include <cmath>
#include <concepts>
#include <cstdio>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace asynctp::tool {

class JsonWriter {
 public:
  // An object ('{') or array ('['); an inline one keeps a short list of
  // numbers on one line.
  void open(char bracket, bool inline_items = false) {
    scalar(std::string(1, bracket));
    levels_.push_back({bracket == '{' ? '}' : ']', inline_items});
  }
  void close() {
    const Level level = levels_.back();
    levels_.pop_back();
    if (!level.first && !level.inline_items) out_ += '\n' + std::string(2 * levels_.size(), ' ');
    out_ += level.close;
    if (levels_.empty()) out_ += '\n';
  }
  void key(const std::string& name) {
    value(name);
    out_ += ": ";
    after_key_ = true;
  }

  // Quotes, backslashes and control characters escaped; UTF-8 passes through.
  void value(const std::string& text) {
    std::string quoted = "\"";
    for (const char c : text) {
      if (c == '"' || c == '\\') quoted += '\\';
      if (static_cast<unsigned char>(c) >= 0x20) {
        quoted += c;
        continue;
      }
      char code[8];
      std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(c));
      quoted += c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : code;
    }
    scalar(quoted + '"');
  }
  void value(const char* text) { value(std::string(text)); }
  void value(double number) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", number);
    scalar(std::isfinite(number) ? text : "null");
  }
  void value(bool flag) { scalar(flag ? "true" : "false"); }
  template <std::integral T>
  void value(T number) {
    scalar(std::to_string(number));
  }
  template <typename T>
  void value(const std::optional<T>& maybe) {
    maybe ? value(*maybe) : scalar("null");
  }
  // A list of numbers stays on one line; of anything else, one item a line.
  template <typename T>
  void value(const std::vector<T>& items) {
    open('[', std::is_arithmetic_v<T>);
    for (const T& item : items) value(item);
    close();
  }
  template <typename T>
  void field(const std::string& name, const T& v) {
    key(name);
    value(v);
  }

  const std::string& str() const noexcept { return out_; }

 private:
  struct Level {
    char close;
    bool inline_items;
    bool first = true;
  };
  // The comma and line break a value needs in its container, unless it
  // follows its key.
  void scalar(const std::string& text) {
    if (!after_key_ && !levels_.empty()) {
      Level& level = levels_.back();
      if (!level.first) out_ += level.inline_items ? ", " : ",";
      if (!level.inline_items) out_ += '\n' + std::string(2 * levels_.size(), ' ');
      level.first = false;
    }
    after_key_ = false;
    out_ += text;
  }

  std::string out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
};

}  // namespace asynctp::tool
