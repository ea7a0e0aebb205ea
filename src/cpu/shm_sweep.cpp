#include "cpu/shm_sweep.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <optional>

#include "core/log.hpp"
#include "cpu/process_id.hpp"
#include "cpu/shm_segment.hpp"

namespace asynctp::cpu {
namespace {

constexpr std::size_t kMaxExamined = 1024;
constexpr int kMaxWorld = 1024;  // as make_process_comm allows

struct Examined {
  std::string name;  // in ShmSegment::kDirectory
  dev_t dev;
  ino_t ino;
};

struct Group {
  std::vector<Examined> files;
  std::vector<shm::Member> members;
  bool refused = false;  // a name that cannot be judged: the group stays
  bool held = false;     // a process has one of its files open (or mapped)
  bool hold_unknown = false;  // the kernel could not say for one of them
};

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool read_exactly(int fd, void* out, std::size_t bytes, std::size_t offset) {
  return ::pread(fd, out, bytes, static_cast<off_t>(offset)) == static_cast<ssize_t>(bytes);
}

// The members a control segment records (the ranks that published a pid).
void read_control_record(int fd, std::size_t size, Group& group) {
  if (size < shm::ranks_offset()) return;
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return;
  const auto* header = static_cast<const shm::Header*>(base);
  const auto world = static_cast<int>(header->world_size);
  if (header->magic.load(std::memory_order_acquire) == shm::kControlMagic && world >= 1 &&
      world <= kMaxWorld && size >= shm::control_bytes(world)) {
    const shm::Control control(base, world);
    for (int r = 0; r < world; ++r) {
      const shm::RankArea& area = control.ranks[r];
      const std::int32_t pid = area.pid.load(std::memory_order_acquire);
      if (pid != 0) {
        group.members.push_back({pid, 0, area.pid_namespace_dev, area.pid_namespace_ino});
      }
    }
  }
  ::munmap(base, size);
}

// The members a data segment's header records.
void read_data_record(int fd, std::size_t size, Group& group) {
  shm::DataHeader header;
  if (size < shm::data_members_offset() || !read_exactly(fd, &header, sizeof header, 0)) return;
  if (header.magic != shm::kDataMagic || header.members > header.world_size ||
      header.world_size > static_cast<std::uint32_t>(kMaxWorld) ||
      size < shm::data_header_bytes(static_cast<int>(header.world_size))) {
    return;
  }
  std::vector<shm::Member> members(header.members);
  if (!read_exactly(fd, members.data(), sizeof(shm::Member) * members.size(),
                    shm::data_members_offset())) {
    return;
  }
  for (const shm::Member& m : members) {
    if (m.pid != 0) group.members.push_back(m);
  }
}

// Whether any process has the file open for writing, which every mapping
// of a group's segment does (its open file lives as long as the mapping):
// the kernel grants a write lease only on a file that no one else has open
// so. The lease goes at once; a process opening the file meanwhile waits
// only that long (no F_SETOWN: no signal is sent).
void check_holders(int fd, Group& group) {
  if (::fcntl(fd, F_SETLEASE, F_WRLCK) == 0) {
    ::fcntl(fd, F_SETLEASE, F_UNLCK);
  } else if (errno == EAGAIN || errno == EBUSY) {
    group.held = true;
  } else {
    group.hold_unknown = true;
  }
}

// The groups whose names are in the directory, their records read.
std::map<std::string, Group> examine(int dir_fd, DIR* dir) {
  std::map<std::string, Group> groups;
  std::size_t examined = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    const std::string token = segment_token(name);
    if (token.empty()) continue;
    if (++examined > kMaxExamined) break;
    Group& group = groups[token];
    const Fd fd{::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)};
    struct stat st {};
    if (fd.fd < 0 || ::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != ::geteuid()) {
      group.refused = true;
      continue;
    }
    group.files.push_back({name, st.st_dev, st.st_ino});
    check_holders(fd.fd, group);
    const auto size = static_cast<std::size_t>(st.st_size);
    const bool control = name.size() > 4 && name.compare(name.size() - 4, 4, ".ctl") == 0;
    if (control) {
      read_control_record(fd.fd, size, group);
    } else {
      read_data_record(fd.fd, size, group);
    }
  }
  return groups;
}

bool pid_exists(std::int32_t pid) {
  if (pid <= 0) return true;  // not a pid: nothing is proven
  return ::kill(pid, 0) == 0 || errno != ESRCH;
}

// Why the group's names may go ("" where they must stay), by the rule of
// the header.
std::string why_stale(const Group& group, const shm::Member& me) {
  if (group.refused || group.held || group.members.empty()) return "";
  bool unrecorded_namespace = false;
  std::string pids;
  for (const shm::Member& m : group.members) {
    if (pid_exists(m.pid)) return "";
    pids += (pids.empty() ? "" : ", ") + std::to_string(m.pid);
    if (m.pid_namespace_ino == 0) {
      unrecorded_namespace = true;
    } else if (me.pid_namespace_ino == 0 || m.pid_namespace_ino != me.pid_namespace_ino ||
               m.pid_namespace_dev != me.pid_namespace_dev) {
      return "";
    }
  }
  if (!unrecorded_namespace) return "no process of its members' pids (" + pids + ") exists";
  if (group.hold_unknown) return "";
  return "no process holds it and its members' pids (" + pids +
         ") do not run here (their pid namespace is not recorded)";
}

}  // namespace

shm::Member this_process_member() {
  shm::Member me;
  me.pid = static_cast<std::int32_t>(::getpid());
  struct stat ns {};
  if (::stat("/proc/self/ns/pid", &ns) == 0) {
    me.pid_namespace_dev = static_cast<std::uint64_t>(ns.st_dev);
    me.pid_namespace_ino = static_cast<std::uint64_t>(ns.st_ino);
  }
  return me;
}

std::vector<std::string> sweep_stale_segments(int rank) noexcept {
  std::vector<std::string> removed;
  try {
    const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(ShmSegment::kDirectory), ::closedir);
    if (dir == nullptr) return removed;
    const int dir_fd = ::dirfd(dir.get());
    const shm::Member me = this_process_member();
    for (const auto& [token, group] : examine(dir_fd, dir.get())) {
      const std::string why = why_stale(group, me);
      if (why.empty()) continue;
      for (const Examined& file : group.files) {
        struct stat now {};
        if (::fstatat(dir_fd, file.name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0 ||
            now.st_dev != file.dev || now.st_ino != file.ino ||
            ::unlinkat(dir_fd, file.name.c_str(), 0) != 0) {
          continue;
        }
        removed.push_back(file.name);
        core::log(core::LogLevel::info, rank,
                  std::string("removed ") + ShmSegment::kDirectory + "/" + file.name +
                      ", left by a group whose every process is gone: " + why);
      }
    }
  } catch (...) {
    // Out of memory while judging: what was not removed stays.
  }
  return removed;
}

}  // namespace asynctp::cpu
