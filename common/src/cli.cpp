#include "common/cli.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "closest_name.h"
#include "common/version.h"

namespace sandwich {
namespace {

std::vector<std::string> split_names(const std::string& names) {
  std::vector<std::string> out;
  std::stringstream ss(names);
  for (std::string n; std::getline(ss, n, ',');) out.push_back(n);
  return out;
}

// llama.cpp's single-dash long names ("-np", "-ngl"): CLI11 takes one letter after a single
// dash, so it is handed them as "--np" and the command line is rewritten to match.
bool single_dash_long(const std::string& name) {
  return name.size() > 2 && name[0] == '-' && name[1] != '-';
}

std::string cli11_name(const std::string& name) {
  return single_dash_long(name) ? "-" + name : name;
}

std::string cli11_names(const std::string& names) {
  std::string out;
  for (const auto& n : split_names(names)) out += (out.empty() ? "" : ",") + cli11_name(n);
  return out;
}

// A word CLI11 reads as an option rather than a value: "-x", "--name"; not "-", "--", "-5".
bool looks_like_option(const std::string& a) {
  if (a.size() < 2 || a[0] != '-' || a == "--") return false;
  return a[1] == '-' || !(std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.');
}

}  // namespace

struct ArgParser::Impl {
  struct Opt {
    std::vector<std::string> names;
    std::string metavar, help;
    bool is_flag = false;
  };
  std::string program, summary;
  CLI::App app;
  std::vector<Opt> opts;  // in the order the help lists them
  std::vector<std::string> positional;
  size_t max_positionals = 0;

  Impl(std::string p, std::string s) : program(std::move(p)), summary(std::move(s)) {
    app.set_help_flag("-h,--help", "show this help");
  }

  // By a name as given, or as CLI11 knows it.
  const Opt* find(const std::string& name) const {
    for (const auto& o : opts)
      for (const auto& n : o.names)
        if (n == name || cli11_name(n) == name) return &o;
    return nullptr;
  }

  std::vector<std::string> all_names() const {
    std::vector<std::string> out{"--help", "--version"};
    for (const auto& o : opts) out.insert(out.end(), o.names.begin(), o.names.end());
    return out;
  }

  // The words CLI11 could not place, as the one-line error this project's tools print.
  [[noreturn]] void refuse_extras(const std::vector<std::string>& args) const {
    std::vector<std::string> extra = app.remaining();
    extra.erase(std::remove(extra.begin(), extra.end(), "--"), extra.end());
    const std::string first = extra.empty() ? std::string("?") : extra.front();
    // After "--" every word is a positional, even one that looks like an option.
    const auto dashes = std::find(args.begin(), args.end(), "--");
    const bool after_dashes =
        dashes != args.end() && std::find(dashes, args.end(), first) != args.end();
    if (!after_dashes && looks_like_option(first)) {
      const std::string name = first.substr(0, first.find('='));
      if (auto near = closest_name(name, all_names()))
        throw CliError("unknown option " + name + " (did you mean " + *near + "?)");
      throw CliError("unknown option " + name + " (see --help)");
    }
    throw CliError("unexpected argument '" + first + "' (see --help)");
  }
};

ArgParser::ArgParser(std::string program, std::string summary)
    : impl_(std::make_unique<Impl>(std::move(program), std::move(summary))) {}
ArgParser::~ArgParser() = default;

void ArgParser::option(const std::string& names, const std::string& metavar,
                       const std::string& help, std::function<void(const std::string&)> set) {
  impl_->app.add_option_function<std::string>(cli11_names(names), std::move(set), help)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  impl_->opts.push_back({split_names(names), metavar, help, false});
}

void ArgParser::repeatable(const std::string& names, const std::string& metavar,
                           const std::string& help, std::function<void(const std::string&)> set) {
  impl_->app
      .add_option_function<std::vector<std::string>>(
          cli11_names(names),
          [set = std::move(set)](const std::vector<std::string>& values) {
            for (const auto& v : values) set(v);
          },
          help)
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  impl_->opts.push_back({split_names(names), metavar, help + " (repeatable)", false});
}

void ArgParser::flag(const std::string& names, const std::string& help, std::function<void()> set) {
  impl_->app.add_flag_callback(cli11_names(names), std::move(set), help);
  impl_->opts.push_back({split_names(names), "", help, true});
}

int64_t ArgParser::parse_int(const std::string& name, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  long long r = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE)
    throw CliError(name + " expects an integer, got '" + v + "'");
  return r;
}

double ArgParser::parse_double(const std::string& name, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  double r = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(r))
    throw CliError(name + " expects a number, got '" + v + "'");
  return r;
}

void ArgParser::add(const std::string& names, std::string* dst, const std::string& help,
                    const std::string& mv) {
  option(names, mv, help, [dst](const std::string& v) { *dst = v; });
}
void ArgParser::add(const std::string& names, std::optional<std::string>* dst,
                    const std::string& help, const std::string& mv) {
  option(names, mv, help, [dst](const std::string& v) { *dst = v; });
}
void ArgParser::add(const std::string& names, int* dst, const std::string& help,
                    const std::string& mv) {
  const std::string n = split_names(names).back();
  option(names, mv, help, [dst, n](const std::string& v) {
    int64_t r = parse_int(n, v);
    if (r < INT32_MIN || r > INT32_MAX) throw CliError(n + " is out of range: " + v);
    *dst = static_cast<int>(r);
  });
}
void ArgParser::add(const std::string& names, int64_t* dst, const std::string& help,
                    const std::string& mv) {
  const std::string n = split_names(names).back();
  option(names, mv, help, [dst, n](const std::string& v) { *dst = parse_int(n, v); });
}
void ArgParser::add(const std::string& names, double* dst, const std::string& help,
                    const std::string& mv) {
  const std::string n = split_names(names).back();
  option(names, mv, help, [dst, n](const std::string& v) { *dst = parse_double(n, v); });
}
void ArgParser::add(const std::string& names, float* dst, const std::string& help,
                    const std::string& mv) {
  const std::string n = split_names(names).back();
  option(names, mv, help,
         [dst, n](const std::string& v) { *dst = static_cast<float>(parse_double(n, v)); });
}
void ArgParser::add(const std::string& names, std::optional<uint64_t>* dst, const std::string& help,
                    const std::string& mv) {
  const std::string n = split_names(names).back();
  option(names, mv, help, [dst, n](const std::string& v) {
    int64_t r = parse_int(n, v);
    if (r < 0) throw CliError(n + " must not be negative");
    *dst = static_cast<uint64_t>(r);
  });
}
void ArgParser::add(const std::string& names, std::vector<std::string>* dst,
                    const std::string& help, const std::string& mv) {
  repeatable(names, mv, help, [dst](const std::string& v) { dst->push_back(v); });
}
void ArgParser::add_flag(const std::string& names, bool* dst, const std::string& help) {
  flag(names, help, [dst] { *dst = true; });
}

void ArgParser::accept_positionals(size_t max) {
  // Unbounded for CLI11, so that one too many is reported as the stray word it is.
  if (impl_->max_positionals == 0 && max > 0)
    impl_->app.add_option("positional", impl_->positional)->expected(0, -1);
  impl_->max_positionals = max;
}

const std::vector<std::string>& ArgParser::positional() const {
  return impl_->positional;
}

bool ArgParser::parse(int argc, char** argv, int start) {
  Impl& I = *impl_;
  std::vector<std::string> args;
  for (int i = start; i < argc; ++i) args.emplace_back(argv[i]);
  const std::vector<std::string> given = args;  // for messages: before "-np" became "--np"
  // CLI11 would read "--flag=0" as "flag off"; here a flag never takes a value, as before.
  for (size_t i = 0; i < args.size() && args[i] != "--"; ++i) {
    std::string& a = args[i];
    const size_t eq = a.find('=');
    if (single_dash_long(a.substr(0, eq)) && I.find(a.substr(0, eq))) a = "-" + a;
    const Impl::Opt* o = I.find(a.rfind("--", 0) == 0 ? a.substr(0, eq) : a);
    if (!o && a == "--version") {
      std::cout << version_line(I.program.substr(0, I.program.find(' '))) << "\n";
      return false;
    }
    if (!o) continue;
    if (o->is_flag && eq != std::string::npos) throw CliError(a.substr(0, eq) + " takes no value");
    if (!o->is_flag && eq == std::string::npos) ++i;  // its value, whatever it looks like
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    I.app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << usage();
    return false;
  } catch (const CLI::ExtrasError&) {
    I.refuse_extras(args);
  } catch (const CLI::ArgumentMismatch&) {
    // Only the last option can lack its value: CLI11 takes the next word whatever it is.
    for (auto it = given.rbegin(); it != given.rend(); ++it)
      if (I.find(*it)) throw CliError(*it + " needs a value");
    throw CliError("an option needs a value (see --help)");
  } catch (const CLI::ParseError& e) {
    throw CliError(e.what());
  }
  if (I.positional.size() > I.max_positionals)
    throw CliError("unexpected argument '" + I.positional[I.max_positionals] + "' (see --help)");
  return true;
}

std::string ArgParser::usage() const {
  std::ostringstream os;
  os << "usage: " << impl_->program << " [options]\n" << impl_->summary << "\n\noptions:\n";
  for (const auto& o : impl_->opts) {
    std::string left = "  ";
    for (size_t i = 0; i < o.names.size(); ++i) left += (i ? ", " : "") + o.names[i];
    if (!o.is_flag) left += " " + o.metavar;
    os << left;
    if (left.size() < 30)
      os << std::string(30 - left.size(), ' ');
    else
      os << "\n" << std::string(30, ' ');
    os << o.help << "\n";
  }
  os << "  -h, --help                  show this help\n";
  os << "  --version                   print the version and exit\n";
  return os.str();
}

}  // namespace sandwich
