// The webhook approver: each question is POSTed as JSON to `https://...` (certificate verified
// against the host's trust store plus optional CA files) or to a local unix socket
// (`unix:/path/to/sock`, HTTP over it), signed with HMAC-SHA256 over "<timestamp>.<body>". The
// reply must be signed the same way, be recent, echo the request's id and nonce, and carry a
// decision. Anything else — a bad or missing signature, a stale timestamp, a non-2xx status,
// malformed JSON, a connection or TLS error, the timeout — is a deny. Contract and an example:
// docs/approvals.md.
#pragma once

#include <asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "supervisor/approvals/approval_broker.h"

namespace asio::ssl {
class context;
}

namespace ward::supervisor {

inline constexpr std::string_view kWebhookTimestampHeader = "X-Ward-Timestamp";
inline constexpr std::string_view kWebhookSignatureHeader = "X-Ward-Signature";
inline constexpr size_t kMinWebhookSecretBytes = 16;

struct WebhookUrl {
  bool is_unix = false;
  std::string socket_path;  // unix
  std::string host;         // https: a name or an address (IPv6 without brackets)
  uint16_t port = 443;
  std::string target = "/";  // path and query
  std::string host_header;   // "host[:port]"
};
// "https://host[:port][/path][?query]" or "unix:/absolute/path". Plain http is refused (the
// question names files and hosts; it should not cross a network in clear text).
Result<WebhookUrl> ParseWebhookUrl(std::string_view url);

// "sha256=" + lowercase hex HMAC-SHA256(secret, timestamp + "." + body).
std::string WebhookSignature(std::string_view secret, std::string_view timestamp,
                             std::string_view body);
// Constant-time comparison with a received header value.
bool CheckWebhookSignature(std::string_view secret, std::string_view timestamp,
                           std::string_view body, std::string_view header_value);
// The secret from "env:NAME" or "file:PATH" (a regular file of ours that no one else can read;
// one trailing newline is dropped). At least kMinWebhookSecretBytes bytes.
Result<std::string> LoadWebhookSecret(std::string_view source);
// A verified reply body -> an answer. `id` and `nonce` must be echoed.
Result<ChannelAnswer> ParseWebhookReply(const nlohmann::json& body, uint64_t id,
                                        std::string_view nonce);

struct WebhookOptions {
  std::string url;
  std::string secret;                        // the HMAC key
  std::vector<std::string> ca_files;         // extra trusted CA certificates (PEM), https only
  bool system_trust = true;                  // the host's trust store (tests turn it off)
  std::chrono::milliseconds timeout{30000};  // per question; the broker's timeout applies too
  std::chrono::seconds max_skew{300};        // a reply's timestamp must be this close to our clock
  std::string session;                       // sent with every question
  size_t max_reply_bytes = 64 * 1024;
};

class WebhookChannel final : public ApprovalChannel {
 public:
  static Result<std::unique_ptr<WebhookChannel>> Create(asio::io_context& io,
                                                        WebhookOptions options);
  ~WebhookChannel() override;

  std::string_view name() const override { return "webhook"; }
  void Ask(const ApprovalRequest& request, std::chrono::milliseconds timeout,
           AnswerFn answer) override;
  void Cancel(uint64_t request_id) override;

  size_t in_flight() const { return calls_.size(); }

  struct Call;  // one question in flight (internal)

 private:
  WebhookChannel(asio::io_context& io, WebhookOptions options, WebhookUrl url);
  void Done(uint64_t id);

  asio::io_context& io_;
  WebhookOptions options_;
  WebhookUrl url_;
  std::shared_ptr<asio::ssl::context> tls_;
  std::map<uint64_t, std::shared_ptr<Call>> calls_;
  std::shared_ptr<bool> alive_;
};

}  // namespace ward::supervisor
