#include "engine/cli_args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace sandwich {
namespace {

std::vector<std::string> split_names(const std::string& names) {
  std::vector<std::string> out;
  std::stringstream ss(names);
  for (std::string n; std::getline(ss, n, ',');) out.push_back(n);
  return out;
}

}  // namespace

ArgParser::ArgParser(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void ArgParser::option(const std::string& names, const std::string& metavar,
                       const std::string& help, std::function<void(const std::string&)> set) {
  opts_.push_back({split_names(names), metavar, help, false, std::move(set)});
}

void ArgParser::flag(const std::string& names, const std::string& help, std::function<void()> set) {
  opts_.push_back(
      {split_names(names), "", help, true, [s = std::move(set)](const std::string&) { s(); }});
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
  option(names, mv, help + " (repeatable)", [dst](const std::string& v) { dst->push_back(v); });
}
void ArgParser::add_flag(const std::string& names, bool* dst, const std::string& help) {
  flag(names, help, [dst] { *dst = true; });
}

void ArgParser::add_positional(const std::string& a) {
  if (positional_.size() >= max_positionals_)
    throw CliError("unexpected argument '" + a + "' (see --help)");
  positional_.push_back(a);
}

const ArgParser::Opt* ArgParser::find(const std::string& name) const {
  for (const auto& o : opts_)
    for (const auto& n : o.names)
      if (n == name) return &o;
  return nullptr;
}

bool ArgParser::parse(int argc, char** argv, int start) {
  for (int i = start; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::cout << usage();
      return false;
    }
    if (a.size() < 2 || a[0] != '-' || a == "--") {
      if (a == "--") {
        for (++i; i < argc; ++i) add_positional(argv[i]);
        break;
      }
      add_positional(a);
      continue;
    }
    std::optional<std::string> inline_value;
    if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      inline_value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    const Opt* o = find(a);
    if (!o) throw CliError("unknown option " + a + " (see --help)");
    if (o->is_flag) {
      if (inline_value) throw CliError(a + " takes no value");
      o->set("");
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc) throw CliError(a + " needs a value");
      inline_value = argv[++i];
    }
    o->set(*inline_value);
  }
  return true;
}

std::string ArgParser::usage() const {
  std::ostringstream os;
  os << "usage: " << program_ << " [options]\n" << summary_ << "\n\noptions:\n";
  for (const auto& o : opts_) {
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
  return os.str();
}

int run_tool(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (auto& ch : msg)
      if (ch == '\n') ch = ' ';
    std::cerr << program << ": error: " << msg << "\n";
    return 1;
  } catch (...) {
    std::cerr << program << ": error: unknown failure\n";
    return 1;
  }
}

}  // namespace sandwich
