// The egress allow list: which host names, addresses and ports the proxy may connect to. Pure.
//
// Patterns (policy::HostRule::pattern):
//   example.com        that host only            *.example.com   its subdomains, any depth, not it
//   host:8443          one port                  host:*          every port
//   host               ports 80 and 443 in allow rules, every port in deny rules
//   10.0.0.5  [::1]:3000  10.0.0.0/8  [fd00::/8]:443          addresses and CIDR blocks
// Names are normalised (IDNA, case, trailing dot) on both sides. Deny rules win over allow
// rules. An IP-literal destination is allowed only by an address or CIDR rule, and so is a
// name that resolves to a non-public address (loopback, private, metadata, ...).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "net/addr.h"
#include "net/idna.h"
#include "policy/policy.h"

namespace ward::net {

// One compiled pattern.
struct HostRule {
  enum class Kind : uint8_t { kExact, kWildcard, kAddress, kNet };
  enum class Ports : uint8_t { kDefault, kAny, kOne };

  Kind kind = Kind::kExact;
  std::string name;  // kExact: the host; kWildcard: the suffix after "*."
  IpNet net;         // kAddress (a /32 or /128) and kNet
  Ports ports = Ports::kDefault;
  uint16_t port = 0;  // kOne
  std::string text;   // the pattern as written
  policy::Origin origin;

  // Errors name the pattern and its origin.
  static Result<HostRule> Parse(const policy::HostRule& rule);

  bool MatchesName(std::string_view normalized_name) const;  // exact / wildcard kinds only
  bool MatchesAddress(const IpAddress& addr) const;          // address / net kinds only
  // A bare pattern (kDefault) means 80 and 443 for allow rules and every port for deny rules.
  bool MatchesPort(uint16_t port, bool deny_rule) const;
};

class EgressRules {
 public:
  EgressRules() = default;  // no rules: everything is denied

  static Result<EgressRules> Compile(const policy::NetworkPolicy& policy);

  struct Decision {
    bool allowed = false;
    std::string rule;  // the deciding pattern as written, "" when none
    policy::Origin origin;
    std::string reason;  // one line, for the 403 body, `ward why` and the audit event
    // Denied with no rule deciding: the flag that would allow it ("-n example.com",
    // "-n example.com:8443"). "" when allowed, when a network.deny rule decided (refused on
    // purpose) and when no flag would help (a malformed name, port 0, a name resolving to a
    // non-public address).
    std::string allow_with;
  };

  // Before any resolution. `host` is untrusted text (CONNECT authority, Host header, SOCKS
  // domain, SNI); IP literals in it, disguised or not, are checked as addresses.
  Decision CheckName(std::string_view host, uint16_t port) const;
  Decision CheckHost(const Host& host, uint16_t port) const;
  // After resolution, for every address the proxy is about to connect to: deny rules by
  // address apply, and a non-public address needs an allow rule naming that address or a CIDR
  // containing it (how a dev server on the host's loopback is reached).
  Decision CheckAddress(const IpAddress& addr, uint16_t port) const;

  // For the DNS stub, which sees names without ports: allowed when some allow rule matches the
  // name on some port and no deny rule covers it on every port. IP-literal names are denied.
  Decision CheckDnsName(std::string_view name) const;

  // The TCP ports some allow rule opens for a name (not an address): what transparent capture
  // must let the sandbox connect to. `any`: a rule allows every port ("host:*").
  struct NamePorts {
    std::vector<uint16_t> ports;  // sorted, unique
    bool any = false;
    bool empty() const { return ports.empty() && !any; }
  };
  NamePorts AllowedNamePorts() const;

  bool empty() const { return allow_.empty(); }  // nothing can be reached
  const std::vector<HostRule>& allow_rules() const { return allow_; }
  const std::vector<HostRule>& deny_rules() const { return deny_; }

 private:
  std::vector<HostRule> allow_;
  std::vector<HostRule> deny_;
};

// Same text as policy::Origin::ToString(); here so that the pure net code (and its fuzz
// targets) links without the policy library.
std::string FormatOrigin(const policy::Origin& o);

// The `-n` flag that allows `host` on `port` alone: "-n example.com" for 80 and 443 (what a bare
// pattern allows), "-n example.com:8443", "-n 10.0.0.5", "-n [fd00::1]:3000".
std::string AllowFlag(const Host& host, uint16_t port);

// How a refusal names its target: the host for 80 and 443, host:port otherwise.
std::string RefusalTarget(const Host& host, uint16_t port);

// The one sentence a refusal says wherever it is shown (the proxy's 403 status line and body,
// the net.deny and dns.deny records' `why`, the end-of-run summary):
//   "registry.example.org not allowed (ward run -n registry.example.org)"
//   "evil.example refused by network.deny rule 'evil.example' (command line (--deny-net))"
//   "example.com:443 refused: TLS server name ... does not match ..."
// `rule`/`origin`: the network.deny rule that decided ("" when none); `no_rule`: nothing
// decided (no allow rule names it); `detail`: the reason otherwise. Printable ASCII only: the
// target comes from the sandbox, and the sentence goes to terminals and into a status line.
std::string RefusalSentence(std::string_view target, std::string_view rule,
                            std::string_view origin, bool no_rule, std::string_view detail,
                            std::string_view allow_with);

}  // namespace ward::net
