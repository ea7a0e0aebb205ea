#include "process/process_ranks.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "cpu/process_id.hpp"

namespace asynctp_test {
namespace {

using Clock = std::chrono::steady_clock;

// What a child sends through its pipe: records of a kind letter ('N' a
// note, 'O' the outcome: ok, error code or -1, then the message), the
// payload's length and a newline, then the payload.
std::string record(char kind, const std::string& payload) {
  return kind + std::to_string(payload.size()) + "\n" + payload;
}

std::string encode(const Outcome& o) {
  return std::string(o.ok ? "1" : "0") + "\n" +
         std::to_string(o.code ? static_cast<int>(*o.code) : -1) + "\n" + o.message;
}

bool decode(const std::string& text, Outcome& o) {
  const auto first = text.find('\n');
  if (first == std::string::npos) return false;
  const auto second = text.find('\n', first + 1);
  if (second == std::string::npos) return false;
  o.ok = text.substr(0, first) == "1";
  const int code = std::stoi(text.substr(first + 1, second - first - 1));
  if (code >= 0) o.code = static_cast<asynctp::ErrorCode>(code);
  o.message = text.substr(second + 1);
  return true;
}

// Reads the records of `text` into the report; a record cut short (the
// child died while writing it) ends the reading.
void read_records(const std::string& text, RankReport& report) {
  std::size_t at = 0;
  while (at < text.size()) {
    const char kind = text[at];
    const auto newline = text.find('\n', at);
    if (newline == std::string::npos) return;
    const std::size_t size = std::stoul(text.substr(at + 1, newline - at - 1));
    if (newline + 1 + size > text.size()) return;
    const std::string payload = text.substr(newline + 1, size);
    at = newline + 1 + size;
    if (kind == 'N') {
      report.notes.push_back(payload);
    } else if (kind == 'O') {
      report.reported = decode(payload, report.outcome);
    }
  }
}

// Appends what the (non-blocking) pipe holds now.
void drain(int fd, std::string& text) {
  if (fd < 0) return;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) {
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// Failures recorded so far in the running test (a child inherits the
// parent's: only those it adds are its own).
int failures_so_far() {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (test == nullptr) return 0;
  int failures = 0;
  for (int i = 0; i < test->result()->total_part_count(); ++i) {
    failures += test->result()->GetTestPartResult(i).failed() ? 1 : 0;
  }
  return failures;
}

[[noreturn]] void child(int world, int rank, const asynctp::cpu::UniqueId& id,
                        const NotingRankBody& body, const asynctp::cpu::ProcessOptions& options,
                        int fd) {
  const int inherited_failures = failures_so_far();
  const Note note = [fd](const std::string& text) { write_all(fd, record('N', text)); };
  // The communicator's creation may throw too: its error is the outcome.
  Outcome outcome;
  const Outcome made = outcome_of([&] {
    const std::unique_ptr<asynctp::Comm> comm =
        asynctp::cpu::make_process_comm(id, world, rank, options);
    outcome = body(*comm, note);
    return outcome.info;
  });
  if (!made.ok) outcome = made;
  write_all(fd, record('O', encode(outcome)));
  ::close(fd);
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(failures_so_far() > inherited_failures ? 1 : 0);
}

}  // namespace

std::vector<RankReport> run_process_ranks(int world, const asynctp::cpu::UniqueId& id,
                                          const NotingRankBody& body,
                                          const asynctp::cpu::ProcessOptions& options,
                                          double limit_s) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<RankReport> reports(static_cast<std::size_t>(world));
  std::vector<pid_t> pids(static_cast<std::size_t>(world), -1);
  std::vector<int> fds(static_cast<std::size_t>(world), -1);
  std::vector<std::string> texts(static_cast<std::size_t>(world));
  const auto begin = Clock::now();
  for (int r = 0; r < world; ++r) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) {
      ADD_FAILURE() << "pipe failed";
      break;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(pipe_fds[0]);
      for (int fd : fds) {
        if (fd >= 0) ::close(fd);
      }
      child(world, r, id, body, options, pipe_fds[1]);
    }
    ::close(pipe_fds[1]);
    if (pid < 0) {
      ::close(pipe_fds[0]);
      ADD_FAILURE() << "fork failed";
      break;
    }
    ::fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
    pids[static_cast<std::size_t>(r)] = pid;
    fds[static_cast<std::size_t>(r)] = pipe_fds[0];
    reports[static_cast<std::size_t>(r)].rank = r;
  }

  // Reap each child as soon as it ends (a killed one must not linger as a
  // zombie) and drain the pipes, until all are done or the limit passes.
  int running = 0;
  for (pid_t pid : pids) running += pid > 0 ? 1 : 0;
  bool hung = false;
  while (running > 0) {
    for (int r = 0; r < world; ++r) {
      drain(fds[static_cast<std::size_t>(r)], texts[static_cast<std::size_t>(r)]);
    }
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      for (int r = 0; r < world; ++r) {
        if (pids[static_cast<std::size_t>(r)] != done) continue;
        RankReport& report = reports[static_cast<std::size_t>(r)];
        report.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
        report.exited = WIFEXITED(status);
        report.exit_code = report.exited ? WEXITSTATUS(status) : -1;
        report.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        pids[static_cast<std::size_t>(r)] = -1;
        --running;
      }
      continue;
    }
    if (std::chrono::duration<double>(Clock::now() - begin).count() > limit_s && !hung) {
      hung = true;
      ADD_FAILURE() << "HANG: the process ranks did not finish within " << limit_s
                    << " s; killing them";
      for (pid_t pid : pids) {
        if (pid > 0) ::kill(pid, SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (int r = 0; r < world; ++r) {
    const int fd = fds[static_cast<std::size_t>(r)];
    if (fd < 0) continue;
    drain(fd, texts[static_cast<std::size_t>(r)]);
    ::close(fd);
    read_records(texts[static_cast<std::size_t>(r)], reports[static_cast<std::size_t>(r)]);
  }
  return reports;
}

std::vector<RankReport> run_process_ranks(int world, const asynctp::cpu::UniqueId& id,
                                          const RankBody& body,
                                          const asynctp::cpu::ProcessOptions& options,
                                          double limit_s) {
  return run_process_ranks(
      world, id, NotingRankBody([&body](asynctp::Comm& comm, const Note&) { return body(comm); }),
      options, limit_s);
}

std::vector<RankReport> run_process_ranks(int world, const RankBody& body,
                                          const asynctp::cpu::ProcessOptions& options,
                                          double limit_s) {
  return run_process_ranks(world, asynctp::cpu::make_unique_id(), body, options, limit_s);
}

void expect_all_ranks_ok(const std::vector<RankReport>& reports) {
  for (const RankReport& report : reports) {
    EXPECT_TRUE(report.exited && report.exit_code == 0)
        << "rank " << report.rank << " ended with exit code " << report.exit_code << ", signal "
        << report.signal << " (its failed checks are printed above)";
    EXPECT_TRUE(report.reported && report.outcome.ok)
        << "rank " << report.rank << " threw: " << report.outcome.message;
  }
}

std::vector<std::string> leftover_segments(const asynctp::cpu::UniqueId& id) {
  const std::string token = asynctp::cpu::segment_names(id).token;
  std::vector<std::string> found;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return found;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.find(token) != std::string::npos) found.push_back(name);
  }
  ::closedir(dir);
  return found;
}

}  // namespace asynctp_test
