// Method and path rules on the request path: the request target read as the server reads it,
// the glob, and rules from a profile's [[network.rules]] (and the -n flag) compiled and checked
// against a request. The first byte picks the mode.
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "net/request_rules.h"
#include "policy/loader.h"

using namespace ward::net;

namespace {

// A canonical path has one reading: no "." or ".." segment, no empty one inside, and reading it
// again changes nothing.
void Targets(std::string_view in) {
  std::optional<std::string> c = CanonicalRequestPath(in);
  if (!c) return;
  FUZZ_CHECK(!c->empty() && (*c)[0] == '/');
  const std::string path = c->substr(0, c->find('?'));
  FUZZ_CHECK(path.find("//") == std::string::npos);
  FUZZ_CHECK(path.find("/./") == std::string::npos && path.find("/../") == std::string::npos);
  FUZZ_CHECK(path != "/." && path != "/..");
  FUZZ_CHECK(path.size() < 2 || path.compare(path.size() - 2, 2, "/.") != 0);
  FUZZ_CHECK(path.size() < 3 || path.compare(path.size() - 3, 3, "/..") != 0);
  FUZZ_CHECK(path.find('\\') == std::string::npos);
  std::optional<std::string> again = CanonicalRequestPath(*c);
  FUZZ_CHECK(again && *again == *c);
}

void Globs(std::string_view in) {
  const size_t nl = in.find('\n');
  std::string_view pattern = in.substr(0, nl);
  std::string_view text = nl == std::string_view::npos ? in : in.substr(nl + 1);
  const bool m = MatchPathPattern(pattern, text);
  FUZZ_CHECK(MatchPathPattern("*", text));
  if (pattern.find('*') == std::string_view::npos) FUZZ_CHECK(m == (pattern == text));
  FUZZ_CHECK(MatchPathPattern(text.find('*') == std::string_view::npos ? text : "*", text));
}

// The input's first line as a -n flag, the rest as the body of one [[network.rules]] table.
void Rules(std::string_view in) {
  const size_t nl = in.find('\n');
  ward::policy::RunFlags flags;
  flags.profile = "t";
  flags.allow_net = {std::string(in.substr(0, nl))};
  const std::string profile =
      "[[network.rules]]\n" + std::string(nl == std::string_view::npos ? "" : in.substr(nl + 1));
  ward::policy::Context ctx{"/home/u", "/home/u/proj", "/home/u/proj", "/home/u/.config/ward"};
  ward::policy::FileReader reader = [&](const std::string& path) -> ward::Result<std::string> {
    if (path == "/home/u/.config/ward/profiles/t.toml") return profile;
    return ward::NotFound(path);
  };
  ward::Result<ward::policy::Policy> p = ward::policy::LoadPolicy(flags, ctx, reader);
  if (!p.ok()) {
    FUZZ_CHECK(!p.status().message().empty());
    return;
  }
  ward::Result<RequestRules> rules = RequestRules::Compile(p->network.rules);
  if (!rules.ok()) return;
  for (const ward::policy::RequestRule& r : p->network.rules) {
    ward::Result<Host> host = ParseHost(r.host.substr(0, r.host.rfind(':')));
    if (!host.ok()) continue;
    for (const char* target : {"/", "/a/b?c=d", "/../x"}) {
      RequestRules::Decision d = rules->Check(*host, 443, "GET", target);
      if (d.action != RequestRules::Decision::Action::kAllow) FUZZ_CHECK(!d.reason.empty());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view in = ward::fuzz::AsText(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      Targets(in);
      break;
    case 1:
      Globs(in);
      break;
    default:
      Rules(in);
      break;
  }
  return 0;
}
