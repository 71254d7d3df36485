#include "common/enum_names.h"

#include <gtest/gtest.h>

namespace sandwich {
namespace {

enum class Color { Red, Green, Blue, Unnamed };
constexpr EnumName<Color> kColors[] = {
    {Color::Red, "red"}, {Color::Green, "green"}, {Color::Green, "lime"}, {Color::Blue, "blue"}};

TEST(EnumNames, FirstNamePrintsEveryNameParses) {
  static_assert(name_of(Color::Green, kColors) == "green");
  EXPECT_EQ(name_of(Color::Unnamed, kColors), "?");
  EXPECT_EQ(name_of(Color::Unnamed, kColors, "none"), "none");
  EXPECT_EQ(value_named("lime", kColors), Color::Green);
  EXPECT_EQ(value_named("blue", kColors), Color::Blue);
  EXPECT_EQ(value_named("Blue", kColors), std::nullopt);
  EXPECT_EQ(names_of(kColors), "red, green or blue");
}

}  // namespace
}  // namespace sandwich
