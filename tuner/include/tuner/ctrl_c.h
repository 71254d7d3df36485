#pragma once
// Ctrl-C as a request to stop: a long tuning run polls it between measurements and saves what
// it has, so that --resume can continue.
#include <functional>

namespace sandwich::tuner {

// Installs the SIGINT handler; the function returned is true once Ctrl-C was pressed.
std::function<bool()> stop_on_ctrl_c();

}  // namespace sandwich::tuner
