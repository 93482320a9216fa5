// Method and path rules (policy::RequestRule, `network.rules`): which requests to a host the
// proxy lets through. Pure.
//
// A host that some rule names ("governed") is limited to what its rules allow: each request
// to it is matched against the rules in order and the first that matches decides (allow, deny,
// ask); a request no rule matches is refused. Hosts no rule names are left to the allow and
// deny lists alone. A rule matches when its host pattern matches the host and port (a bare
// host: every port; "host:port": that one), its methods include the method (none listed: every
// one; compared without regard to case) and one of its paths matches the path (none listed:
// every path; deny and ask rules compare without regard to case, so that a server that folds
// case cannot be reached around them).
//
// Paths: a pattern without '?' is matched against the request's path, one with '?' against the
// path and query; '*' matches any run of characters ('/' included), everything else literally.
// The path is compared as the server will read it: percent-escapes of unreserved characters
// decoded (in the patterns too). A request target that could be read two ways is refused for a
// governed host, whatever the rules say: "." or ".." segments (escaped or not), an empty
// segment, an escaped '/', a backslash, ';' (path parameters), an escaped NUL or a target that
// is not in origin form. A pattern with '?' matches the query as sent, exactly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "net/egress_rules.h"
#include "net/idna.h"
#include "policy/policy.h"

namespace ward::net {

class RequestRules {
 public:
  RequestRules() = default;  // no rules: nothing is governed

  // Errors name the rule's origin.
  static Result<RequestRules> Compile(const std::vector<policy::RequestRule>& rules);

  bool empty() const { return rules_.empty(); }
  // The hosts rules name exactly (not "*.name", not addresses): what can be resolved ahead.
  std::vector<Host> NamedHosts() const;
  // Whether some rule names host:port (its requests must be seen, and checked).
  bool Governs(const Host& host, uint16_t port) const;

  struct Decision {
    enum class Action : uint8_t { kAllow, kDeny, kAsk };
    Action action = Action::kDeny;
    std::string rule;  // the deciding rule ("GET,HEAD api.example.com /repos/*"), "" when none
    policy::Origin origin;
    std::string reason;  // one line: why it is refused (or asked), for the 403 and the record
  };
  // For a request to a governed host: `method` as sent, `target` the request target in origin
  // form ("/path?query"). Untrusted input; never throws.
  Decision Check(const Host& host, uint16_t port, std::string_view method,
                 std::string_view target) const;

 private:
  struct Rule {
    HostRule host;
    std::vector<std::string> methods;
    std::vector<std::string> paths;
    policy::RequestRule::Action action = policy::RequestRule::Action::kAllow;
    std::string text;
    policy::Origin origin;
  };
  std::vector<Rule> rules_;
};

// The path (and query) of `target` as a server reads it, escapes of unreserved characters
// decoded; nullopt when it could be read more than one way (see above). Exposed for tests.
std::optional<std::string> CanonicalRequestPath(std::string_view target);

// Whether a rule's host pattern covers host:port: a bare host every port of it, "host:port"
// that port. The credential broker intercepts the rules' hosts by the same measure.
bool RuleHostMatches(const HostRule& rule, const Host& host, uint16_t port);

// Whether `pattern` ('*' matches any run, everything else literal) matches `text` whole.
bool MatchPathPattern(std::string_view pattern, std::string_view text);

}  // namespace ward::net
