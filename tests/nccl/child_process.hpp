// This test binary run again as child processes, one rank of a launched job
// each (as torchrun, mpirun or srun would start them), with their output in
// log files and a bound on how long they may run.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace asynctp_test::nccl {

struct Child {
  pid_t pid = -1;
  std::string log;  // the child's stdout and stderr
};

// Starts this binary with --gtest_filter=`test` and this process's
// environment, where `set` ("NAME=value") replaces variables of the same
// name. ADD_FAILUREs and returns pid -1 when it cannot be started.
inline Child spawn_self(const std::string& test, const std::vector<std::string>& set,
                        const std::string& log_name) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    bool replaced = false;
    for (const std::string& s : set) replaced = replaced || s.substr(0, s.find('=')) == name;
    if (!replaced) env.push_back(kv);
  }
  env.insert(env.end(), set.begin(), set.end());
  std::vector<char*> envp;
  for (std::string& kv : env) envp.push_back(kv.data());
  envp.push_back(nullptr);

  Child child;
  child.log = ::testing::TempDir() + log_name;
  const std::string self = "/proc/self/exe";
  std::string filter = "--gtest_filter=" + test;
  std::vector<char*> argv = {const_cast<char*>(self.c_str()), filter.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, child.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  const int rc = posix_spawn(&child.pid, self.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    ADD_FAILURE() << "posix_spawn " << test << ": error " << rc;
    child.pid = -1;
  }
  return child;
}

struct ChildResult {
  bool finished = false;  // false: still running at the limit, and killed
  bool passed = false;    // exit status 0 and gtest's "[  PASSED  ] 1 test"
  std::string log_text;
};

// Waits for every child up to `limit_s`, kills the ones still running, and
// reads their logs.
inline std::vector<ChildResult> wait_children(const std::vector<Child>& children, double limit_s) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long long>(limit_s * 1e3));
  std::vector<int> status(children.size(), -1);
  std::vector<ChildResult> out(children.size());
  std::size_t running = 0;
  for (const Child& c : children) running += c.pid > 0;
  while (running > 0 && std::chrono::steady_clock::now() < deadline) {
    for (std::size_t i = 0; i < children.size(); ++i) {
      if (children[i].pid <= 0 || out[i].finished) continue;
      if (::waitpid(children[i].pid, &status[i], WNOHANG) == children[i].pid) {
        out[i].finished = true;
        --running;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (children[i].pid > 0 && !out[i].finished) {
      ::kill(children[i].pid, SIGKILL);
      ::waitpid(children[i].pid, nullptr, 0);
    }
    std::ifstream in(children[i].log);
    std::stringstream text;
    text << in.rdbuf();
    out[i].log_text = text.str();
    out[i].passed = out[i].finished && WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0 &&
                    out[i].log_text.find("[  PASSED  ] 1 test") != std::string::npos;
  }
  return out;
}

}  // namespace asynctp_test::nccl
