// Test helper: runs a function in a child process whose address space is capped, to check that
// an allocation failure becomes an onyx::Error (or that nothing is allocated before a check).
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>

namespace onyx::test {

/// Runs `f` in a child process whose address space is capped at what it has mapped plus
/// `extra_mib`. Returns the child's exit status: 0 when `f` returned true, 1 when false, 2 when
/// an exception escaped it, 3 when the cap could not be set; -1 when fork failed, -2 when the
/// child died of a signal.
[[maybe_unused]] inline int in_capped_child(int extra_mib, const std::function<bool()>& f) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    long pages = 0;
    if (std::FILE* fp = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(fp, "%ld", &pages) != 1) pages = 0;
      std::fclose(fp);
    }
    const rlim_t cap = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) +
                       (static_cast<rlim_t>(extra_mib) << 20);
    const rlimit lim{cap, cap};
    if (pages == 0 || setrlimit(RLIMIT_AS, &lim) != 0) _exit(3);
    try {
      _exit(f() ? 0 : 1);
    } catch (...) {
      _exit(2);
    }
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -2;
  return WEXITSTATUS(status);
}

}  // namespace onyx::test
