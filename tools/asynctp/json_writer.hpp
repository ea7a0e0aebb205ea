// A small streaming JSON writer (no dependency for one object): commas,
// escaping and indentation handled here; NaN and infinity become null since
// JSON has no spelling for them.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace asynctp::tool {

class JsonWriter {
 public:
  void begin_object();
  void end_object();
  // An inline array keeps short lists of numbers on one line.
  void begin_array(bool inline_items = false);
  void end_array();
  void key(const std::string& name);

  void value(const std::string& text);
  void value(const char* text);
  void value(double number);
  void value(std::int64_t number);
  void value(int number) { value(static_cast<std::int64_t>(number)); }
  void value(std::uint64_t number);
  void value(bool flag);
  void null();

  std::string str() const { return out_.str(); }

 private:
  struct Level {
    bool first = true;
    bool inline_items = false;
  };
  void before_value();
  void newline();

  std::ostringstream out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
};

}  // namespace asynctp::tool
