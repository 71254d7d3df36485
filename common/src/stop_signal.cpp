#include "common/stop_signal.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace sandwich {
namespace {

std::atomic<const char*> g_program{"program"};
std::atomic<const char*> g_doing{"starting"};

void put(const char* s) {
  size_t n = std::strlen(s);  // async-signal-safe since POSIX.1-2016
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

void on_signal(int sig) {
  stop_by_signal(sig);
}

}  // namespace

void stop_on_signal(const char* program, const char* doing) {
  g_program = program;
  g_doing = doing;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
}

void set_stop_phase(const char* doing) {
  g_doing = doing;
}

void stop_by_signal(int sig) {
  put(g_program.load());
  put(": stopped by ");
  put(sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "a signal");
  put(" while ");
  put(g_doing.load());
  put("\n");
  ::_exit(128 + sig);
}

}  // namespace sandwich
