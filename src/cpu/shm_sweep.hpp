// Removing what groups of the CPU process transport whose processes all
// died left in /dev/shm.
//
// A group's names are unlinked as soon as every rank has mapped them, and a
// surviving rank unlinks them when the group fails; a name stays only when
// every process that could unlink it is gone (all killed during the setup,
// or during a growth of the workspace). Rank 0 of every new group sweeps
// such names first (ProcessGroup), under this rule:
//
// A group's names (one token: its control segment and its data segments)
// are removed only when
// - each is a regular file owned by this process's user and named as
//   SegmentNames names them (nothing else in /dev/shm is looked at);
// - no process has any of them open for writing, as every process mapping
//   one does (the kernel refuses a write lease, F_SETLEASE, on such a file;
//   where it cannot tell, only (a) below can remove them);
// - at least one of them carries a record of its group's members (the
//   control segment's rank areas, a data segment's header), and every
//   member recorded (pid != 0) is provably gone:
//   (a) recorded in this process's pid namespace, and no process of that
//       pid exists (kill(pid, 0) fails with ESRCH: a zombie, or the pid
//       reused by another process, keeps the names - at worst a removal
//       comes later, never a wrong one); a member recorded in another pid
//       namespace keeps them (its pid says nothing here);
//   (b) or, for a member whose namespace is not recorded (a control segment
//       of the layout before the namespace was recorded), its pid does not
//       run here either and the kernel vouched that no process holds the
//       files (the lease above; a process in any namespace holding them
//       makes it fail).
// Why that is safe: rank 0 makes every segment of its group, maps it until
// its name goes, and names itself in it; a name appears only with its
// record complete (ShmSegment::create), and a joining rank maps the
// segments before it publishes its pid. So rank 0 is always a recorded
// member, and once it is gone the group can neither form nor grow again;
// every recorded member gone, and no process holding the files, means
// nothing uses the memory. (A rank of that group still on its way in would
// fail at once, "gone", instead of at its setup timeout.) Right before
// each removal the name is checked to be still the file that was judged
// (device and inode).
#pragma once

#include <string>
#include <vector>

#include "cpu/shm_control.hpp"

namespace asynctp::cpu {

// This process as a segment's record names it (pid and pid namespace; the
// namespace 0 when /proc cannot tell it).
shm::Member this_process_member();

// Removes the names of groups that the rule above proves dead, logging each
// at the info level (ASYNCTP_DEBUG=INFO) as rank `rank`; returns the file
// names removed. Looks at most at the first 1024 names of the pattern.
// Never throws: a name it cannot judge stays.
std::vector<std::string> sweep_stale_segments(int rank) noexcept;

}  // namespace asynctp::cpu
