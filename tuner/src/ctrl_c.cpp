#include "tuner/ctrl_c.h"

#include <atomic>
#include <csignal>

namespace sandwich::tuner {
namespace {

std::atomic<bool> g_pressed{false};
extern "C" void on_ctrl_c(int) {
  g_pressed.store(true);
}

}  // namespace

std::function<bool()> stop_on_ctrl_c() {
  std::signal(SIGINT, on_ctrl_c);
  return [] { return g_pressed.load(); };
}

}  // namespace sandwich::tuner
