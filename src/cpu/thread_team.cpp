#include "cpu/thread_team.hpp"

namespace asynctp::cpu {

ThreadTeam::ThreadTeam(int size) : errors_(static_cast<std::size_t>(size)) {
  threads_.reserve(static_cast<std::size_t>(size));
  for (int member = 0; member < size; ++member) {
    threads_.emplace_back([this, member] { member_loop(member); });
  }
}

ThreadTeam::~ThreadTeam() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    work_done_.wait(lock, [&] { return running_ == 0; });
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadTeam::launch(Job job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = std::move(job);
    for (auto& e : errors_) e = nullptr;
    running_ = size();
    ++job_serial_;
  }
  work_ready_.notify_all();
}

void ThreadTeam::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, [&] { return running_ == 0; });
  for (auto& e : errors_) {
    if (e) std::rethrow_exception(e);
  }
}

void ThreadTeam::member_loop(int member) {
  std::uint64_t seen = 0;
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [&] { return stopping_ || job_serial_ != seen; });
      if (stopping_) return;
      seen = job_serial_;
      job = job_;
    }
    std::exception_ptr error;
    try {
      job(member);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      errors_[static_cast<std::size_t>(member)] = error;
      if (--running_ == 0) work_done_.notify_all();
    }
  }
}

}  // namespace asynctp::cpu
