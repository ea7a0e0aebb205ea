// A fixed team of persistent threads that run one job at a time: launch()
// hands every member the job and returns at once, wait() joins the job and
// rethrows the first exception. The producer is a team of one (the copy
// engine's analogue), the GEMM pool a team of P (the persistent CTAs').
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace asynctp::cpu {

class ThreadTeam {
 public:
  using Job = std::function<void(int member)>;

  explicit ThreadTeam(int size);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const noexcept { return static_cast<int>(threads_.size()); }
  void launch(Job job);  // precondition: the previous job was waited for
  void wait();           // rethrows the lowest member's exception, if any

 private:
  void member_loop(int member);

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  Job job_;
  std::uint64_t job_serial_ = 0;
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
};

}  // namespace asynctp::cpu
