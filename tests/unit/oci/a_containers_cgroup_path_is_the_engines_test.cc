// linux.cgroupsPath becomes the container's cgroup below each hierarchy's root: a cgroupfs path as
// given (a relative one below the root too), a systemd "slice:prefix:name" where systemd would
// put that scope; a path that leaves the root or is the root is refused, naming the field.
#include <gtest/gtest.h>

#include "oci/container_cgroup.h"

namespace ward::oci {
namespace {

std::string Path(const std::string& given, bool systemd = false) {
  Result<std::string> r = EngineCgroupPath(given, systemd);
  EXPECT_TRUE(r.ok()) << given << ": " << r.status().ToString();
  return r.ok() ? *r : "";
}

std::string Refusal(const std::string& given, bool systemd = false) {
  Result<std::string> r = EngineCgroupPath(given, systemd);
  EXPECT_FALSE(r.ok()) << given << " gave " << (r.ok() ? *r : "");
  return r.ok() ? "" : r.status().ToString();
}

TEST(EngineCgroupPath, CgroupfsPathsAreBelowTheRoot) {
  EXPECT_EQ(Path(""), "");
  EXPECT_EQ(Path("/libpod_parent/libpod-abc"), "/libpod_parent/libpod-abc");
  EXPECT_EQ(Path("/kubepods/burstable/pod1/c1"), "/kubepods/burstable/pod1/c1");
  EXPECT_EQ(Path("docker/c1"), "/docker/c1");
  EXPECT_EQ(Path("//a/./b//c/"), "/a/b/c");
  // Without --systemd-cgroup a colon is a character of a name.
  EXPECT_EQ(Path("system.slice:docker:c1"), "/system.slice:docker:c1");
}

TEST(EngineCgroupPath, SystemdScopesAreWhereSystemdPutsThem) {
  EXPECT_EQ(Path("system.slice:docker:c1", true), "/system.slice/docker-c1.scope");
  EXPECT_EQ(Path("kubepods-besteffort-pod12.slice:cri-containerd:c1", true),
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod12.slice/"
            "cri-containerd-c1.scope");
  EXPECT_EQ(Path(":libpod:c1", true), "/system.slice/libpod-c1.scope");
  EXPECT_EQ(Path("-.slice::c1", true), "/c1.scope");
}

TEST(EngineCgroupPath, PathsThatLeaveOrAreTheRootAreRefused) {
  for (const char* bad : {"/a/../../etc", "..", "/a/..", "/", "./."}) {
    const std::string why = Refusal(bad);
    EXPECT_NE(why.find("linux.cgroupsPath"), std::string::npos) << why;
  }
  EXPECT_NE(Refusal("/a/..").find("\"..\""), std::string::npos);
  EXPECT_NE(Refusal("/").find("names the root"), std::string::npos);
  EXPECT_NE(Refusal("/docker/c1", true).find("slice:prefix:name"), std::string::npos);
  EXPECT_NE(Refusal("a:b:c:d", true).find("slice:prefix:name"), std::string::npos);
  EXPECT_NE(Refusal("system.slice:docker:../c1", true).find("one path component"),
            std::string::npos);
  EXPECT_NE(Refusal("system.slice:do/cker:c1", true).find("one path component"),
            std::string::npos);
  EXPECT_NE(Refusal("../x.slice:p:c1", true).find("not a systemd slice"), std::string::npos);
  EXPECT_NE(Refusal("a--b.slice:p:c1", true).find("not a systemd slice"), std::string::npos);
  EXPECT_NE(Refusal("docker:p:c1", true).find("not a systemd slice"), std::string::npos);
  EXPECT_NE(Refusal("system.slice:p:", true).find("not empty"), std::string::npos);
}

}  // namespace
}  // namespace ward::oci
