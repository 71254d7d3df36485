// The module layering, as the README's map states it: a module includes only the modules below
// it. A new #include that crosses a forbidden edge fails here, naming the file and the line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "test_data.h"

namespace sandwich {
namespace {

namespace fs = std::filesystem;

// Module -> the modules it may include (itself always).
const std::map<std::string, std::set<std::string>>& allowed() {
  static const std::map<std::string, std::set<std::string>> rules = {
      {"common", {}},
      {"kernels", {"common"}},
      {"topotree", {"common"}},
      {"engine", {"common", "kernels", "topotree"}},
      {"tuner", {"common", "kernels", "topotree", "engine"}},
      // tuner: sandwichd's start-up search of configurations when no plan is given.
      {"server", {"common", "topotree", "engine", "tuner"}},
      {"bench", {"common"}},
  };
  return rules;
}

struct Violation {
  std::string where, include;
};

std::vector<Violation> violations_in(const fs::path& root, const std::string& module) {
  static const std::regex include(R"(^\s*#\s*include\s*"([a-z_]+)/[^"]+")");
  std::vector<Violation> out;
  const auto& ok = allowed().at(module);
  for (const auto& e : fs::recursive_directory_iterator(root / module)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h" && ext != ".hpp")) continue;
    std::ifstream in(e.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      const std::string target = m[1];
      if (target == module || !allowed().count(target) || ok.count(target)) continue;
      out.push_back({fs::relative(e.path(), root).string() + ":" + std::to_string(n), line});
    }
  }
  return out;
}

TEST(Layout, EveryModuleIncludesOnlyTheModulesBelowIt) {
  const fs::path root = test::source_dir();
  for (const auto& [module, ok] : allowed()) {
    ASSERT_TRUE(fs::is_directory(root / module)) << module;
    for (const auto& v : violations_in(root, module))
      ADD_FAILURE() << v.where << ": " << module << "/ may not include " << v.include
                    << " (see the module map in README.md)";
  }
}

// The rules are a layering: no module may reach one that reaches it back.
TEST(Layout, TheRulesHaveNoCycle) {
  std::function<bool(const std::string&, const std::string&)> reaches = [&](const std::string& from,
                                                                            const std::string& to) {
    for (const auto& m : allowed().at(from))
      if (m == to || reaches(m, to)) return true;
    return false;
  };
  for (const auto& [module, ok] : allowed()) EXPECT_FALSE(reaches(module, module)) << module;
}

}  // namespace
}  // namespace sandwich
