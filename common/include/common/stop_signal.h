#pragma once
// SIGTERM and SIGINT from a program's first line: until it has something to drain (a server
// serving), a signal stops it at once, whatever it is doing (loading a model, searching a plan,
// waiting on a FIFO), with one line and the exit status a shell reports for a signal.
namespace sandwich {

// Installs SIGTERM and SIGINT handlers that call stop_by_signal. `program` and `doing` must
// outlive the program (string literals): "sandwichd", "loading the model".
void stop_on_signal(const char* program, const char* doing);
// What the line says the program was doing, from now on.
void set_stop_phase(const char* doing);
// Prints "<program>: stopped by SIGTERM while <doing>" and exits with 128 + sig, without running
// destructors: async-signal-safe, so it may be called from a handler as well as from a thread
// that was handed the signal. Rank processes go with the program (they die with their parent)
// and its shared memory is anonymous, so nothing is left behind.
[[noreturn]] void stop_by_signal(int sig);

}  // namespace sandwich
