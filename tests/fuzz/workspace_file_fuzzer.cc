// The workspace file (.ward.toml), which the sandbox can write: LoadPolicy with the input as the
// workspace file must not crash, an error names the file, and an accepted file only narrows the
// policy of the profile under it (no new or wider path, no wider workspace, no new host).
#include <algorithm>
#include <string>

#include "fuzz_util.h"
#include "policy/loader.h"

using namespace ward::policy;

namespace {

constexpr const char* kWorkspace = "/home/u/proj";
constexpr const char* kProfile = "/home/u/.config/ward/profiles/t.toml";

// A profile with something of every kind to narrow.
constexpr const char* kProfileText = R"(extends = "builtin:default"
[filesystem]
read = ["/opt"]
write = ["/srv"]
[limits]
memory = "8G"
pids = 1000
cpu = 4
timeout = "1h"
tmp_size = "1G"
[network]
allow = ["example.com", "*.example.org"]
)";

ward::Result<Policy> LoadWith(const std::string* workspace_file) {
  RunFlags flags;
  flags.profile = "t";
  Context ctx{"/home/u", kWorkspace, kWorkspace, "/home/u/.config/ward"};
  FileReader reader = [&](const std::string& path) -> ward::Result<std::string> {
    if (path == kProfile) return std::string(kProfileText);
    if (workspace_file != nullptr && path == WorkspaceFilePath(kWorkspace)) {
      return *workspace_file;
    }
    return ward::NotFound(path + ": no such file");
  };
  return LoadPolicy(flags, ctx, reader);
}

const PathRule* FindPath(const Policy& p, const std::string& path) {
  for (const PathRule& r : p.paths) {
    if (r.path == path) return &r;
  }
  return nullptr;
}

bool AllowsHost(const Policy& p, const std::string& pattern) {
  return std::any_of(p.network.allow.begin(), p.network.allow.end(),
                     [&](const HostRule& r) { return r.pattern == pattern; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Policy base = [] {
    ward::Result<Policy> r = LoadWith(nullptr);
    FUZZ_CHECK(r.ok());
    return *r;
  }();
  if (size > kWorkspaceFileMaxBytes) return 0;  // the CLI's reader refuses a larger file
  const std::string text(ward::fuzz::AsText(data, size));
  ward::Result<Policy> r = LoadWith(&text);
  if (!r.ok()) {
    FUZZ_CHECK(!r.status().message().empty());
    return 0;
  }
  for (const PathRule& rule : r->paths) {
    const PathRule* was = FindPath(base, rule.path);
    FUZZ_CHECK(was != nullptr);
    FUZZ_CHECK(rule.access == Access::kRead || was->access == Access::kWrite);
  }
  if (r->workspace_access == Access::kWrite) FUZZ_CHECK(base.workspace_access == Access::kWrite);
  if (!base.workspace_access) FUZZ_CHECK(!r->workspace_access);
  for (const HostRule& h : r->network.allow) FUZZ_CHECK(AllowsHost(base, h.pattern));
  FUZZ_CHECK(r->deny.size() >= base.deny.size());
  FUZZ_CHECK(r->audit == base.audit);
  FUZZ_CHECK(r->network.rules.size() == base.network.rules.size());
  if (r->network.transparent) FUZZ_CHECK(base.network.transparent);
  return 0;
}
