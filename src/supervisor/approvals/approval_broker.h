// The approval broker: the only way the policy grows during a run. A request (a file
// the policy does not allow, a host not on the allow list, an HTTP request an "ask" method and
// path rule matched) is answered by, in order: a live
// grant, the policy's standing answers (`auto_deny`, then `auto_allow_once`), then the
// configured channels (the per-session socket, the terminal prompt, a webhook) — the first
// answer wins, and no answer within `timeout_ms` means deny. Every request, answer and grant
// use is reported through the EventSink. Protocol and lifetimes: docs/approvals.md.
//
// Threads: the broker lives on the supervisor's asio loop. Match() is called from any thread
// (the notifier's); Ask(), Answer(), Revoke() and the listings may be called from any thread
// too, but callbacks and channels always run on the loop thread.
#pragma once

#include <sys/types.h>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/events.h"
#include "common/status.h"
#include "net/egress_rules.h"
#include "policy/policy.h"

namespace ward::supervisor {

enum class RequestKind : uint8_t { kFile, kHost, kRequest };
const char* RequestKindName(RequestKind k);  // "file" | "host" | "request"

// What a file request wants. A grant covers a request when its access includes the request's:
// read ⊂ read-write ⊂ create and write ⊂ read-write (create: may also create the file).
enum class FileAccess : uint8_t { kRead, kWrite, kReadWrite, kCreate };
const char* FileAccessName(FileAccess a);  // "read" | "write" | "read-write" | "create"
std::optional<FileAccess> ParseFileAccess(std::string_view name);
bool AccessCovers(FileAccess granted, FileAccess wanted);

struct ApprovalRequest {
  uint64_t id = 0;  // assigned by the broker: 1, 2, ... per session
  RequestKind kind = RequestKind::kFile;
  // file: the absolute path as the sandbox sees it (normalised lexically by the broker: the
  // opener must refuse symlinks on the way, so "a/../b" and "b" are the same file);
  // host, request: a name or an address (normalised: IDNA, lower case; addresses canonical).
  std::string subject;
  FileAccess access = FileAccess::kRead;       // file requests
  uint16_t port = 0;                           // host and request requests
  std::string method;                          // request: as sent ("GET")
  std::string path;                            // request: path and query, as the rules read it
  std::string rule;                            // request: the "ask" rule that matched
  pid_t pid = 0;                               // best effort: the asking process
  std::string exe;                             // best effort: its executable
  std::chrono::system_clock::time_point when;  // set by the broker
};
nlohmann::json RequestToJson(const ApprovalRequest& r);

enum class Lifetime : uint8_t { kOnce, kSession, kDuration };

struct GrantScope {
  Lifetime lifetime = Lifetime::kOnce;
  std::chrono::milliseconds duration{0};  // kDuration: > 0
};
// "once" | "session" | a duration ("90s", "10m", "1h"; at most 30 days).
Result<GrantScope> ParseScope(std::string_view text);
std::string ScopeName(const GrantScope& s);  // "once", "session", "10m", "1h30m", "1500ms"

enum class SubjectMatch : uint8_t {
  kExactPath,    // that path only
  kPathPrefix,   // the path and everything below it (component-wise: /a/b covers /a/b/c, not /a/bc)
  kExactHost,    // that host (name or address)
  kHostPattern,  // "*.example.com": its subdomains, not itself
  kRequestPath,    // requests: that method, host, port and path (with its query)
  kRequestPrefix,  // requests: that method, host and port, a path starting with the prefix
};
// "path" | "prefix" | "host" | "host_pattern" | "request" | "request_prefix"
const char* SubjectMatchName(SubjectMatch m);

struct GrantSpec {
  RequestKind kind = RequestKind::kFile;
  SubjectMatch match = SubjectMatch::kExactPath;
  std::string subject;
  FileAccess access = FileAccess::kRead;  // files
  uint16_t port = 0;                      // hosts and requests: exactly this port
  std::string method;                     // requests: exactly this method
  std::string path;                       // requests: the path, or the prefix
  GrantScope scope;
};

struct Grant {
  enum class State : uint8_t { kLive, kUsed, kExpired, kRevoked };
  uint64_t id = 0;
  GrantSpec spec;
  uint64_t uses = 0;
  uint64_t request_id = 0;  // the request whose answer created it; 0 when none
  std::string channel;      // who granted: "socket", "terminal", "webhook", ...
  std::chrono::system_clock::time_point created;
  std::optional<std::chrono::system_clock::time_point> expires;  // kDuration (wall clock)
  std::chrono::steady_clock::time_point expires_at;              // kDuration (broker clock)
  State state = State::kLive;
};
const char* GrantStateName(Grant::State s);  // "live" | "used" | "expired" | "revoked"
nlohmann::json GrantToJson(const Grant& g);

// An answer from a channel.
struct ChannelAnswer {
  bool allow = false;
  GrantScope scope;  // when allowing
  // When allowing: widen the subject. Empty string: the default widening (files: the parent
  // directory; hosts: "*." + the parent domain; requests: the path up to its last '/', same
  // method). Otherwise a path prefix containing the requested path, a host pattern "*.suffix"
  // matching the requested host, or for a request a prefix of its path ("/repos/acme/").
  std::optional<std::string> prefix;
  std::string reason;  // optional, for the audit trail
};

// What Ask's callback receives.
struct ApprovalDecision {
  bool allow = false;
  std::optional<Grant> grant;  // the grant that allowed (a snapshot), if any
  std::string reason;          // one line
  // "grant" (an existing grant), "policy" (a standing answer), "socket", "terminal",
  // "webhook" (the channel that answered), "timeout", "broker" (refused before asking).
  std::string channel;
};

// A way to ask a human or a program. Channels are called on the loop thread only.
class ApprovalChannel {
 public:
  using AnswerFn = std::function<void(ChannelAnswer)>;
  virtual ~ApprovalChannel() = default;
  virtual std::string_view name() const = 0;  // "terminal", "webhook"
  // Starts asking. `answer` may be called at most once, on the loop thread, at any later time
  // (calls after the request was decided elsewhere are ignored).
  virtual void Ask(const ApprovalRequest& request, std::chrono::milliseconds timeout,
                   AnswerFn answer) = 0;
  // The request was decided elsewhere or timed out: stop asking (idempotent, unknown ids ok).
  virtual void Cancel(uint64_t request_id) = 0;
};

struct BrokerOptions {
  policy::ApprovalsPolicy policy;  // auto_deny, auto_allow_once, timeout_ms
  std::string home;                // expands "~" in path patterns
  // The broker's clock for grant expiry (tests inject one); steady_clock::now by default.
  std::function<std::chrono::steady_clock::time_point()> now;
  size_t max_pending = 64;   // more open questions are denied at once (the sandbox can flood)
  size_t max_grants = 4096;  // grants kept, live or not; the oldest dead ones go first
};

class ApprovalBroker : public std::enable_shared_from_this<ApprovalBroker> {
 public:
  using Callback = std::function<void(const ApprovalDecision&)>;

  // Compiles the standing answers: patterns starting with '/' or '~' are path globs ('*', '?',
  // '[...]' within a component, a leading '.' matched literally; a "**" component matches any
  // number of components), anything else a host pattern (net::HostRule syntax). A bad pattern is
  // an error naming it and its origin.
  static Result<std::shared_ptr<ApprovalBroker>> Create(asio::io_context& io, BrokerOptions options,
                                                        EventSink* events);
  ~ApprovalBroker();
  ApprovalBroker(const ApprovalBroker&) = delete;
  ApprovalBroker& operator=(const ApprovalBroker&) = delete;

  // Before the first Ask.
  void AddChannel(std::unique_ptr<ApprovalChannel> channel);

  // Asks. Returns the request's id; `done` runs exactly once, on the loop thread (also when the
  // request is refused at once: a bad subject, too many pending questions, after Shutdown).
  uint64_t Ask(ApprovalRequest request, Callback done);

  // Whether a live grant covers the request; consumes a once-grant (emits grant.use). `subject`
  // is normalised like Ask's; a relative path or a bad host never matches. Thread-safe.
  std::optional<Grant> Match(RequestKind kind, std::string_view subject, FileAccess access,
                             uint16_t port);
  // The same for an HTTP request (RequestKind::kRequest) to host:port.
  std::optional<Grant> MatchRequest(std::string_view host, uint16_t port, std::string_view method,
                                    std::string_view path);

  // An answer for a pending request from a passive approver (the socket). kNotFound when it is
  // not pending (unknown, or already decided); kInvalidArgument for a bad prefix (the request
  // stays pending). On success the decision is returned (and Ask's callback is posted).
  Result<ApprovalDecision> Answer(uint64_t request_id, const ChannelAnswer& answer,
                                  std::string_view channel);

  // Creates a grant directly (tests; pre-approved grants). Emits grant.create.
  Result<Grant> CreateGrant(const GrantSpec& spec, std::string_view channel,
                            uint64_t request_id = 0);
  // Stops new uses at once; kNotFound for an unknown id, kFailedPrecondition when not live.
  Status Revoke(uint64_t grant_id, std::string_view by);

  std::vector<ApprovalRequest> Pending() const;  // oldest first
  std::vector<Grant> Grants();  // every grant kept, oldest first (marks expired ones)

  // The session ends: every pending request is denied ("session ending"), later Asks too.
  void Shutdown();

  const BrokerOptions& options() const { return options_; }
  asio::io_context& io() { return io_; }

 private:
  struct PathPattern {
    std::string text;  // as written
    std::vector<std::string> components;
  };
  struct Standing {
    std::vector<PathPattern> paths;
    std::vector<net::HostRule> hosts;
  };
  struct PendingAsk {
    ApprovalRequest request;
    Callback done;
    std::shared_ptr<asio::steady_timer> timer;
  };
  struct Emitted {
    std::string type;
    nlohmann::json data;
  };

  ApprovalBroker(asio::io_context& io, BrokerOptions options, EventSink* events);
  std::chrono::steady_clock::time_point Now() const;
  void StartAsk(ApprovalRequest request, Callback done);
  void Resolve(uint64_t id, ApprovalDecision decision);
  void Finish(Callback done, std::shared_ptr<asio::steady_timer> timer, uint64_t id,
              ApprovalDecision decision);
  bool IsPending(uint64_t id) const;
  // Callers hold mu_.
  std::optional<Grant> MatchLocked(RequestKind kind, const std::string& subject, FileAccess access,
                                   uint16_t port, std::vector<Emitted>* events,
                                   std::string_view method = {}, std::string_view path = {});
  void ExpireLocked(std::vector<Emitted>* events);
  Result<Grant> CreateGrantLocked(const GrantSpec& spec, std::string_view channel,
                                  uint64_t request_id, std::vector<Emitted>* events);
  std::optional<std::string> StandingMatch(const std::vector<PathPattern>& paths,
                                           const std::vector<net::HostRule>& hosts, bool deny_rules,
                                           const ApprovalRequest& r) const;
  void EmitAll(std::vector<Emitted> events);

  asio::io_context& io_;
  BrokerOptions options_;
  EventSink* events_;
  Standing deny_, allow_once_;
  std::vector<std::unique_ptr<ApprovalChannel>> channels_;

  mutable std::mutex mu_;
  uint64_t next_request_ = 1;
  uint64_t next_grant_ = 1;
  bool closed_ = false;
  std::map<uint64_t, PendingAsk> pending_;
  std::vector<Grant> grants_;
};

// Helpers shared with the channels and the CLI.
// Normalises a subject: a file path must be absolute ("/a//b/../c" -> "/a/c"), a host is
// parsed as a name or an address. Errors say why.
Result<std::string> NormalizeSubject(RequestKind kind, std::string_view subject);
// Whether a path glob (components, see Create) matches a normalised path.
bool MatchPathGlob(const std::vector<std::string>& pattern, std::string_view path);
// One line for a human: "read /home/u/data.csv" or "connect example.com:443".
std::string DescribeRequest(const ApprovalRequest& r);

}  // namespace ward::supervisor
