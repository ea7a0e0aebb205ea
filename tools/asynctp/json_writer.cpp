#include "json_writer.hpp"

#include <cmath>
#include <cstdio>

#include "core/json_escape.hpp"

namespace asynctp::tool {

void JsonWriter::newline() { out_ << '\n' << std::string(2 * levels_.size(), ' '); }

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (levels_.empty()) return;
  Level& level = levels_.back();
  if (!level.first) out_ << (level.inline_items ? ", " : ",");
  if (!level.inline_items) newline();
  level.first = false;
}

void JsonWriter::begin_object() {
  before_value();
  out_ << '{';
  levels_.push_back({});
}

void JsonWriter::end_object() {
  const bool empty = levels_.back().first;
  levels_.pop_back();
  if (!empty) newline();
  out_ << '}';
  if (levels_.empty()) out_ << '\n';
}

void JsonWriter::begin_array(bool inline_items) {
  before_value();
  out_ << '[';
  levels_.push_back({true, inline_items});
}

void JsonWriter::end_array() {
  const Level level = levels_.back();
  levels_.pop_back();
  if (!level.first && !level.inline_items) newline();
  out_ << ']';
}

void JsonWriter::key(const std::string& name) {
  before_value();
  out_ << '"' << core::json_escape(name) << "\": ";
  after_key_ = true;
}

void JsonWriter::value(const std::string& text) {
  before_value();
  out_ << '"' << core::json_escape(text) << '"';
}

void JsonWriter::value(const char* text) { value(std::string(text)); }

void JsonWriter::value(double number) {
  if (!std::isfinite(number)) {
    null();
    return;
  }
  before_value();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", number);
  out_ << buf;
}

void JsonWriter::value(std::int64_t number) {
  before_value();
  out_ << number;
}

void JsonWriter::value(std::uint64_t number) {
  before_value();
  out_ << number;
}

void JsonWriter::value(bool flag) {
  before_value();
  out_ << (flag ? "true" : "false");
}

void JsonWriter::null() {
  before_value();
  out_ << "null";
}

}  // namespace asynctp::tool
