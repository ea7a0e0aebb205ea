#include "asynctp/trace.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "asynctp/error.hpp"
#include "core/json_escape.hpp"

namespace asynctp {

Trace::Trace() : origin_(Clock::now()) {}

double Trace::now_us() const {
  return std::chrono::duration<double, std::micro>(Clock::now() - origin_).count();
}

void Trace::add_span(int rank, const std::string& lane, const std::string& category,
                     const std::string& name, double begin_us, double end_us,
                     const std::string& args_json) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(
      {name, category, rank, lane, begin_us, std::max(0.0, end_us - begin_us), args_json});
}

void Trace::add_instant(int rank, const std::string& lane, const std::string& category,
                        const std::string& name, double at_us, const std::string& args_json) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back({name, category, rank, lane, at_us, -1, args_json});
}

std::vector<Trace::Event> Trace::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

void Trace::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
}

std::string Trace::to_chrome_json() const {
  const std::vector<Event> events = this->events();
  // Chrome traces need numeric thread ids; number the lanes of each rank in
  // order of first appearance and name them with metadata events.
  std::map<std::pair<int, std::string>, int> lane_ids;
  std::map<int, int> next_id;
  std::set<int> ranks;
  for (const Event& e : events) {
    ranks.insert(e.rank);
    const auto key = std::make_pair(e.rank, e.lane);
    if (lane_ids.find(key) == lane_ids.end()) lane_ids.emplace(key, next_id[e.rank]++);
  }

  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(3);
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  auto separator = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  for (int rank : ranks) {
    separator();
    out << "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " << rank
        << ", \"args\": {\"name\": \"rank " << rank << "\"}}";
  }
  for (const auto& [key, id] : lane_ids) {
    separator();
    out << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " << key.first
        << ", \"tid\": " << id << ", \"args\": {\"name\": \"" << core::json_escape(key.second)
        << "\"}}";
  }
  for (const Event& e : events) {
    separator();
    const int tid = lane_ids[{e.rank, e.lane}];
    out << "{\"name\": \"" << core::json_escape(e.name) << "\", \"cat\": \""
        << core::json_escape(e.category) << "\", \"pid\": " << e.rank << ", \"tid\": " << tid
        << ", \"ts\": " << e.begin_us;
    if (e.duration_us >= 0) {
      out << ", \"ph\": \"X\", \"dur\": " << e.duration_us;
    } else {
      out << ", \"ph\": \"i\", \"s\": \"t\"";
    }
    out << ", \"args\": {" << e.args_json << "}}";
  }
  out << "\n]}\n";
  return out.str();
}

void Trace::write_chrome_json(const std::string& path) const {
  std::ofstream file(path);
  if (!file) {
    throw Error(ErrorCode::invalid_argument, "trace path '" + path + "': cannot open for writing");
  }
  file << to_chrome_json();
  if (!file) throw Error(ErrorCode::backend, "trace path '" + path + "': write failed");
}

}  // namespace asynctp
