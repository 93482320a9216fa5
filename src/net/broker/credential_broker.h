// The credential broker (inside the egress proxy, in the supervisor). The sandbox holds only
// phantom values; the broker puts the real secret on requests to the credential's own hosts,
// and only over TLS it verified itself:
//  - reverse-proxy routes: plain HTTP to the proxy, `http://127.0.0.1:PORT/ROUTE/...`, goes over
//    TLS to the credential's first host;
//  - interception: a CONNECT (or SOCKS) tunnel to one of a credential's hosts is terminated with
//    a leaf certificate from the session CA, its HTTP/1.1 requests are rewritten and sent on
//    over verified TLS.
// A phantom on its way anywhere else (another host, cleartext HTTP, a CONNECT or DNS name) is
// a leak attempt: the request is refused. Real secrets never flow back: responses from a
// credential's host have the secret masked, in its common encodings too.
//
// The pure parts (rewriting, scanning, masking) are here; the proxy does the I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/events.h"
#include "common/status.h"
#include "net/broker/masker.h"
#include "net/egress_rules.h"
#include "net/http_parser.h"
#include "net/tls_authority.h"
#include "net/tls_upstream.h"
#include "policy/policy.h"

namespace ward::net {

// What the broker is built from: one enabled credential with its secret already fetched.
struct CredentialSpec {
  std::string name;
  std::string secret;
  std::string phantom;                  // "" = make one (MakePhantom)
  std::vector<policy::HostRule> hosts;  // names (exact or "*."), or single addresses; ports
  policy::CredentialInject inject;
  std::string route;  // "" = none; the first host is then an exact name or address
};

struct BrokeredCredential {
  std::string name;
  std::string secret;
  std::string phantom;
  std::string phantom_key;  // the random part, lowercase: matched loosely in host names
  std::vector<HostRule> hosts;
  policy::CredentialInject inject;
  std::string route;
  Host route_host;  // the first host, for the route
  uint16_t route_port = 443;

  bool MatchesHost(const Host& host, uint16_t port) const;
};

struct BrokerOptions {
  UpstreamTlsOptions upstream;
  bool intercept = true;  // false: CONNECT to a credential's host stays an opaque tunnel
  // Hosts whose tunnels are intercepted without a secret, so that their requests can be
  // checked one by one (method and path rules, net/request_rules.h): names or single
  // addresses, which the session CA's name constraints then include.
  std::vector<policy::HostRule> inspect_hosts;
};

class CredentialBroker {
 public:
  static Result<std::unique_ptr<CredentialBroker>> Create(std::vector<CredentialSpec> specs,
                                                          BrokerOptions options = {});
  ~CredentialBroker();
  CredentialBroker(const CredentialBroker&) = delete;
  CredentialBroker& operator=(const CredentialBroker&) = delete;

  const std::vector<BrokeredCredential>& credentials() const { return creds_; }
  const BrokeredCredential* FindRoute(std::string_view route) const;
  // Whether a tunnel to host:port is terminated (and its requests rewritten, for a
  // credential's host).
  bool Intercepts(const Host& host, uint16_t port) const;

  // A phantom inside a destination name (CONNECT or SOCKS target, DNS query name): compared
  // without case and without dots, since a name can be cut into labels anywhere.
  const BrokeredCredential* FindPhantomInName(std::string_view name) const;

  struct Verdict {
    const BrokeredCredential* leaked = nullptr;   // set: refuse the request (403)
    std::string where;                            // "url", "header NAME", "basic auth", ...
    std::vector<const BrokeredCredential*> used;  // real secrets now on the request
  };
  // For one request about to go to host:port; `tls` says whether the broker's own verified
  // TLS carries it (routes, interception). Phantoms of credentials for that host are replaced
  // by their secrets (in the target and in every header, Basic credentials decoded), and a
  // credential's header, Basic auth or query parameter is added when the client sent none.
  // Any other phantom - or any phantom over cleartext - makes the verdict a leak, and then
  // nothing is changed.
  Verdict ApplyToRequest(const Host& host, uint16_t port, bool tls, HttpHeaders& headers,
                         std::string& origin_form) const;

  // Request bodies are scanned for phantoms as they stream (a match across two pieces is
  // found). Only a leak is reported: a phantom in a body sent to its own host passes as is.
  class BodyScanner {
   public:
    BodyScanner(const CredentialBroker& broker, const Host& host, uint16_t port, bool tls);
    // The first credential whose phantom is in the body and may not go there; null if none.
    const BrokeredCredential* Feed(std::string_view data);

   private:
    std::vector<const BrokeredCredential*> watch_;
    std::string carry_;
    size_t keep_ = 0;
  };

  // Real secrets in responses from a credential's host (an echo endpoint, an error message
  // quoting the request) are replaced by the phantom, in every form the broker knows
  // (net/broker/masker.h: literal, base64 at any alignment, hex, percent and JSON escapes),
  // or by 'x's when the lengths differ, so that byte counts hold. Streaming: only a tail that
  // could start a secret's form is held back. Linear in the input.
  class Masker {
   public:
    explicit Masker(const CredentialBroker& broker) : masker_(*broker.mask_table_) {}
    std::string Process(std::string_view data) { return masker_.Process(data); }
    std::string Flush() { return masker_.Flush(); }  // at the end of the body

   private:
    SecretMasker masker_;
  };
  // Masks a whole string (response heads).
  std::string MaskSecrets(std::string_view s) const;
  const SecretMaskTable& mask_table() const { return *mask_table_; }

  SSL_CTX* upstream_context() const { return upstream_ctx_.get(); }
  // The server context for an intercepted host (a cached leaf signed by the session CA).
  Result<std::shared_ptr<SSL_CTX>> InterceptContext(const Host& host) const;
  const std::string& ca_pem() const;
  TlsAuthority* authority() const { return authority_.get(); }

  // For DnsStubOptions::name_check: refuses (NXDOMAIN) a query name that carries a phantom and
  // records credential.leak_attempt {where: "dns"}. `events` must outlive the returned function.
  std::function<bool(std::string_view)> DnsNameCheck(EventSink* events) const;

 private:
  CredentialBroker() = default;

  std::vector<BrokeredCredential> creds_;
  std::vector<HostRule> inspect_;  // BrokerOptions::inspect_hosts
  BrokerOptions options_;
  SslCtxPtr upstream_ctx_;
  std::unique_ptr<TlsAuthority> authority_;
  std::unique_ptr<SecretMaskTable> mask_table_;
};

// Helpers exposed for tests.
std::string Base64Encode(std::string_view data);
std::optional<std::string> Base64Decode(std::string_view text);
std::string PercentDecode(std::string_view s);
std::string PercentEncodeComponent(std::string_view s);

}  // namespace ward::net
