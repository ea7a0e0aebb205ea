// A minimal JSON syntax checker (RFC 8259 grammar, no semantic checks), so
// tests can assert that emitted traces load in a JSON parser.
#pragma once

#include <cctype>
#include <cstring>
#include <string>

namespace asynctp_test {

class JsonChecker {
 public:
  // True when `text` is exactly one JSON value (plus whitespace); otherwise
  // false with error() saying where parsing stopped.
  bool check(const std::string& text) {
    s_ = &text;
    pos_ = 0;
    error_.clear();
    skip_ws();
    if (!value()) return false;
    skip_ws();
    if (pos_ != text.size()) return fail("trailing characters");
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  bool fail(const char* what) {
    error_ = std::string(what) + " at offset " + std::to_string(pos_) + " near '" +
             s_->substr(pos_, 40) + "'";
    return false;
  }
  char peek() const { return pos_ < s_->size() ? (*s_)[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_->size() && std::strchr(" \t\r\n", (*s_)[pos_]) != nullptr) ++pos_;
  }
  bool literal(const char* word) {
    const std::size_t n = std::strlen(word);
    if (s_->compare(pos_, n, word) != 0) return fail("bad literal");
    pos_ += n;
    return true;
  }
  bool value() {
    switch (peek()) {
      case '{': return object();
      case '[': return array();
      case '"': return string();
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return number();
    }
  }
  bool object() {
    ++pos_;
    skip_ws();
    if (peek() == '}') { ++pos_; return true; }
    for (;;) {
      skip_ws();
      if (peek() != '"' || !string()) return fail("expected a key");
      skip_ws();
      if (peek() != ':') return fail("expected ':'");
      ++pos_;
      skip_ws();
      if (!value()) return false;
      skip_ws();
      if (peek() == ',') { ++pos_; continue; }
      if (peek() == '}') { ++pos_; return true; }
      return fail("expected ',' or '}'");
    }
  }
  bool array() {
    ++pos_;
    skip_ws();
    if (peek() == ']') { ++pos_; return true; }
    for (;;) {
      skip_ws();
      if (!value()) return false;
      skip_ws();
      if (peek() == ',') { ++pos_; continue; }
      if (peek() == ']') { ++pos_; return true; }
      return fail("expected ',' or ']'");
    }
  }
  bool string() {
    ++pos_;
    while (pos_ < s_->size()) {
      const unsigned char c = static_cast<unsigned char>((*s_)[pos_++]);
      if (c == '"') return true;
      if (c < 0x20) return fail("raw control character in string");
      if (c == '\\') {
        const char e = peek();
        ++pos_;
        if (e == 'u') {
          for (int i = 0; i < 4; ++i, ++pos_) {
            if (!std::isxdigit(static_cast<unsigned char>(peek()))) return fail("bad \\u escape");
          }
        } else if (std::strchr("\"\\/bfnrt", e) == nullptr || e == '\0') {
          return fail("bad escape");
        }
      }
    }
    return fail("unterminated string");
  }
  bool number() {
    const std::size_t begin = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (std::isdigit(static_cast<unsigned char>(peek()))) {
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    } else {
      pos_ = begin;
      return fail("expected a value");
    }
    if (peek() == '.') {
      ++pos_;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) return fail("bad fraction");
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) return fail("bad exponent");
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    }
    return true;
  }

  const std::string* s_ = nullptr;
  std::size_t pos_ = 0;
  std::string error_;
};

}  // namespace asynctp_test
