// The builders of common/json.h make the same JSON as nlohmann's brace lists.
#include "common/json.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ward {
namespace {

TEST(JsonObject, BuildsWhatABraceListBuilds) {
  const std::string path = "/a/path/longer/than/the/small/string/buffer";
  nlohmann::json built = JsonObject()("path", path)("n", 3)("on", true)("none", nullptr)(
      "list", std::vector<std::string>{"x", "y"})("inner", JsonObject()("k", "v"));
  nlohmann::json braces = {{"path", path},       {"n", 3},
                           {"on", true},         {"none", nullptr},
                           {"list", {"x", "y"}}, {"inner", {{"k", "v"}}}};
  EXPECT_EQ(built, braces);
  EXPECT_EQ(built.dump(), braces.dump());
  EXPECT_TRUE(nlohmann::json(JsonObject()).is_object());
  nlohmann::json squares = JsonArray(4, [](size_t i) -> nlohmann::json { return i * i; });
  EXPECT_EQ(squares, nlohmann::json({0, 1, 4, 9}));
  EXPECT_TRUE(JsonArray(0, [](size_t) -> nlohmann::json { return 1; }).is_array());
}

}  // namespace
}  // namespace ward
