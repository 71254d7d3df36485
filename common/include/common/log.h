#pragma once
// The tools' log: one line per message on stderr, "<UTC time> <LEVEL> <component>: <message>",
// written whole even when several threads log at once. Messages below the level set are dropped.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace sandwich {

enum class LogLevel { Debug, Info, Warning, Error };

// "debug", "info", "warning" (or "warn"), "error"; nullopt for anything else.
std::optional<LogLevel> log_level_named(std::string_view name);
void set_log_level(LogLevel level);  // Info until set
LogLevel log_level();
bool log_enabled(LogLevel level);

void log_line(LogLevel level, std::string_view component, std::string_view message);
// printf-style; the message is formatted only when the level is enabled.
void logf(LogLevel level, const char* component, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

// The line as written (newlines in the message become spaces), without the final newline.
std::string format_log_line(LogLevel level, std::string_view component, std::string_view message,
                            std::chrono::system_clock::time_point when);

// Lines go to `sink` instead of stderr (tests); an empty function restores stderr.
void set_log_sink(std::function<void(const std::string& line)> sink);

}  // namespace sandwich
