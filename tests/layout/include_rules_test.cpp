// The module layering, as the README's map states it: a module includes only the modules below
// it. A new #include that crosses a forbidden edge fails here, naming the file and the line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

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
      {"server", {"common", "topotree", "engine"}},
      {"bench", {"common"}},
      // The programs: each one's command line over the libraries it runs.
      {"apps", {"common", "kernels", "topotree", "engine", "tuner", "server", "bench"}},
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

// Each module's code lives in sandwich::<module> (or a namespace inside it); common, the base
// every module stands on, in sandwich itself. Forward declarations of another module's types
// (`namespace sandwich::engine { class Model; }`) are the one exception: a block that declares
// and defines nothing else.
TEST(Layout, NamespacesMatchTheModules) {
  const fs::path root = test::source_dir();
  static const std::regex opening(R"(^namespace (sandwich(::[a-z_:]+)?) \{)");
  static const std::regex forward_only(R"(^\s*(class|struct) \w+;\s*$)");
  for (const auto& [module, ok] : allowed()) {
    if (module == "apps") continue;  // programs may open any namespace they use
    const std::string expected = module == "common" ? "sandwich" : "sandwich::" + module;
    for (const auto& e : fs::recursive_directory_iterator(root / module)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h")) continue;
      std::ifstream in(e.path());
      std::vector<std::string> lines;
      for (std::string line; std::getline(in, line);) lines.push_back(line);
      for (size_t n = 0; n < lines.size(); ++n) {
        std::smatch m;
        if (!std::regex_search(lines[n], m, opening)) continue;
        const std::string ns = m[1];
        if (ns == expected || ns.starts_with(expected + "::")) continue;
        bool forward = true;  // only class/struct declarations up to the closing brace
        size_t k = n + 1;
        for (; k < lines.size() && !lines[k].starts_with("}"); ++k)
          if (!std::regex_match(lines[k], forward_only)) forward = false;
        if (forward) continue;
        ADD_FAILURE() << fs::relative(e.path(), root).string() << ":" << n + 1 << ": namespace "
                      << ns << " in " << module << "/ (expected " << expected << ")";
      }
    }
  }
}

// The README's map names every module folder and every room of engine/, and nothing else: a
// module or room added without its line there (or a line left for one removed) fails here.
TEST(Layout, TheReadmeMapMatchesTheTree) {
  const fs::path root = test::source_dir();
  std::ifstream in(root / "README.md");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const size_t start = text.find("\n## Layout");
  ASSERT_NE(start, std::string::npos) << "README.md has no Layout section";
  const std::string map = text.substr(start);
  std::set<std::string> named_modules, named_rooms;
  static const std::regex module_line(R"(\n- \*\*`([a-z]+)/`\*\*)");
  static const std::regex room_line(R"(\n  - `([a-z]+)/`:)");
  for (std::sregex_iterator it(map.begin(), map.end(), module_line), end; it != end; ++it)
    named_modules.insert((*it)[1]);
  for (std::sregex_iterator it(map.begin(), map.end(), room_line), end; it != end; ++it)
    named_rooms.insert((*it)[1]);

  std::set<std::string> modules;
  for (const auto& [module, ok] : allowed()) modules.insert(module);
  EXPECT_EQ(named_modules, modules) << "README.md's map and the include rules name other modules";
  // Every top-level folder with sources of its own is a module with rules.
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name == "tests" || name.starts_with(".") || name.starts_with("build"))
      continue;
    if (fs::exists(e.path() / "CMakeLists.txt")) {
      EXPECT_TRUE(modules.count(name)) << name << "/ builds code but has no rules here";
    }
  }

  std::set<std::string> rooms;
  for (const auto& e : fs::directory_iterator(root / "engine/src")) {
    if (e.is_directory())
      rooms.insert(e.path().filename().string());
    else
      ADD_FAILURE() << "engine/src/" << e.path().filename().string() << " is in no room";
  }
  std::set<std::string> header_rooms;
  for (const auto& e : fs::directory_iterator(root / "engine/include/engine")) {
    if (e.is_directory())
      header_rooms.insert(e.path().filename().string());
    else
      ADD_FAILURE() << "engine/include/engine/" << e.path().filename().string() << " is in no room";
  }
  EXPECT_EQ(named_rooms, rooms) << "README.md's rooms of engine/ and engine/src/ differ";
  for (const auto& r : header_rooms) EXPECT_TRUE(rooms.count(r)) << "engine/include/engine/" << r;
}

}  // namespace
}  // namespace sandwich
