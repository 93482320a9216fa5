// audit.query finds sessions by the labels of their session.start record.
#include "api/audit_query.h"

#include <gtest/gtest.h>

#include "api_test_util.h"
#include "audit/session_log.h"

namespace ward::api {
namespace {

using testing::TempDir;

void MakeSession(const std::string& state, const nlohmann::json& labels,
                 std::vector<std::pair<std::string, nlohmann::json>> events) {
  audit::SessionLog::Options o;
  o.state_dir = state;
  o.session_id = audit::NewSessionId();
  auto log = audit::SessionLog::Create(o);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  (*log)->Emit("session.start", {{"command", {"x"}}, {"labels", labels}});
  for (auto& [t, d] : events) (*log)->Emit(t, d);
  (*log)->Emit("session.end", {{"exit_code", 0}, {"signal", nullptr}});
  ASSERT_TRUE((*log)->Close().ok());
}

TEST(LabelsOf, ObjectOrArrayForms) {
  EXPECT_EQ(LabelsOf({{"labels", {{"a", "1"}, {"n", 2}}}}),
            (std::map<std::string, std::string>{{"a", "1"}}));
  EXPECT_EQ(LabelsOf({{"labels", {"a=1", "b=x=y", "junk", 3}}}),
            (std::map<std::string, std::string>{{"a", "1"}, {"b", "x=y"}}));
  EXPECT_TRUE(LabelsOf({{"labels", "a=1"}}).empty());
  EXPECT_TRUE(LabelsOf(nlohmann::json::array()).empty());
}

TEST(AuditQuery, FiltersByLabelsAndType) {
  TempDir state;
  MakeSession(state.path(), {{"sandbox", "sb-1"}, {"exec", "ex-1"}},
              {{"net.deny", {{"host", "evil"}}}, {"exec", {{"argv", {"ls"}}}}});
  MakeSession(state.path(), {"sandbox=sb-1", "exec=ex-2"}, {});
  MakeSession(state.path(), {{"sandbox", "sb-2"}}, {});
  AuditQuery q;
  q.labels = {{"sandbox", "sb-1"}};
  auto r = QueryAudit(state.path(), q);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["sessions"].size(), 2u);
  q.labels["exec"] = "ex-1";
  q.records = true;
  q.type = "net.";
  r = QueryAudit(state.path(), q);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ((*r)["sessions"].size(), 1u);
  auto& s = (*r)["sessions"][0];
  EXPECT_EQ(s["denials"], 1);
  EXPECT_EQ(s["ended"], true);
  EXPECT_EQ(s["exit_code"], 0);
  ASSERT_EQ(s["records"].size(), 1u);
  EXPECT_EQ(s["records"][0]["type"], "net.deny");
  q = AuditQuery();
  q.limit = 1;
  r = QueryAudit(state.path(), q);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["sessions"].size(), 1u);
  EXPECT_EQ((*r)["truncated"], true);
}

TEST(AuditQuery, NoStateDirAndEmptyDirs) {
  auto r = QueryAudit("", AuditQuery());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUnsupported);
  TempDir empty;
  r = QueryAudit(empty.path(), AuditQuery());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)["sessions"].empty());
}

}  // namespace
}  // namespace ward::api
