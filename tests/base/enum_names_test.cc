// One table per enum, both directions (base/enum_names.h).
#include "base/enum_names.h"

#include <gtest/gtest.h>

namespace sluice::detail {
namespace {

enum class Fruit { kApple, kPear, kFig };
constexpr EnumName<Fruit> kFruits[] = {{Fruit::kApple, "apple"},
                                       {Fruit::kApple, "Apple", true},
                                       {Fruit::kPear, "pear"},
                                       {Fruit::kFig, "fig"}};

TEST(EnumNamesTest, ParsesNamesAndAliasesPrintsNames) {
  EXPECT_EQ(*parse_enum_name("pear", kFruits, "unknown fruit"), Fruit::kPear);
  EXPECT_EQ(*parse_enum_name("Apple", kFruits, "unknown fruit"), Fruit::kApple);
  EXPECT_EQ(enum_name(Fruit::kApple, kFruits), "apple");  // never the alias
  EXPECT_EQ(enum_name(Fruit::kFig, kFruits), "fig");
  EXPECT_EQ(enum_name(static_cast<Fruit>(7), kFruits), "?");
  EXPECT_EQ(enum_name(static_cast<Fruit>(7), kFruits, "unknown"), "unknown");
}

TEST(EnumNamesTest, AnUnknownNameListsWhatTheTableOffers) {
  Result<Fruit> r = parse_enum_name("kiwi", kFruits, "--fruit: unknown value");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "--fruit: unknown value 'kiwi' (expected apple, pear or fig)");
  constexpr EnumName<Fruit> kTwo[] = {{Fruit::kPear, "pear"}, {Fruit::kFig, "fig"}};
  EXPECT_EQ(parse_enum_name("", kTwo, "unknown fruit").status().message(),
            "unknown fruit '' (expected pear or fig)");
}

}  // namespace
}  // namespace sluice::detail
