#include <gtest/gtest.h>

#include "engine/text/token_id_list.h"
#include "error_text.h"

namespace sandwich::engine {
namespace {

TEST(TokenIdList, SpacesCommasTabsAndNewlinesSeparate) {
  EXPECT_EQ(parse_token_ids("1 2,3\t4\n5,, 6 ", 10, "--ids"),
            (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(parse_token_ids(" , ", 10, "--ids").empty());
}

TEST(TokenIdList, AnIdOutsideTheVocabularyIsRefused) {
  EXPECT_EQ(test::error_text([] { parse_token_ids("1 10", 10, "--ids"); }),
            "token id 10 is outside the vocabulary of 10");
  EXPECT_NE(test::error_text([] { parse_token_ids("1 x", 10, "--ids"); }).find("--ids"),
            std::string::npos);
}

}  // namespace
}  // namespace sandwich::engine
