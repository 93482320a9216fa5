// What every sandbox's root holds, whichever way it is built: with the mount API (mount.cc) or
// by path where there is none (mount_by_path.cc). One list each, so the two roots cannot drift.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ward::enforce {

// The host's device nodes bound into the minimal /dev.
inline constexpr const char* kDevNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

// Kernel knobs of the fresh /proc made read-only, and host-wide information covered with an
// empty file or directory.
inline constexpr const char* kProcReadOnly[] = {"sys", "sysrq-trigger", "irq",   "bus",
                                                "fs",  "sysvipc",       "driver"};
inline constexpr const char* kProcHidden[] = {
    "kcore",       "keys",         "key-users", "timer_list", "sched_debug", "latency_stats",
    "timer_stats", "kallsyms",     "kmsg",      "kpagecount", "kpageflags",  "kpagecgroup",
    "acpi",        "scsi",         "asound",    "config.gz",  "modules",     "vmallocinfo",
    "slabinfo",    "pagetypeinfo", "buddyinfo", "iomem",      "ioports",     "dma"};

// A directory's entries other than "." and "..", with their d_type (DT_UNKNOWN where the file
// system gives none).
using Listing = std::vector<std::pair<std::string, unsigned char>>;

// From getdents64 into a buffer on the stack: no allocation per entry, no 32 KB DIR buffer.
bool ListDir(int dirfd, Listing* out);

// The names a deny rule's last component names in the directory `dirfd`: itself, or, for a
// glob (* ? [), the entries it matches (a leading dot only explicitly). Empty when the
// directory cannot be listed.
std::vector<std::string> MaskNames(int dirfd, const std::string& pattern);

}  // namespace ward::enforce
