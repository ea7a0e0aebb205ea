// Runs the built `asynctp` binary as a child process and captures what a
// user would see: stdout, stderr and the exit status.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace asynctp::cli_test {

struct ToolResult {
  int exit_code = -1;  // -1 when the child did not exit normally
  std::string out;
  std::string err;
};

// The tool sits next to the tests in the build tree: build/tests/<this> and
// build/tools/asynctp. ASYNCTP_CLI overrides, for installed or moved binaries.
inline std::string tool_path() {
  if (const char* env = std::getenv("ASYNCTP_CLI"); env != nullptr && *env != '\0') return env;
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "asynctp";
  std::string dir(self, static_cast<std::size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  return dir + "/../tools/asynctp";
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A private temporary directory, removed with its files on destruction.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/asynctp_cli_test_XXXXXX";
    const char* made = mkdtemp(pattern);
    path_ = made ? made : "/tmp";
  }
  ~TempDir() {
    const std::string command = "rm -rf '" + path_ + "'";
    if (path_ != "/tmp") (void)std::system(command.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// An `env` entry for the tests that want the machine's GPUs: the child keeps
// the parent's CUDA_VISIBLE_DEVICES (or its absence) instead of "".
inline const std::pair<std::string, std::string> kMachineGpus = {"CUDA_VISIBLE_DEVICES",
                                                                 "<inherit>"};

// The child's output goes to files (not pipes) so a chatty child can never
// block on a full pipe while we wait for it. ASYNCTP_* settings of the
// developer's shell are removed so every test sees the defaults; `env` sets
// the ones a test wants. GPUs are hidden (CUDA_VISIBLE_DEVICES="") unless a
// test asks for them, so that `--backend auto` means cpu, and every
// expectation holds, on GPU machines as well.
// start_tool returns at once; finish_tool waits for the tool. Several may
// run at once (the ranks of a launched job).
struct StartedTool {
  pid_t pid = -1;
  std::unique_ptr<TempDir> dir = std::make_unique<TempDir>();
};

inline StartedTool start_tool(const std::vector<std::string>& args,
                              const std::vector<std::pair<std::string, std::string>>& env = {}) {
  StartedTool started;
  const TempDir& dir = *started.dir;
  const std::string out_path = dir.file("stdout");
  const std::string err_path = dir.file("stderr");
  const std::string tool = tool_path();

  std::vector<std::string> argv_storage = {tool};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    for (const char* name :
         {"ASYNCTP_ALGO", "ASYNCTP_WAIT_TIMEOUT_MS", "ASYNCTP_TILE_M", "ASYNCTP_TILE_N",
          "ASYNCTP_CPU_WORKERS", "ASYNCTP_DEBUG", "ASYNCTP_TUNE"}) {
      unsetenv(name);
    }
    const char* parent_gpus = std::getenv("CUDA_VISIBLE_DEVICES");
    const std::string inherited_gpus = parent_gpus ? parent_gpus : "";
    const bool had_gpus_variable = parent_gpus != nullptr;
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    for (const auto& entry : env) {
      if (entry != kMachineGpus) {
        setenv(entry.first.c_str(), entry.second.c_str(), 1);
      } else if (had_gpus_variable) {
        setenv("CUDA_VISIBLE_DEVICES", inherited_gpus.c_str(), 1);
      } else {
        unsetenv("CUDA_VISIBLE_DEVICES");
      }
    }
    execv(tool.c_str(), argv.data());
    _exit(127);  // exec failed: the tool was not built where we looked
  }
  started.pid = pid;
  return started;
}

inline ToolResult finish_tool(StartedTool started) {
  ToolResult result;
  if (started.pid < 0) return result;
  int status = 0;
  waitpid(started.pid, &status, 0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  result.out = read_file(started.dir->file("stdout"));
  result.err = read_file(started.dir->file("stderr"));
  return result;
}

inline ToolResult run_tool(const std::vector<std::string>& args,
                           const std::vector<std::pair<std::string, std::string>>& env = {}) {
  return finish_tool(start_tool(args, env));
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The line of `text` that starts with `prefix`, or "" when none does.
inline std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

}  // namespace asynctp::cli_test
