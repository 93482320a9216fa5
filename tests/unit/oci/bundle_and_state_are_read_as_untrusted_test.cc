// `ward oci`'s input and its own records: config.json (and an exec's process file) parsed field
// by field with errors that name the field, `run.ward/` annotations (an unknown one refused), the bundle's root found beneath it
// without following a symlink out, a host socket's bind refused unless named, and the state kept
// per container (its status follows the init's pid and start time).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "oci/annotations.h"
#include "oci/bundle.h"
#include "oci/config.h"
#include "oci/state.h"

namespace ward::oci {
namespace {

const char* kMinimal = R"({
  "ociVersion": "1.0.2",
  "process": {"args": ["/bin/sh", "-c", "true"], "env": ["PATH=/bin"], "cwd": "/",
              "user": {"uid": 0, "gid": 0},
              "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 1024, "hard": 4096}]},
  "root": {"path": "rootfs", "readonly": true},
  "hostname": "box",
  "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
             {"destination": "/data", "type": "bind", "source": "/tmp", "options": ["rbind", "ro"]}],
  "linux": {"namespaces": [{"type": "pid"}, {"type": "network", "path": "/var/run/netns/pod"}],
            "resources": {"memory": {"limit": 268435456}, "pids": {"limit": 64},
                          "cpu": {"quota": 50000, "period": 100000}},
            "seccomp": {"defaultAction": "SCMP_ACT_ALLOW"}},
  "annotations": {"run.ward/allow-net": "registry.example.org, api.example.org:443",
                  "io.kubernetes.pod.name": "agent"}
})";

std::string ErrorOf(const Status& st) { return st.ToString(); }

TEST(OciConfig, TheFieldsWardUsesAreRead) {
  Result<Config> c = ParseConfig(kMinimal);
  ASSERT_TRUE(c.ok()) << ErrorOf(c.status());
  EXPECT_EQ(c->process.args, (std::vector<std::string>{"/bin/sh", "-c", "true"}));
  EXPECT_EQ(c->root_path, "rootfs");
  EXPECT_TRUE(c->root_readonly);
  EXPECT_EQ(c->hostname, "box");
  ASSERT_EQ(c->process.rlimits.size(), 1u);
  EXPECT_EQ(c->process.rlimits[0].hard, 4096u);
  ASSERT_EQ(c->mounts.size(), 2u);
  EXPECT_FALSE(c->mounts[0].bind());
  EXPECT_TRUE(c->mounts[1].bind());
  EXPECT_TRUE(c->mounts[1].read_only());
  ASSERT_EQ(c->namespaces.size(), 2u);
  EXPECT_EQ(c->namespaces[1].path, "/var/run/netns/pod");
  EXPECT_EQ(c->resources.memory_limit, 268435456);
  EXPECT_EQ(c->resources.pids_limit, 64);
  EXPECT_EQ(c->resources.cpu_quota_us, 50000u);
  ASSERT_TRUE(c->seccomp.has_value());
  EXPECT_EQ(c->seccomp->default_action, "SCMP_ACT_ALLOW");
  EXPECT_EQ(c->annotations.at("io.kubernetes.pod.name"), "agent");
}

TEST(OciConfig, EachErrorNamesItsField) {
  struct Case {
    std::string json, field;
  };
  const std::vector<Case> cases = {
      {"not json", "the file"},
      {"[]", "the file"},
      {R"({"process": {"args": ["/bin/true"]}})", "root"},
      {R"({"root": {"path": "r"}})", "process"},
      {R"({"root": {"path": "r"}, "process": {"args": []}})", "process.args"},
      {R"({"root": {"path": "r"}, "process": {"args": ["x"], "cwd": "rel"}})", "process.cwd"},
      {R"({"root": {"path": "r"}, "process": {"args": ["x"], "env": ["NOEQUALS"]}})", "process.env"},
      {R"({"root": {"path": "r"}, "process": {"args": ["x"], "user": {"uid": -1}}})",
       "process.user.uid"},
      {R"({"root": {"path": "r"}, "process": {"args": ["x"],
          "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 9, "hard": 1}]}})",
       "process.rlimits[RLIMIT_NOFILE]"},
      {R"({"root": {"path": "r"}, "process": {"args": ["x"]}, "mounts": [{"destination": "x"}]})",
       "mounts[].destination"},
      {R"({"root": {"path": "r"}, "process": {"args": ["x"]},
          "linux": {"namespaces": [{"type": "bogus"}]}})",
       "linux.namespaces[].type"},
      {R"({"root": {"path": "r"}, "process": {"args": ["x"]}, "annotations": {"a": 1}})",
       "annotations.a"},
      {R"({"root": {"path": "r"}, "process": {"args": ["x"]},
          "linux": {"seccomp": {"defaultAction": "SCMP_ACT_BOGUS"}}})",
       "linux.seccomp.defaultAction"},
      {R"({"root": {"path": "r"}, "process": {"args": ["x"]},
          "linux": {"seccomp": {"defaultAction": "SCMP_ACT_NOTIFY"}}})",
       "linux.seccomp.defaultAction"},
      {R"({"root": {"path": "r"}, "process": {"args": ["x"]},
          "linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/x"}}})",
       "linux.seccomp.listenerPath"},
      {R"({"root": {"path": "r"}, "process": {"args": ["x"]},
          "linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
            {"names": ["kill"], "action": "SCMP_ACT_ERRNO", "errnoRet": 5000}]}}})",
       "linux.seccomp.syscalls[0].errnoRet"},
      {R"({"root": {"path": "r"}, "process": {"args": ["x"]},
          "linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
            {"names": ["kill"], "action": "SCMP_ACT_ERRNO",
             "args": [{"index": 6, "value": 1, "op": "SCMP_CMP_EQ"}]}]}}})",
       "linux.seccomp.syscalls[0].args[].index"},
      {R"({"root": {"path": "r"}, "process": {"args": ["x"]},
          "linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
            {"names": ["kill"], "action": "SCMP_ACT_ERRNO",
             "args": [{"index": 1, "value": 1, "op": "SCMP_CMP_SOMETIMES"}]}]}}})",
       "linux.seccomp.syscalls[0].args[].op"},
  };
  for (const Case& c : cases) {
    Result<Config> r = ParseConfig(c.json);
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_NE(ErrorOf(r.status()).find("config.json: " + c.field + ":"), std::string::npos)
        << ErrorOf(r.status());
  }
}

// An exec's process file (`ward oci exec --process`) is a process object on its own, read
// with config.json's checks; its errors name the field in that file.
TEST(OciConfig, AnExecsProcessIsReadWithTheSameChecks) {
  Result<Process> p = ParseProcess(
      R"({"args": ["sh", "-c", "true"], "env": ["A=1"], "cwd": "/srv", "user": {"uid": 7, "gid": 8}})");
  ASSERT_TRUE(p.ok()) << ErrorOf(p.status());
  EXPECT_EQ(p->args, (std::vector<std::string>{"sh", "-c", "true"}));
  EXPECT_EQ(p->env, std::vector<std::string>{"A=1"});
  EXPECT_EQ(p->cwd, "/srv");
  EXPECT_EQ(p->uid, 7u);
  EXPECT_EQ(p->gid, 8u);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"not json", "process: not valid JSON"},
      {"[]", "process: not a JSON object"},
      {R"({"args": []})", "process: args:"},
      {R"({"args": ["x"], "cwd": "rel"})", "process: cwd:"},
      {R"({"args": ["x"], "env": ["NOEQUALS"]})", "process: env:"},
      {R"({"args": ["x"], "terminal": "yes"})", "process: terminal:"},
  };
  for (const auto& [json, said] : bad) {
    Result<Process> r = ParseProcess(json);
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_NE(ErrorOf(r.status()).find(said), std::string::npos) << ErrorOf(r.status());
  }
}

// An update's resources (`ward oci update --resources`) are linux.resources on their own.
TEST(OciConfig, AnUpdatesResourcesAreReadWithTheSameChecks) {
  Result<Resources> r = ParseResources(
      R"({"memory": {"limit": 1048576}, "pids": {"limit": 9}, "cpu": {"quota": 5000, "period": 10000}})");
  ASSERT_TRUE(r.ok()) << ErrorOf(r.status());
  EXPECT_EQ(r->memory_limit, 1048576);
  EXPECT_EQ(r->pids_limit, 9);
  EXPECT_EQ(r->cpu_quota_us, 5000u);
  EXPECT_EQ(r->cpu_period_us, 10000u);
  EXPECT_FALSE(ParseResources("{}")->memory_limit.has_value());
  for (const auto& [json, said] : std::vector<std::pair<std::string, std::string>>{
           {"nope", "resources: not valid JSON"},
           {R"({"memory": {"limit": "lots"}})", "resources: memory.limit:"},
           {R"({"cpu": {"quota": 5, "period": 0}})", "resources: cpu.period:"}}) {
    Result<Resources> bad = ParseResources(json);
    ASSERT_FALSE(bad.ok()) << json;
    EXPECT_NE(ErrorOf(bad.status()).find(said), std::string::npos) << ErrorOf(bad.status());
  }
}

TEST(OciAnnotations, WardsKeysAreReadAndAnUnknownOneIsRefused) {
  Result<WardAnnotations> w = ParseAnnotations({{"run.ward/allow-net", "a.example, b.example:22,"},
                                                {"run.ward/profile", "agent"},
                                                {"other.io/anything", "left alone"}});
  ASSERT_TRUE(w.ok()) << ErrorOf(w.status());
  EXPECT_EQ(w->allow_net, (std::vector<std::string>{"a.example", "b.example:22"}));
  EXPECT_EQ(w->profile, "agent");
  Result<WardAnnotations> typo = ParseAnnotations({{"run.ward/allow-nets", "a.example"}});
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(ErrorOf(typo.status()).find("run.ward/allow-nets"), std::string::npos);
  EXPECT_NE(ErrorOf(typo.status()).find("run.ward/allow-net,"), std::string::npos)
      << "the known keys are listed: " << ErrorOf(typo.status());
  EXPECT_FALSE(ParseAnnotations({{"run.ward/approver", "a terminal"}}).ok());
  EXPECT_FALSE(ParseAnnotations({{"run.ward/audit-dir", "relative"}}).ok());
}

TEST(OciAnnotations, ExposedPortsAreTcpPortsEachOnce) {
  Result<WardAnnotations> w = ParseAnnotations({{"run.ward/expose", "8080, 9090/tcp,443"}});
  ASSERT_TRUE(w.ok()) << ErrorOf(w.status());
  EXPECT_EQ(w->expose, (std::vector<uint16_t>{8080, 9090, 443}));
  for (const char* bad : {"0", "65536", "80/udp", "http", "-1", "8080,8080", "", "123456"}) {
    Result<WardAnnotations> r = ParseAnnotations({{"run.ward/expose", bad}});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(ErrorOf(r.status()).find("run.ward/expose"), std::string::npos) << ErrorOf(r.status());
  }
}

class OciBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ward-oci-unit-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void WriteConfig(const std::string& root_path, const std::string& extra = "") {
    std::ofstream(dir_ + "/config.json")
        << R"({"root": {"path": ")" << root_path << R"("}, "process": {"args": ["/bin/true"]})"
        << extra << "}";
  }
  std::string dir_;
};

TEST_F(OciBundleTest, ARelativeRootIsFoundBeneathTheBundle) {
  ASSERT_EQ(mkdir((dir_ + "/rootfs").c_str(), 0755), 0);
  WriteConfig("rootfs");
  Result<Bundle> b = LoadBundle(dir_);
  ASSERT_TRUE(b.ok()) << ErrorOf(b.status());
  EXPECT_EQ(b->rootfs, b->dir + "/rootfs");
}

TEST_F(OciBundleTest, ARootfsLinkOutOfTheBundleIsRefused) {
  ASSERT_EQ(symlink("/", (dir_ + "/rootfs").c_str()), 0);
  WriteConfig("rootfs");
  Result<Bundle> b = LoadBundle(dir_);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(ErrorOf(b.status()).find("root.path"), std::string::npos) << ErrorOf(b.status());
  WriteConfig("../");
  EXPECT_FALSE(LoadBundle(dir_).ok());
  WriteConfig("missing");
  EXPECT_FALSE(LoadBundle(dir_).ok());
}

TEST_F(OciBundleTest, AConfigThatIsALinkIsRefused) {
  ASSERT_EQ(mkdir((dir_ + "/rootfs").c_str(), 0755), 0);
  WriteConfig("rootfs");
  ASSERT_EQ(rename((dir_ + "/config.json").c_str(), (dir_ + "/real.json").c_str()), 0);
  ASSERT_EQ(symlink("real.json", (dir_ + "/config.json").c_str()), 0);
  EXPECT_FALSE(LoadBundle(dir_).ok());
}

TEST_F(OciBundleTest, AHostSocketIsBoundOnlyWhenAnAnnotationNamesIt) {
  ASSERT_EQ(mkdir((dir_ + "/rootfs").c_str(), 0755), 0);
  const std::string sock = dir_ + "/engine.sock";
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::copy(sock.begin(), sock.end(), addr.sun_path);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string mount = R"(, "mounts": [{"destination": "/var/run/docker.sock", "type": "bind",
      "source": ")" + sock + R"(", "options": ["rbind"]}])";
  WriteConfig("rootfs", mount);
  Result<Bundle> refused = LoadBundle(dir_);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(ErrorOf(refused.status()).find("run.ward/allow-socket-bind=" + sock), std::string::npos)
      << ErrorOf(refused.status());
  WriteConfig("rootfs", mount + R"(, "annotations": {"run.ward/allow-socket-bind": ")" + sock + "\"}");
  Result<Bundle> allowed = LoadBundle(dir_);
  EXPECT_TRUE(allowed.ok()) << ErrorOf(allowed.status());
  close(fd);
}

TEST_F(OciBundleTest, StateFollowsTheInitsPidAndStartTime) {
  const std::string root = dir_ + "/state";
  ContainerState s;
  s.id = "box-1";
  s.bundle = dir_;
  s.created = "2026-12-05T00:00:00Z";
  ASSERT_TRUE(SaveState(root, s).ok());
  Result<ContainerState> back = LoadState(root, "box-1");
  ASSERT_TRUE(back.ok()) << ErrorOf(back.status());
  EXPECT_EQ(ContainerStatus(*back), "creating");
  // A live process with its start time: created, then running once started.
  back->pid = getpid();
  back->pid_start = ProcessStartTime(getpid());
  ASSERT_NE(back->pid_start, 0u);
  EXPECT_EQ(StateJson(*back)["status"], "created");
  back->started = true;
  EXPECT_EQ(StateJson(*back)["status"], "running");
  EXPECT_EQ(StateJson(*back)["pid"], getpid());
  // The same pid with another start time is another process: stopped.
  back->pid_start += 1;
  EXPECT_EQ(StateJson(*back)["status"], "stopped");
  EXPECT_EQ(StateJson(*back)["pid"], 0);
  // A child that exited: stopped.
  pid_t child = fork();
  if (child == 0) _exit(0);
  const uint64_t start = ProcessStartTime(child);
  waitpid(child, nullptr, 0);
  back->pid = child;
  back->pid_start = start;
  EXPECT_EQ(ContainerStatus(*back), "stopped");
  ASSERT_TRUE(RemoveState(root, "box-1").ok());
  Result<ContainerState> gone = LoadState(root, "box-1");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), Code::kNotFound);
  for (const char* bad : {"", ".hidden", "a/b", "../x", "sp ace"}) {
    EXPECT_FALSE(CheckContainerId(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace ward::oci
