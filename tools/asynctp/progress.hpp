// A progress line on stderr for runs long enough to make a user wonder
// (~1.5 s): rewritten in place on a terminal, plain lines at most every ~2 s
// otherwise (logs and CI). A background thread does the printing, so a status
// set before a long silent step (a float64 reference) still shows up.
#pragma once

#include <memory>
#include <string>

namespace asynctp::tool {

class Progress {
 public:
  Progress();
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Thread-safe; the newest status wins.
  void set(const std::string& status);
  // Stops printing and erases the line, so results print on a clean line.
  void finish();

 private:
  struct Printer;
  std::unique_ptr<Printer> printer_;
};

}  // namespace asynctp::tool
