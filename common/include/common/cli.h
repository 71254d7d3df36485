#pragma once
// Command-line options of the project's tools: --name VALUE, --name=VALUE, short aliases, flags,
// repeated options, a bounded number of positionals. CLI11 does the parsing; this keeps the
// tools' own flags, help layout and one-line error messages, and suggests the closest option
// for a mistyped one.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace sandwich {

// A mistake on the command line; the tool prints its message on one line.
struct CliError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ArgParser {
 public:
  ArgParser(std::string program, std::string summary);
  ~ArgParser();
  ArgParser(const ArgParser&) = delete;
  ArgParser& operator=(const ArgParser&) = delete;

  // names: "--model" or "-n,--n-predict"; the setter gets the raw value (the last one given)
  // and may throw CliError.
  void option(const std::string& names, const std::string& metavar, const std::string& help,
              std::function<void(const std::string&)> set);
  // Like option(), but every occurrence is passed to the setter, in order.
  void repeatable(const std::string& names, const std::string& metavar, const std::string& help,
                  std::function<void(const std::string&)> set);
  void flag(const std::string& names, const std::string& help, std::function<void()> set);

  // Typed conveniences; numbers are checked and range-checked with messages naming the option.
  void add(const std::string& names, std::string* dst, const std::string& help,
           const std::string& metavar = "S");
  void add(const std::string& names, std::optional<std::string>* dst, const std::string& help,
           const std::string& metavar = "S");
  void add(const std::string& names, int* dst, const std::string& help,
           const std::string& metavar = "N");
  void add(const std::string& names, int64_t* dst, const std::string& help,
           const std::string& metavar = "N");
  void add(const std::string& names, double* dst, const std::string& help,
           const std::string& metavar = "X");
  void add(const std::string& names, float* dst, const std::string& help,
           const std::string& metavar = "X");
  void add(const std::string& names, std::optional<uint64_t>* dst, const std::string& help,
           const std::string& metavar = "N");
  void add(const std::string& names, std::vector<std::string>* dst, const std::string& help,
           const std::string& metavar = "S");
  void add_flag(const std::string& names, bool* dst, const std::string& help);

  // Lets the tool take up to max positional arguments. Without this call any positional is an
  // error: a stray word (a typo, a value whose option was forgotten) must not be ignored.
  void accept_positionals(size_t max);

  // Parses argv[start..]; returns false if --help or --version was given (the usage or the
  // version line already printed to stdout).
  // Unknown options, missing values, bad numbers and unexpected positionals throw CliError.
  bool parse(int argc, char** argv, int start = 1);
  std::string usage() const;
  const std::vector<std::string>& positional() const;

  static int64_t parse_int(const std::string& name, const std::string& v);
  static double parse_double(const std::string& name, const std::string& v);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandwich
