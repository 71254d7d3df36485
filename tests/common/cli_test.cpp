// ArgParser: the tools' flags and one-line messages on top of CLI11.
#include "common/cli.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "common/version.h"
#include "error_text.h"

namespace sandwich {
namespace {

// argv for parse(): a program name, then the words.
struct Argv {
  std::vector<std::string> words;
  std::vector<char*> ptrs;
  Argv(std::initializer_list<std::string> w) : words{"prog"} {
    words.insert(words.end(), w.begin(), w.end());
    for (auto& s : words) ptrs.push_back(s.data());
  }
  int argc() const { return static_cast<int>(ptrs.size()); }
  char** argv() { return ptrs.data(); }
};

struct Options {
  std::string model;
  int n = 16;
  double temp = 1.0;
  bool quiet = false;
  std::vector<std::string> stops;
  std::optional<uint64_t> seed;
};

void declare(ArgParser& p, Options& o) {
  p.add("-m,--model", &o.model, "model", "M");
  p.add("-n,--n-predict", &o.n, "tokens");
  p.add("--temperature", &o.temp, "temperature");
  p.add_flag("-q,--quiet", &o.quiet, "quiet");
  p.add("--stop", &o.stops, "stop string");
  p.add("--seed", &o.seed, "seed");
}

std::string error_of(std::initializer_list<std::string> words, size_t positionals = 0) {
  Options o;
  ArgParser p("prog", "test");
  declare(p, o);
  if (positionals) p.accept_positionals(positionals);
  Argv a(words);
  return test::error_text<CliError>([&] { p.parse(a.argc(), a.argv()); });
}

TEST(Cli, LongShortInlineAndRepeatedOptions) {
  Options o;
  ArgParser p("prog", "test");
  declare(p, o);
  Argv a({"-m", "x.gguf", "--n-predict=5", "--temperature", "-0.5", "--stop", "a", "--stop=b", "-q",
          "--seed", "7", "-n", "9"});
  ASSERT_TRUE(p.parse(a.argc(), a.argv()));
  EXPECT_EQ(o.model, "x.gguf");
  EXPECT_EQ(o.n, 9);  // the last one given wins
  EXPECT_DOUBLE_EQ(o.temp, -0.5);
  EXPECT_TRUE(o.quiet);
  EXPECT_EQ(o.stops, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(o.seed, 7u);
}

TEST(Cli, AValueMayLookLikeAnOptionOrBeEmpty) {
  Options o;
  ArgParser p("prog", "test");
  declare(p, o);
  Argv a({"--model", "--quiet", "--stop", "-hello", "--stop", ""});
  ASSERT_TRUE(p.parse(a.argc(), a.argv()));
  EXPECT_EQ(o.model, "--quiet");
  EXPECT_FALSE(o.quiet);
  EXPECT_EQ(o.stops, (std::vector<std::string>{"-hello", ""}));
}

TEST(Cli, MistakesAreOneLineMessages) {
  EXPECT_EQ(error_of({"--bogus"}), "unknown option --bogus (see --help)");
  EXPECT_EQ(error_of({"--modle", "x"}), "unknown option --modle (did you mean --model?)");
  EXPECT_EQ(error_of({"--temprature=2"}),
            "unknown option --temprature (did you mean --temperature?)");
  EXPECT_EQ(error_of({"-n", "abc"}), "--n-predict expects an integer, got 'abc'");
  EXPECT_EQ(error_of({"-n", "99999999999"}), "--n-predict is out of range: 99999999999");
  EXPECT_EQ(error_of({"--temperature", "1e999"}), "--temperature expects a number, got '1e999'");
  EXPECT_EQ(error_of({"--seed", "-1"}), "--seed must not be negative");
  EXPECT_EQ(error_of({"--model"}), "--model needs a value");
  EXPECT_EQ(error_of({"-q", "-m"}), "-m needs a value");
  EXPECT_EQ(error_of({"--quiet=1"}), "--quiet takes no value");
  EXPECT_EQ(error_of({"stray"}), "unexpected argument 'stray' (see --help)");
  EXPECT_EQ(error_of({"--", "-n"}), "unexpected argument '-n' (see --help)");
}

// llama.cpp's names: a single dash, more than one letter.
TEST(Cli, SingleDashLongNames) {
  int np = 0;
  bool flag = false;
  std::string model;
  ArgParser p("prog", "test");
  p.add("-np,--parallel", &np, "slots");
  p.add_flag("-fa", &flag, "flag");
  p.add("-m", &model, "model");
  Argv a({"-np", "4", "-fa", "-m", "-np"});
  ASSERT_TRUE(p.parse(a.argc(), a.argv()));
  EXPECT_EQ(np, 4);
  EXPECT_TRUE(flag);
  EXPECT_EQ(model, "-np");  // a value, not the option
  Argv b({"-np=6"});
  ASSERT_TRUE(p.parse(b.argc(), b.argv()));
  EXPECT_EQ(np, 6);
  EXPECT_NE(p.usage().find("  -np, --parallel N"), std::string::npos) << p.usage();
  Argv c({"-m", "x", "-np"});
  EXPECT_EQ(test::error_text<CliError>([&] { p.parse(c.argc(), c.argv()); }), "-np needs a value");
  Argv d({"-npp", "4"});
  EXPECT_EQ(test::error_text<CliError>([&] { p.parse(d.argc(), d.argv()); }),
            "unknown option -npp (did you mean -np?)");
}

TEST(Cli, PositionalsUpToTheLimit) {
  Options o;
  ArgParser p("prog", "test");
  declare(p, o);
  p.accept_positionals(2);
  Argv a({"a", "-n", "3", "--", "-b"});
  ASSERT_TRUE(p.parse(a.argc(), a.argv()));
  EXPECT_EQ(p.positional(), (std::vector<std::string>{"a", "-b"}));
  EXPECT_EQ(o.n, 3);
  EXPECT_EQ(error_of({"a", "b", "c"}, 2), "unexpected argument 'c' (see --help)");
}

TEST(Cli, HelpPrintsTheOptionsAndStops) {
  Options o;
  ArgParser p("prog", "What it does.");
  declare(p, o);
  Argv a({"-n", "3", "--help", "--bogus"});
  testing::internal::CaptureStdout();
  EXPECT_FALSE(p.parse(a.argc(), a.argv()));
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(out.rfind("usage: prog [options]\nWhat it does.\n", 0), 0u) << out;
  EXPECT_NE(out.find("  -m, --model M"), std::string::npos) << out;
  EXPECT_NE(out.find("--stop S"), std::string::npos) << out;
  EXPECT_NE(out.find("stop string (repeatable)"), std::string::npos) << out;
  EXPECT_NE(out.find("  -h, --help"), std::string::npos) << out;
}

TEST(Cli, VersionPrintsOneLineAndStops) {
  Options o;
  ArgParser p("prog sub", "test");
  declare(p, o);
  Argv a({"-n", "3", "--version", "--bogus"});
  testing::internal::CaptureStdout();
  EXPECT_FALSE(p.parse(a.argc(), a.argv()));
  EXPECT_EQ(testing::internal::GetCapturedStdout(), version_line("prog") + "\n");
  // As an option's value it is only a value.
  Options o2;
  ArgParser p2("prog", "test");
  declare(p2, o2);
  Argv b({"--model", "--version"});
  EXPECT_TRUE(p2.parse(b.argc(), b.argv()));
  EXPECT_EQ(o2.model, "--version");
  EXPECT_EQ(error_of({"--verison"}), "unknown option --verison (did you mean --version?)");
}

TEST(Cli, SettersMayRefuseAValue) {
  ArgParser p("prog", "test");
  p.option("--mode", "M", "a or b", [](const std::string& v) {
    if (v != "a" && v != "b") throw CliError("--mode must be a or b, got '" + v + "'");
  });
  Argv a({"--mode", "c"});
  EXPECT_THROW(
      {
        try {
          p.parse(a.argc(), a.argv());
        } catch (const CliError& e) {
          EXPECT_STREQ(e.what(), "--mode must be a or b, got 'c'");
          throw;
        }
      },
      CliError);
}

}  // namespace
}  // namespace sandwich
