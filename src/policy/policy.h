// The effective policy of one run: an immutable value built from profiles, the workspace's
// .ward.toml (narrowing only) and command-line flags. Pure data; the policy module makes no
// syscalls (file contents reach it through a reader callback).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ward::policy {

// Where a rule came from, so that `ward why` and validation errors can name it.
struct Origin {
  std::string source;  // "builtin:default", "/home/u/.config/ward/profiles/x.toml", "cli", ...
  int line = 0;        // 1-based; 0 when not from a file
  std::string key;     // "filesystem.read", "--write", ...
  std::string ToString() const;  // "builtin:default:12 (filesystem.read)"
};

enum class Access { kRead, kWrite };  // kRead: read + execute; kWrite: read, write, create
const char* AccessName(Access a);

// A host path made visible inside at the same path.
struct PathRule {
  std::string path;  // absolute, lexically normalised, "~" expanded to the caller's HOME
  Access access = Access::kRead;
  bool optional = false;  // a missing path is skipped (noted by explain) instead of an error
  Origin origin;
};

// A path that must not be visible inside even when a broader rule would show it.
struct DenyRule {
  std::string path;  // absolute; may end in a '*' glob component ("/etc/ssh/ssh_host_*")
  Origin origin;
};

// Relative to every writable root (and nested repository roots): read-only there, and not
// creatable when absent.
struct ProtectedRule {
  std::string relpath;  // ".git/hooks", ".envrc", ".claude"
  Origin origin;
};

// An environment variable passed from the caller (value empty) or set to a value.
struct EnvRule {
  std::string name;  // exact name, or a prefix ending in '*' ("LC_*")
  std::optional<std::string> value;
  Origin origin;
};

// "example.com", "*.example.com", "example.com:8443", "example.com:*", "10.0.0.0/8", "[::1]:3000".
// Parsed and matched by net::EgressRules.
struct HostRule {
  std::string pattern;
  Origin origin;
};

// A method and path rule (network.rules, or `-n 'GET host/path'`): which requests to a host are
// allowed, refused or asked about. The first rule that matches a request decides it; a host
// some rule names is limited to what its rules allow. Parsed and matched by net::RequestRules.
struct RequestRule {
  enum class Action { kAllow, kDeny, kAsk };
  std::string host;                  // a name, "*.name" or one address, with an optional port
  std::vector<std::string> methods;  // upper case; empty: every method
  std::vector<std::string> paths;    // "/repos/acme/*" ('*' matches anything); empty: every path
  Action action = Action::kAllow;
  Origin origin;
};
// "allow" | "deny" | "ask" (inline: the pure net code names actions without linking policy)
inline const char* RequestActionName(RequestRule::Action a) {
  switch (a) {
    case RequestRule::Action::kAllow:
      return "allow";
    case RequestRule::Action::kDeny:
      return "deny";
    case RequestRule::Action::kAsk:
      return "ask";
  }
  return "?";
}

struct NetworkPolicy {
  std::vector<HostRule> allow;
  std::vector<HostRule> deny;
  // In order: the command line's first, then the profiles' (a base profile's before those of
  // the profiles extending it).
  std::vector<RequestRule> rules;
  // Transparent capture: TCP to an allowed name reaches it without the proxy variables (the
  // DNS stub answers with synthetic addresses the supervisor maps back to the name). On when
  // any host is allowed; `network.transparent = false` turns it off.
  bool transparent = true;
  Origin transparent_origin;
};

// Concurrent connections from one sandbox to its egress proxy, when no profile says otherwise:
// far above what package managers open (they keep a few dozen), far below what would tie up
// the supervisor's descriptors.
inline constexpr uint64_t kDefaultProxyConnections = 128;
inline constexpr uint64_t kMaxProxyConnections = 16384;

struct Limits {
  std::optional<uint64_t> memory_bytes;
  std::optional<uint64_t> pids;
  std::optional<double> cpu_cores;
  std::optional<uint64_t> timeout_ms;
  std::optional<uint64_t> tmp_size_bytes;     // private /tmp and HOME tmpfs
  std::optional<uint64_t> file_size_bytes;    // RLIMIT_FSIZE
  std::optional<uint64_t> proxy_connections;  // nullopt: kDefaultProxyConnections
  std::map<std::string, Origin> origins;      // key: "memory", "pids", ...
};

// How a credential's secret is fetched on the host (never inside the sandbox).
struct CredentialSource {
  enum class Kind { kEnv, kFile, kCommand };
  Kind kind = Kind::kEnv;
  std::string value;  // variable name, absolute file path, or shell command
};

struct CredentialInject {
  enum class Kind { kHeader, kBasic, kQuery };
  Kind kind = Kind::kHeader;
  std::string name;       // header name or query parameter
  std::string template_;  // "Bearer {secret}"; for basic auth: the user name
};

struct Credential {
  std::string name;
  CredentialSource from;
  std::vector<std::string> hosts;  // host patterns the real secret may go to
  CredentialInject inject;
  std::string env;    // variable that holds the phantom inside ("" = none)
  std::string route;  // reverse-proxy route prefix ("" = none)
  std::map<std::string, std::string> route_env;  // e.g. ANTHROPIC_BASE_URL = "{route_url}"
  bool enabled = false;  // defined by a profile; enabled by --credential or `enabled = true`
  Origin origin;
};

struct ApprovalsPolicy {
  bool enabled = false;                // trap opens of paths the policy does not allow
  std::vector<std::string> auto_deny;  // path or host patterns answered "deny" without asking
  std::vector<std::string> auto_allow_once;
  uint64_t timeout_ms = 60000;  // no answer in time means deny
  Origin origin;
};

// Layers a user may explicitly accept to run without ("--allow-degraded=landlock").
enum class Layer { kLandlock, kSeccomp, kLimits };
const char* LayerName(Layer l);
std::optional<Layer> ParseLayer(const std::string& name);

// A profile file or built-in that contributed to the policy, with its content hash.
struct ProfileSource {
  std::string name;    // "default", or the file path
  std::string origin;  // "builtin" | "file" | "workspace"
  std::string sha256;  // hex digest of the text
};

struct Policy {
  std::string profile;      // name of the top profile
  std::string description;  // the `description` of the most derived profile that has one
  std::vector<ProfileSource> sources;

  // The workspace: the command's working directory, writable unless workspace_access says not.
  std::string workspace;  // absolute host path (as given; symlinks resolved later)
  std::optional<Access> workspace_access = Access::kWrite;  // nullopt: not mounted at all
  Origin workspace_origin;
  // Why the workspace would have been refused, when --workspace-anyway accepted it ("" when it
  // was not refused): recorded with the policy (policy/workspace_choice.h).
  std::string workspace_anyway;

  std::vector<PathRule> paths;  // system, profile and CLI binds; may include paths under HOME
  std::vector<DenyRule> deny;
  std::vector<ProtectedRule> protected_paths;
  int nested_repo_depth = 3;  // how deep to look for nested repositories to protect

  std::string home;  // the caller's HOME; inside it is a private tmpfs at the same path
  std::vector<EnvRule> env;
  NetworkPolicy network;
  Limits limits;
  std::map<std::string, Credential> credentials;
  ApprovalsPolicy approvals;
  std::set<Layer> allow_degraded;
  std::map<Layer, Origin> degraded_origins;
  bool audit = true;  // false only with --no-audit
};

// Whether any credential is enabled (the run then brokers credentials through its proxy).
bool AnyCredentialEnabled(const Policy& policy);
// Whether the run's proxy terminates TLS for some host, with the session CA: an enabled
// credential's hosts, and the hosts method and path rules name (their requests must be seen).
bool InterceptsTls(const Policy& policy);

}  // namespace ward::policy
