#pragma once
// A lease's holder as a process. The owner ids a runtime makes up name
// their process: host/pid/start/unique, where start is the process's start
// time (field 22 of /proc/<pid>/stat, in clock ticks since boot) and host
// the host name, with ~ and the pid namespace's inode after it in a
// container that has its own. A crash
// leaves the holder's leases live until they expire; a process on the same
// host that finds one can tell that its holder has died, and take the
// thread at once instead of waiting the lease out. The start time tells a
// pid the kernel has since given to another process from the holder.
//
// Taking over is safe whatever this judges: the next epoch fences the old
// holder's commits (thread_lease.hpp). Owner ids of any other shape (chosen
// by an embedder) are never judged gone; neither is a holder on another
// host, nor one whose liveness cannot be told.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace troupe {

// The owner id of process `pid` of this host: host/pid/start/`unique`
// (host/pid/`unique` when its start time cannot be read).
std::string process_owner_id(pid_t pid, const std::string& unique);

// True when `owner` names a process of this host that is no longer
// running: its pid is free, a zombie, or held by a process started at
// another time than the one recorded.
bool holder_is_gone(const std::string& owner);

// The start time of process `pid` (field 22 of /proc/<pid>/stat); none if
// it cannot be read (no such process, no /proc).
std::optional<std::uint64_t> process_start_time(pid_t pid);

}  // namespace troupe
