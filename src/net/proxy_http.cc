// Absolute-URI forwarding of plain HTTP: one request at a time per client connection (pipelined
// requests wait in the socket and are served in order), bodies re-framed in both directions,
// one upstream connection kept per client connection and reused only for the same host:port.
#include <sys/socket.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <cerrno>

#include "net/proxy_connection.h"
#include "net/text_util.h"

namespace ward::net::internal {

namespace {

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// Bodies at least this large move in the kernel (splice) once the buffered start is out.
constexpr uint64_t kSpliceMin = 64 << 10;

// Proxy-* fields are for us, never for the origin (credentials for a proxy above all).
void RemoveProxyFields(HttpHeaders& headers) {
  std::vector<std::string> names;
  for (const HttpHeader& h : headers.entries()) {
    if (StartsWithIgnoreCase(h.name, "Proxy-")) names.push_back(h.name);
  }
  for (const std::string& n : names) headers.Remove(n);
}

}  // namespace

asio::awaitable<void> Connection::CopyExact(Side& from, Side& to, uint64_t n,
                                            asio::error_code& ec) {
  ec = {};
  // The credential broker looks at request bodies (phantoms) and response bodies (secrets).
  const bool scan = &from == &client_ && body_scan_.has_value();
  const bool mask = &from == &upstream_ && masker_.has_value();
  bool pipe_refused = scan || mask;
  while (n > 0) {
    if (n >= kSpliceMin && from.leftover.empty() && !pipe_refused) {
      if (co_await SpliceCopy(from, to, n, ec)) co_return;  // all n moved, or ec (eof: truncated)
      pipe_refused = true;
    }
    size_t want = static_cast<size_t>(std::min<uint64_t>(n, core_->options.buffer_high_watermark));
    size_t got = co_await ReadSome(from, want, ec);
    if (ec) co_return;  // eof here is a truncated body
    std::string_view data(core_->scratch.data(), got);
    if (scan && (body_leak_ = body_scan_->Feed(data)) != nullptr) {
      ec = asio::error::access_denied;
      co_return;
    }
    if (mask) {
      co_await WriteDown(data, ec);
    } else {
      co_await WriteAll(to, data, ec);
    }
    if (ec) co_return;
    n -= got;
  }
  if (mask) co_await EndDown(ec);
}

asio::awaitable<void> Connection::CopyChunked(Side& from, Side& to, bool reencode,
                                              asio::error_code& ec) {
  ec = {};
  const bool scan = &from == &client_ && body_scan_.has_value();
  const bool mask = &from == &upstream_ && masker_.has_value();
  ChunkedDecoder decoder(core_->options.http_limits);
  std::string decoded;
  while (true) {
    size_t got = co_await ReadSome(from, core_->options.buffer_high_watermark, ec);
    if (ec) co_return;
    decoded.clear();
    HttpParse r = decoder.Feed(std::string_view(core_->scratch.data(), got), &decoded);
    if (r.error()) {
      ec = asio::error::invalid_argument;
      co_return;
    }
    if (r.done()) PutBack(from, core_->scratch.data() + r.consumed, got - r.consumed);
    if (scan && (body_leak_ = body_scan_->Feed(decoded)) != nullptr) {
      ec = asio::error::access_denied;
      co_return;
    }
    if (mask) {
      co_await WriteDown(decoded, ec);
      if (!ec && r.done()) co_await EndDown(ec);
      if (ec || r.done()) co_return;
      continue;
    }
    if (!decoded.empty()) {
      std::string out = reencode ? EncodeChunk(decoded) : std::move(decoded);
      co_await WriteAll(to, out, ec);
      if (ec) co_return;
    }
    if (r.done()) {
      if (reencode) co_await WriteAll(to, kLastChunk, ec);
      co_return;
    }
  }
}

asio::awaitable<void> Connection::CopyUntilEof(Side& from, Side& to, asio::error_code& ec) {
  const bool mask = &from == &upstream_ && masker_.has_value();
  bool pipe_refused = mask;
  while (true) {
    if (from.leftover.empty() && !pipe_refused) {
      if (co_await SpliceCopy(from, to, UINT64_MAX, ec)) {
        if (ec == asio::error::eof) ec = {};
        co_return;
      }
      pipe_refused = true;
    }
    size_t got = co_await ReadSome(from, core_->options.buffer_high_watermark, ec);
    if (ec == asio::error::eof) {
      ec = {};
      if (mask) co_await EndDown(ec);
      co_return;
    }
    if (ec) co_return;
    std::string_view data(core_->scratch.data(), got);
    if (mask) {
      co_await WriteDown(data, ec);
    } else {
      co_await WriteAll(to, data, ec);
    }
    if (ec) co_return;
  }
}

asio::awaitable<void> Connection::WriteDown(std::string_view data, asio::error_code& ec) {
  ec = {};
  if (!decoder_) {
    co_await SendDown(masker_->Process(data), ec);
    co_return;
  }
  decoder_->Push(data);
  while (true) {
    std::string plain;
    Status st = decoder_->Pull(&plain, core_->options.buffer_high_watermark);
    if (!st.ok()) {
      down_error_ = std::move(st);
      ec = asio::error::invalid_argument;
      co_return;
    }
    if (plain.empty()) co_return;
    co_await SendDown(masker_->Process(plain), ec);
    if (ec) co_return;
  }
}

asio::awaitable<void> Connection::EndDown(asio::error_code& ec) {
  ec = {};
  if (decoder_) {
    if (Status st = decoder_->Finish(); !st.ok()) {
      down_error_ = std::move(st);
      ec = asio::error::invalid_argument;
      co_return;
    }
  }
  co_await SendDown(masker_->Flush(), ec);
  if (!ec && chunk_down_) co_await WriteAll(client_, kLastChunk, ec);
}

asio::awaitable<void> Connection::SendDown(const std::string& data, asio::error_code& ec) {
  ec = {};
  if (data.empty()) co_return;
  if (chunk_down_) {
    co_await WriteAll(client_, EncodeChunk(data), ec);
  } else {
    co_await WriteAll(client_, data, ec);
  }
}

Status Connection::PrepareDown(const HttpRequestHead& head, HttpResponseHead& rh) {
  decoder_.reset();
  down_error_ = Ok();
  chunk_down_ = false;
  if (!masker_) return Ok();
  const std::vector<std::string_view> codings = rh.headers.GetAll("Content-Encoding");
  if (!codings.empty()) {
    auto decoder = ContentDecoder::ForFields(codings, core_->options.decode_limits);
    if (!decoder.ok()) {
      // Nothing to scan in a response without a body; any other cannot be passed on unscanned.
      if (rh.body.kind != BodyKind::kNone) return decoder.status();
    } else if (*decoder) {
      // The client gets the decoded body, whose length is known only at its end.
      rh.headers.Remove("Content-Encoding");
      rh.content_length.reset();
      if (rh.body.kind == BodyKind::kContentLength) rh.body = {BodyKind::kChunked, 0};
      if (rh.body.kind != BodyKind::kNone) decoder_ = std::move(decoder).value();
    }
  }
  chunk_down_ = rh.body.kind == BodyKind::kChunked && head.version_minor >= 1;
  return Ok();
}

asio::awaitable<void> Connection::WatchClient(std::shared_ptr<Connection> self,
                                              uint64_t generation) {
  asio::error_code ec;
  co_await client_.sock.async_wait(asio::ip::tcp::socket::wait_read, Await(ec));
  if (ec || closed_ || generation != watch_generation_) co_return;
  char c;
  ssize_t n = ::recv(client_.sock.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    CloseAll();  // the client left: nobody wants this response
  }
  (void)self;
}

asio::awaitable<bool> Connection::Forward(std::shared_ptr<Connection> self,
                                          const HttpRequestHead& head) {
  Target t;
  AbsoluteUri route_uri;
  if (intercept_ || plain_origin_) {
    // Inside an intercepted tunnel, or on a transparent connection to port 80: requests for
    // that host, in origin form.
    if (head.target.empty() || head.target[0] != '/') {
      core_->stats.errors++;
      co_await SendError(400, "ward: on this connection send requests as /path, not " +
                                  QuoteUntrusted(head.target) + "\n");
      co_return false;
    }
    t = intercept_ ? *intercept_ : *plain_origin_;
    AbsoluteUri uri;
    uri.scheme = intercept_ ? "https" : "http";
    uri.authority = HostPort{t.host, t.port};
    uri.explicit_port = t.port != (intercept_ ? 443 : 80);  // as the Host header names it
    uri.origin_form = head.target;
    co_return co_await ForwardTo(self, head, std::move(uri), std::move(t),
                                 intercept_ ? Mode::kIntercept : Mode::kPlain);
  }
  if (MatchRoute(head, &t, &route_uri)) {
    co_return co_await ForwardTo(self, head, std::move(route_uri), std::move(t), Mode::kRoute);
  }
  auto uri = ParseAbsoluteForm(head.target);
  if (!uri.ok()) {
    core_->stats.errors++;
    std::string why = !head.target.empty() && head.target[0] == '/'
                          ? "this is a proxy: send the absolute URI (http://host/path)"
                          : uri.status().message();
    co_await SendError(400, "ward: " + why + "\n");
    co_return false;
  }
  t.via = "http";
  t.host = uri->authority.host;
  t.port = uri->authority.port;
  co_return co_await ForwardTo(self, head, std::move(uri).value(), std::move(t), Mode::kPlain);
}

asio::awaitable<bool> Connection::ForwardTo(std::shared_ptr<Connection> self,
                                            const HttpRequestHead& head, AbsoluteUri uri, Target t,
                                            Mode mode) {
  if (!co_await CheckRequestHost(head, uri, t, mode)) co_return false;
  if (!co_await CheckRequestRules(self, head, uri, t)) co_return false;
  std::optional<UpstreamRequest> req = co_await PrepareUpstreamRequest(head, uri, t, mode);
  if (!req) co_return false;
  HttpResponseParser rp(head.method == "HEAD", core_->options.http_limits);
  if (!co_await Exchange(self, head, t, *req, rp)) co_return false;
  co_return co_await RelayResponse(head, t, rp.head());
}

asio::awaitable<bool> Connection::CheckRequestHost(const HttpRequestHead& head,
                                                   const AbsoluteUri& uri, const Target& t,
                                                   Mode mode) {
  Status hs = mode == Mode::kRoute ? Ok() : CheckHostHeader(head.headers, uri);
  if (hs.ok()) co_return true;
  if (hs.code() == Code::kPermissionDenied) {
    EmitDeny(t, "host_mismatch", "", "", hs.message(),
             {{"host_header", QuoteUntrusted(head.headers.Get("Host").value_or(""), 255)}});
    co_await SendRefusal(t);
  } else {
    core_->stats.errors++;
    co_await SendError(400, "ward: " + hs.message() + "\n");
  }
  co_return false;
}

asio::awaitable<std::optional<Connection::UpstreamRequest>> Connection::PrepareUpstreamRequest(
    const HttpRequestHead& head, AbsoluteUri& uri, const Target& t, Mode mode) {
  UpstreamRequest req;
  req.via_tls = mode != Mode::kPlain;
  req.key = (req.via_tls ? "tls:" : "") + t.Display();
  req.has_body = head.body.kind == BodyKind::kChunked ||
                 (head.body.kind == BodyKind::kContentLength && head.body.length > 0);
  HttpRequestHead up = head;
  req.expect_continue = up.headers.HasToken("Expect", "100-continue");
  // We answer 100 ourselves once the upstream is ready, so the origin must not wait for it.
  if (req.expect_continue) up.headers.Remove("Expect");
  RemoveProxyFields(up.headers);
  body_scan_.reset();
  masker_.reset();
  body_leak_ = nullptr;
  if (core_->broker != nullptr &&
      !co_await ApplyCredentials(t, mode, req, up.headers, uri.origin_form)) {
    co_return std::nullopt;
  }
  // A governed request with a body is the upstream connection's last: an origin that does not
  // read the body would take what is in it for the next request, which no rule has seen.
  req.wire = SerializeUpstreamRequest(up, uri, /*keep_alive=*/!(governed_body_ && req.has_body));
  co_return std::move(req);
}

asio::awaitable<bool> Connection::ApplyCredentials(const Target& t, Mode mode, UpstreamRequest& req,
                                                   HttpHeaders& headers, std::string& origin_form) {
  // Before anything leaves: phantoms go only to their own hosts, over the broker's TLS.
  if (mode == Mode::kPlain && CheckNameLeak(t, "url host")) {
    co_await SendError(403, LeakBody(*core_->broker->FindPhantomInName(t.host.ToString()), t));
    co_return false;
  }
  CredentialBroker::Verdict v =
      core_->broker->ApplyToRequest(t.host, t.port, req.via_tls, headers, origin_form);
  if (v.leaked != nullptr) {
    EmitLeak(*v.leaked, t, v.where);
    co_await SendError(403, LeakBody(*v.leaked, t));
    co_return false;
  }
  req.used = std::move(v.used);
  if (req.has_body) body_scan_.emplace(*core_->broker, t.host, t.port, req.via_tls);
  if (req.via_tls) {
    // What comes back may echo the secret: it is scanned, so ask for it unencoded (anything
    // encoded all the same is decoded before the scan, or refused).
    masker_.emplace(*core_->broker);
    headers.Set("Accept-Encoding", "identity");
  }
  co_return true;
}

asio::awaitable<bool> Connection::Exchange(std::shared_ptr<Connection> self,
                                           const HttpRequestHead& head, Target& t,
                                           const UpstreamRequest& req, HttpResponseParser& rp) {
  bool uses_emitted = false;
  asio::error_code ec;
  // A reused connection may have been closed by the origin just now; a request without a body
  // can then be sent again once on a fresh connection.
  for (int attempt = 0;; ++attempt) {
    const Link link = co_await ReachUpstream(t, req, /*may_reuse=*/attempt == 0);
    if (link == Link::kFailed) co_return false;
    SetIdle();
    if (!uses_emitted) {
      uses_emitted = true;
      for (const BrokeredCredential* c : req.used) EmitUse(*c, t);
    }
    if (!co_await SendRequest(head, t, req, ec)) co_return false;
    if (client_.leftover.empty()) {
      asio::co_spawn(core_->ctx, WatchClient(self, ++watch_generation_), asio::detached);
    }
    bool got_bytes = false;
    const bool valid = co_await ReadResponseHead(head, rp, got_bytes, ec);
    if (closed_) co_return false;
    if (ec && !got_bytes && link == Link::kReused && !req.has_body && attempt == 0) {
      ec = {};
      FinishUpstream();
      continue;
    }
    if (ec || !valid) {
      core_->stats.errors++;
      FinishUpstream();
      co_await SendError(502, "ward: " + req.key + ": " +
                                  (!valid ? "invalid response from upstream"
                                          : "upstream closed without a response") +
                                  "\n");
      co_return false;
    }
    co_return true;
  }
}

asio::awaitable<Connection::Link> Connection::ReachUpstream(Target& t, const UpstreamRequest& req,
                                                            bool may_reuse) {
  std::optional<EgressRules::Decision> reuse_decision;
  if (may_reuse && upstream_key_ == req.key && UpstreamReusable()) {
    reuse_decision = core_->rules.CheckHost(t.host, t.port);
    // A host without a rule is asked again (below, with the rest of the checks): an approval
    // may have been for one use only.
    if (!reuse_decision->allowed && ShouldAskHost(t, *reuse_decision)) reuse_decision.reset();
  }
  if (!reuse_decision) {
    const bool opened = co_await OpenUpstream(t, req);
    co_return opened ? Link::kFresh : Link::kFailed;
  }
  // Decided again: every request passes the rules, reused connection or not.
  const EgressRules::Decision& d = *reuse_decision;
  if (!d.allowed) {
    EmitDeny(t, d.rule.empty() ? "no_rule" : "deny_rule", d.rule,
             d.rule.empty() ? "" : d.origin.ToString(), d.reason, nlohmann::json::object(),
             d.allow_with);
    co_await SendRefusal(t);
    co_return Link::kFailed;
  }
  core_->stats.allowed++;
  co_return Link::kReused;
}

asio::awaitable<bool> Connection::OpenUpstream(Target& t, const UpstreamRequest& req) {
  FinishUpstream();
  std::string detail;
  Fail f = co_await Authorize(t, &detail);
  if (f == Fail::kNone) f = co_await ConnectUpstream(t, &detail);
  if (f != Fail::kNone) {
    co_await SendFailure(f, t, detail);
    co_return false;
  }
  if (req.via_tls && !co_await StartUpstreamTls(t)) {
    if (closed_) co_return false;
    co_await SendError(502, "ward: " + t.Display() + ": " + tls_error_ + "\n");
    co_return false;
  }
  upstream_key_ = req.key;
  co_return true;
}

asio::awaitable<bool> Connection::SendRequest(const HttpRequestHead& head, const Target& t,
                                              const UpstreamRequest& req, asio::error_code& ec) {
  co_await WriteAll(upstream_, req.wire, ec);
  if (ec || !req.has_body) co_return true;
  co_await SendRequestBody(head, req, ec);
  if (ec && body_leak_ != nullptr) {
    // A phantom in the body: the upstream gets a truncated request, the client a 403.
    const BrokeredCredential* leaked = body_leak_;
    FinishUpstream();
    EmitLeak(*leaked, t, "body");
    co_await SendError(403, LeakBody(*leaked, t));
    co_return false;
  }
  if (ec) {
    // A client that breaks off its body, or sends a malformed one, ends its connection.
    core_->stats.errors++;
    FinishUpstream();
    CloseAll();
    co_return false;
  }
  co_return true;
}

asio::awaitable<void> Connection::SendRequestBody(const HttpRequestHead& head,
                                                  const UpstreamRequest& req,
                                                  asio::error_code& ec) {
  if (req.expect_continue && head.version_minor >= 1) co_await WriteAll(client_, kContinue, ec);
  if (ec) co_return;
  if (head.body.kind == BodyKind::kChunked) {
    co_await CopyChunked(client_, upstream_, /*reencode=*/true, ec);
  } else {
    co_await CopyExact(client_, upstream_, head.body.length, ec);
  }
}

// The response head, after any interim 1xx responses (passed on to HTTP/1.1 clients).
asio::awaitable<bool> Connection::ReadResponseHead(const HttpRequestHead& head,
                                                   HttpResponseParser& rp, bool& got_bytes,
                                                   asio::error_code& ec) {
  rp.Reset(head.method == "HEAD");
  while (!ec) {
    size_t n = co_await ReadSome(upstream_, core_->scratch.size(), ec);
    if (ec) break;
    got_bytes = true;
    HttpParse r = rp.Feed(std::string_view(core_->scratch.data(), n));
    if (r.error()) co_return false;
    if (!r.done()) continue;
    PutBack(upstream_, core_->scratch.data() + r.consumed, n - r.consumed);
    int status = rp.head().status;
    if (status >= 200) break;
    if (status == 101) co_return false;  // we never ask for an upgrade
    if (head.version_minor >= 1) {
      co_await WriteAll(client_, MaskForClient(SerializeClientResponse(rp.head(), 1, true)), ec);
    }
    rp.Reset(head.method == "HEAD");
  }
  co_return true;
}

asio::awaitable<bool> Connection::RelayResponse(const HttpRequestHead& head, const Target& t,
                                                const HttpResponseHead& rh) {
  HttpResponseHead shown = rh;  // what the client is told: the decoded body's framing
  if (Status st = PrepareDown(head, shown); !st.ok()) {
    // An encoding the broker cannot read would carry whatever it hides past the masker.
    core_->stats.errors++;
    FinishUpstream();
    EmitResponseRefused(t, "content_coding", st.message());
    co_await SendError(502, "ward: refused: the response from " + t.Display() +
                                " cannot be checked for the credential's secret: " + st.message() +
                                "\n");
    co_return false;
  }
  const int minor = head.version_minor;
  const bool client_keep = head.keep_alive && shown.body.kind != BodyKind::kUntilClose &&
                           !(shown.body.kind == BodyKind::kChunked && minor == 0);
  asio::error_code ec;
  co_await WriteAll(client_, MaskForClient(SerializeClientResponse(shown, minor, head.keep_alive)),
                    ec);
  if (!ec) co_await CopyResponseBody(rh, minor, ec);
  upstream_requests_++;
  ++watch_generation_;
  if (ec && !down_error_.ok()) {
    // A body that cannot be decoded (corrupt, or a bomb): what was scanned is out, the rest is
    // withheld, and the client sees a truncated response.
    EmitResponseRefused(
        t, down_error_.code() == Code::kResourceExhausted ? "decode_limit" : "decode_error",
        down_error_.message());
  }
  if (ec) {
    // Part of the response is out: all we can do is close, so the client sees it truncated.
    core_->stats.errors++;
    FinishUpstream();
    CloseAll();
    co_return false;
  }
  if (!rh.keep_alive || rh.body.kind == BodyKind::kUntilClose || !upstream_.leftover.empty()) {
    FinishUpstream();
  }
  if (!client_keep) {
    co_await LingerClose();
    co_return false;
  }
  co_return true;
}

asio::awaitable<void> Connection::CopyResponseBody(const HttpResponseHead& rh, int minor,
                                                   asio::error_code& ec) {
  switch (rh.body.kind) {
    case BodyKind::kNone:
      break;
    case BodyKind::kContentLength:
      co_await CopyExact(upstream_, client_, rh.body.length, ec);
      break;
    case BodyKind::kChunked:
      co_await CopyChunked(upstream_, client_, /*reencode=*/minor >= 1, ec);
      break;
    case BodyKind::kUntilClose:
      co_await CopyUntilEof(upstream_, client_, ec);
      break;
  }
}

std::string Connection::MaskForClient(std::string head) const {
  return masker_ ? core_->broker->MaskSecrets(head) : std::move(head);
}

}  // namespace ward::net::internal
