// A minimal JSON parser for the tests: enough to prove the tool's output is
// well-formed JSON and to read fields back, without a new dependency.
// Throws std::runtime_error at the first syntax error, with its offset.
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace asynctp::cli_test {

struct Json {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;

  bool is_null() const { return kind == Kind::null; }
  bool has(const std::string& key) const { return kind == Kind::object && object.count(key) > 0; }
  const Json& operator[](const std::string& key) const {
    const auto it = object.find(key);
    if (kind != Kind::object || it == object.end()) {
      throw std::runtime_error("json: no key '" + key + "'");
    }
    return it->second;
  }
  const Json& operator[](std::size_t i) const { return array.at(i); }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : text_(text) {}

  Json parse_document() {
    Json value = parse_value();
    skip_space();
    if (pos_ != text_.size()) fail("trailing characters");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("json: " + what + " at offset " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char peek() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool consume_word(const char* word) {
    const std::string w(word);
    if (text_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }

  Json parse_value() {
    Json v;
    const char c = peek();
    if (c == '{') {
      v.kind = Json::Kind::object;
      ++pos_;
      if (peek() == '}') {
        ++pos_;
        return v;
      }
      for (;;) {
        if (peek() != '"') fail("expected a key");
        const std::string key = parse_string();
        expect(':');
        v.object[key] = parse_value();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::Kind::array;
      ++pos_;
      if (peek() == ']') {
        ++pos_;
        return v;
      }
      for (;;) {
        v.array.push_back(parse_value());
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::Kind::string;
      v.string = parse_string();
      return v;
    }
    if (consume_word("null")) return v;
    if (consume_word("true")) {
      v.kind = Json::Kind::boolean;
      v.boolean = true;
      return v;
    }
    if (consume_word("false")) {
      v.kind = Json::Kind::boolean;
      return v;
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      const char* begin = text_.c_str() + pos_;
      char* end = nullptr;
      v.kind = Json::Kind::number;
      v.number = std::strtod(begin, &end);
      if (end == begin) fail("bad number");
      pos_ += static_cast<std::size_t>(end - begin);
      return v;
    }
    fail(std::string("unexpected '") + c + "'");
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c == '\\') {
        if (pos_ >= text_.size()) fail("unterminated escape");
        const char e = text_[pos_++];
        switch (e) {
          case '"':
            out += '"';
            break;
          case '\\':
            out += '\\';
            break;
          case '/':
            out += '/';
            break;
          case 'n':
            out += '\n';
            break;
          case 'r':
            out += '\r';
            break;
          case 't':
            out += '\t';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'u':
            if (pos_ + 4 > text_.size()) fail("short \\u escape");
            out += '?';  // the tests never need the code point itself
            pos_ += 4;
            break;
          default:
            fail("bad escape");
        }
        continue;
      }
      out += c;
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }

  const std::string& text_;
  std::size_t pos_ = 0;
};

inline Json parse_json(const std::string& text) { return JsonParser(text).parse_document(); }

}  // namespace asynctp::cli_test
