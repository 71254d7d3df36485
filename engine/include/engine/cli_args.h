#pragma once
// Command-line parsing for the project's tools: --name VALUE, --name=VALUE, short aliases,
// flags, repeated options; errors are exceptions whose message the tool prints on one line.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace sandwich {

struct CliError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ArgParser {
 public:
  ArgParser(std::string program, std::string summary);

  // names: "--model" or "-n,--n-predict"; the setter gets the raw value and may throw CliError.
  void option(const std::string& names, const std::string& metavar, const std::string& help,
              std::function<void(const std::string&)> set);
  void flag(const std::string& names, const std::string& help, std::function<void()> set);

  // Typed conveniences.
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
  void accept_positionals(size_t max) { max_positionals_ = max; }

  // Parses argv[start..]; returns false if --help was given (usage already printed to stdout).
  // Unknown options, missing values, bad numbers and unexpected positionals throw CliError.
  bool parse(int argc, char** argv, int start = 1);
  std::string usage() const;
  // Positional arguments (at most the accepted number).
  const std::vector<std::string>& positional() const { return positional_; }

  static int64_t parse_int(const std::string& name, const std::string& v);
  static double parse_double(const std::string& name, const std::string& v);

 private:
  struct Opt {
    std::vector<std::string> names;
    std::string metavar, help;
    bool is_flag;
    std::function<void(const std::string&)> set;
  };
  const Opt* find(const std::string& name) const;
  void add_positional(const std::string& a);
  std::string program_, summary_;
  std::vector<Opt> opts_;
  std::vector<std::string> positional_;
  size_t max_positionals_ = 0;
};

// Runs a tool's main body: prints "<program>: error: <message>" on one line and returns 1 for
// any exception, so no user input ends in an abort.
int run_tool(const char* program, const std::function<int()>& body);

}  // namespace sandwich
