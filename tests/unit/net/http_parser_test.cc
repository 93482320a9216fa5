#include "net/http_parser.h"

#include <gtest/gtest.h>

#include <string>

#include "net/text_util.h"

namespace ward::net {
namespace {

using namespace std::string_literals;

// Feeds `text` in pieces of `step` bytes; returns the final result and the total consumed.
HttpParse FeedRequest(HttpRequestParser& p, std::string_view text, size_t step,
                      size_t* total = nullptr) {
  HttpParse r;
  size_t sum = 0;
  for (size_t i = 0; i < text.size(); i += step) {
    r = p.Feed(text.substr(i, step));
    sum += r.consumed;
    if (!r.need_more()) break;
  }
  if (total) *total = sum;
  return r;
}

HttpParse ParseRequest(std::string_view text, HttpRequestHead* head = nullptr) {
  HttpRequestParser p;
  HttpParse r = p.Feed(text);
  if (head) *head = p.head();
  return r;
}

TEST(HttpRequestParserTest, ParsesAbsoluteFormIncrementally) {
  const std::string req =
      "GET http://Example.com:8080/a/b?x=1 HTTP/1.1\r\n"
      "Host: example.com:8080\r\n"
      "User-Agent: test\r\n"
      "Accept: */*\r\n"
      "X-Dup: one\r\n"
      "x-dup: two\r\n"
      "\r\n"
      "NEXT";
  for (size_t step : {size_t{1}, size_t{2}, size_t{7}, req.size()}) {
    HttpRequestParser p;
    size_t total = 0;
    HttpParse r = FeedRequest(p, req, step, &total);
    ASSERT_TRUE(r.done()) << step << ": " << r.reason;
    EXPECT_EQ(total, req.size() - 4) << step;  // "NEXT" is not part of the head
    const HttpRequestHead& h = p.head();
    EXPECT_EQ(h.method, "GET");
    EXPECT_EQ(h.target, "http://Example.com:8080/a/b?x=1");
    EXPECT_EQ(h.version_minor, 1);
    EXPECT_EQ(h.headers.size(), 5u);
    EXPECT_EQ(h.headers.Get("user-agent").value_or(""), "test");
    EXPECT_EQ(h.headers.GetAll("X-DUP").size(), 2u);
    EXPECT_EQ(h.headers.Count("x-dup"), 2u);
    EXPECT_EQ(h.body.kind, BodyKind::kNone);
    EXPECT_TRUE(h.keep_alive);
  }
}

TEST(HttpRequestParserTest, FeedAfterDoneRepeatsAndResetParsesPipelined) {
  const std::string two =
      "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n"
      "GET http://b.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n";
  HttpRequestParser p;
  HttpParse r = p.Feed(two);
  ASSERT_TRUE(r.done());
  EXPECT_EQ(p.head().target, "http://a.example/");
  HttpParse again = p.Feed("junk");
  EXPECT_TRUE(again.done());
  EXPECT_EQ(again.consumed, 0u);
  p.Reset();
  HttpParse r2 = p.Feed(std::string_view(two).substr(r.consumed));
  ASSERT_TRUE(r2.done());
  EXPECT_EQ(p.head().target, "http://b.example/");
  EXPECT_EQ(r.consumed + r2.consumed, two.size());
}

TEST(HttpRequestParserTest, ConnectAndVersions) {
  HttpRequestHead h;
  ASSERT_TRUE(
      ParseRequest("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", &h).done());
  EXPECT_EQ(h.method, "CONNECT");
  // CONNECT without Host is tolerated; HTTP/1.0 without Host too.
  EXPECT_TRUE(ParseRequest("CONNECT example.com:443 HTTP/1.1\r\n\r\n").done());
  ASSERT_TRUE(ParseRequest("GET http://x.example/ HTTP/1.0\r\n\r\n", &h).done());
  EXPECT_EQ(h.version_minor, 0);
  EXPECT_FALSE(h.keep_alive);
  ASSERT_TRUE(
      ParseRequest("GET http://x.example/ HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &h).done());
  EXPECT_TRUE(h.keep_alive);
  ASSERT_TRUE(
      ParseRequest("GET / HTTP/1.1\r\nHost: x\r\nConnection: foo, close\r\n\r\n", &h).done());
  EXPECT_FALSE(h.keep_alive);
  // Leading empty lines are tolerated.
  EXPECT_TRUE(ParseRequest("\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n").done());
  EXPECT_TRUE(ParseRequest("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n").done());
}

struct BadCase {
  std::string text;
  int status;
};

TEST(HttpRequestParserTest, RejectsMalformedHeads) {
  const BadCase cases[] = {
      {"GET / HTTP/1.1\nHost: x\r\n\r\n", 400},  // bare LF
      {"GET / HTTP/1.1\r\nHost: x\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\r\n\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\rY: z\r\n\r\n", 400},  // bare CR in a value
      {"GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400},       // double space
      {"GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400},
      {"GET /\r\nHost: x\r\n\r\n", 400},  // HTTP/0.9
      {"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
      {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
      {"GET / HTTP/1.1x\r\nHost: x\r\n\r\n", 400},
      {"GET / http/1.1\r\nHost: x\r\n\r\n", 400},
      {"G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400},  // method not a token
      {"GET /a\x01 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"GET /\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n", 400},     // raw non-ASCII target
      {"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400},            // space before colon
      {"GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400},  // obs-fold
      {"GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\r\n: empty\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\r\nX: a\0b\r\n\r\n"s, 400},
      {"GET / HTTP/1.1\r\nHost: x\r\nX: a\x7f\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\n\r\n", 400},                        // missing Host
      {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},  // two Hosts
      {"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 400},
      {"GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
  };
  for (const auto& c : cases) {
    HttpParse r = ParseRequest(c.text);
    EXPECT_TRUE(r.error()) << c.text;
    EXPECT_EQ(r.http_status, c.status) << c.text << " -> " << r.reason;
    EXPECT_FALSE(r.reason.empty());
  }
}

TEST(HttpRequestParserTest, SmugglingDefences) {
  const BadCase cases[] = {
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
       400},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
       400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 6\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x10\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5 5\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
       "chunked\r\n\r\n",
       400},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, \r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n", 400},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"CONNECT a.example:443 HTTP/1.1\r\nContent-Length: 3\r\n\r\n", 400},
      {"CONNECT a.example:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
  };
  for (const auto& c : cases) {
    HttpParse r = ParseRequest(c.text);
    EXPECT_TRUE(r.error()) << c.text;
    EXPECT_EQ(r.http_status, c.status) << c.text << " -> " << r.reason;
  }
  // What is accepted, and how it is framed.
  HttpRequestHead h;
  ASSERT_TRUE(
      ParseRequest("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
                   &h)
          .done());
  EXPECT_EQ(h.body, (BodyFraming{BodyKind::kContentLength, 5}));
  ASSERT_TRUE(
      ParseRequest("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 7, 7\r\n\r\n", &h).done());
  EXPECT_EQ(h.body, (BodyFraming{BodyKind::kContentLength, 7}));
  ASSERT_TRUE(ParseRequest("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", &h).done());
  EXPECT_EQ(h.body, (BodyFraming{BodyKind::kContentLength, 0}));
  ASSERT_TRUE(
      ParseRequest("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n", &h).done());
  EXPECT_EQ(h.body.kind, BodyKind::kChunked);
  ASSERT_TRUE(ParseRequest("CONNECT a.example:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n").done());
}

TEST(HttpRequestParserTest, Limits) {
  // Request line: 8 KiB is fine, one more byte is 414, detected without waiting for CRLF.
  std::string ok_target = "/" + std::string(8 * 1024 - 16, 'a');
  std::string line = "GET " + ok_target + " HTTP/1.1";
  ASSERT_EQ(line.size(), 8 * 1024 - 16 + 1 + 13u);
  EXPECT_TRUE(ParseRequest(line + "\r\nHost: x\r\n\r\n").done());
  {
    HttpRequestParser p;
    std::string huge = "GET /" + std::string(20000, 'a');
    HttpParse r = p.Feed(huge);
    EXPECT_TRUE(r.error());
    EXPECT_EQ(r.http_status, 414);
  }
  // Headers: more than 100 fields is 431.
  std::string many = "GET / HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 99; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_TRUE(ParseRequest(many + "\r\n").done());
  HttpParse r = ParseRequest(many + "X-last: v\r\n\r\n");
  EXPECT_TRUE(r.error());
  EXPECT_EQ(r.http_status, 431);
  // Header bytes: more than 64 KiB is 431, even in one endless line.
  HttpRequestParser p;
  ASSERT_TRUE(p.Feed("GET / HTTP/1.1\r\nHost: x\r\nX: ").need_more());
  HttpParse big = p.Feed(std::string(70000, 'v'));
  EXPECT_TRUE(big.error());
  EXPECT_EQ(big.http_status, 431);
  // Custom limits.
  HttpRequestParser small(HttpLimits{16, 64, 2});
  EXPECT_EQ(small.Feed("GET /0123456789abcdef HTTP/1.1\r\n").http_status, 414);
}

TEST(HttpTargetTest, AuthorityForm) {
  auto a = ParseAuthorityForm("Example.COM:443");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host.name, "example.com");
  EXPECT_EQ(a->port, 443);
  auto v6 = ParseAuthorityForm("[2001:db8::1]:8443");
  ASSERT_TRUE(v6.ok());
  EXPECT_TRUE(v6->host.is_address());
  EXPECT_EQ(v6->port, 8443);
  auto disguised = ParseAuthorityForm("0x7f.1:22");
  ASSERT_TRUE(disguised.ok());
  EXPECT_EQ(disguised->host.address->ToString(), "127.0.0.1");
  for (const char* bad :
       {"example.com", "example.com:", "example.com:0", "example.com:65536", "example.com:https",
        ":443", "[::1]", "::1:443", "[::1]443", "user@example.com:443", "example.com:443/",
        "http://example.com:80", "ex ample.com:443", "[example.com]:443", "example.com:-1", ""}) {
    EXPECT_FALSE(ParseAuthorityForm(bad).ok()) << "accepted '" << bad << "'";
  }
}

TEST(HttpTargetTest, AbsoluteForm) {
  auto u = ParseAbsoluteForm("HTTP://Example.com/a/b?c=d");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ(u->authority.host.name, "example.com");
  EXPECT_EQ(u->authority.port, 80);
  EXPECT_FALSE(u->explicit_port);
  EXPECT_EQ(u->origin_form, "/a/b?c=d");
  auto p = ParseAbsoluteForm("http://example.com:8080");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->authority.port, 8080);
  EXPECT_TRUE(p->explicit_port);
  EXPECT_EQ(p->origin_form, "/");
  auto q = ParseAbsoluteForm("http://example.com?x");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->origin_form, "/?x");
  auto v6 = ParseAbsoluteForm("http://[::1]:3000/x");
  ASSERT_TRUE(v6.ok());
  EXPECT_TRUE(v6->authority.host.is_address());
  EXPECT_EQ(v6->authority.port, 3000);
  EXPECT_TRUE(v6->explicit_port);
  auto v6d = ParseAbsoluteForm("http://[::1]/x");
  ASSERT_TRUE(v6d.ok());
  EXPECT_FALSE(v6d->explicit_port);
  for (const char* bad :
       {"https://example.com/", "HTTPS://example.com/", "ftp://example.com/", "/relative",
        "example.com/", "http://", "http:///x", "http://user:pw@example.com/",
        "http://example.com@evil.com/", "http://example.com/#frag", "http://example.com:0/",
        "http://example.com:99999/", "http://example.com:/", "http://example.com:8o/",
        "http://exa%6dple.com/", "http://[::1/", "http://example.com\\@evil.com/",
        "http://127.0.0.1:80:80/"}) {
    EXPECT_FALSE(ParseAbsoluteForm(bad).ok()) << "accepted '" << bad << "'";
  }
}

TEST(HttpTargetTest, HostHeaderMustMatch) {
  auto uri = ParseAbsoluteForm("http://example.com/x");
  ASSERT_TRUE(uri.ok());
  auto check = [&](std::vector<std::string> hosts) {
    HttpHeaders h;
    for (auto& v : hosts) h.Add("Host", v);
    return CheckHostHeader(h, *uri);
  };
  EXPECT_TRUE(check({}).ok());
  EXPECT_TRUE(check({"example.com"}).ok());
  EXPECT_TRUE(check({"EXAMPLE.com."}).ok());
  EXPECT_TRUE(check({"example.com:80"}).ok());
  EXPECT_EQ(check({"evil.com"}).code(), Code::kPermissionDenied);
  EXPECT_EQ(check({"example.com:8080"}).code(), Code::kPermissionDenied);
  EXPECT_EQ(check({"www.example.com"}).code(), Code::kPermissionDenied);
  EXPECT_EQ(check({"example.com", "example.com"}).code(), Code::kInvalidArgument);
  EXPECT_EQ(check({"exa mple.com"}).code(), Code::kInvalidArgument);
  EXPECT_EQ(check({"example.com:x"}).code(), Code::kInvalidArgument);

  auto ip = ParseAbsoluteForm("http://127.0.0.1:3000/");
  ASSERT_TRUE(ip.ok());
  HttpHeaders h;
  h.Add("Host", "127.1:3000");  // the same address, spelled differently
  EXPECT_TRUE(CheckHostHeader(h, *ip).ok());
  h.Set("Host", "127.0.0.2:3000");
  EXPECT_EQ(CheckHostHeader(h, *ip).code(), Code::kPermissionDenied);
}

TEST(HttpHeadersTest, SetRemoveAndTokens) {
  HttpHeaders h;
  h.Add("A", "1");
  h.Add("b", "2");
  h.Add("a", "3");
  h.Set("A", "x");
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(h.entries()[0].value, "x");
  EXPECT_EQ(h.Remove("B"), 1u);
  EXPECT_EQ(h.Remove("missing"), 0u);
  h.Add("Connection", "keep-alive, Upgrade");
  EXPECT_TRUE(h.HasToken("connection", "upgrade"));
  EXPECT_FALSE(h.HasToken("connection", "close"));
  EXPECT_FALSE(h.Get("nope").has_value());
}

TEST(HttpHeadersTest, RemovesHopByHop) {
  HttpHeaders h;
  h.Add("Host", "x");
  h.Add("Connection", "X-Secret, close");
  h.Add("X-Secret", "1");
  h.Add("Keep-Alive", "timeout=5");
  h.Add("Proxy-Connection", "keep-alive");
  h.Add("Proxy-Authorization", "Basic abc");
  h.Add("TE", "trailers");
  h.Add("Trailer", "X");
  h.Add("Transfer-Encoding", "chunked");
  h.Add("Upgrade", "websocket");
  h.Add("Accept", "*/*");
  RemoveHopByHopHeaders(h);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h.entries()[0].name, "Host");
  EXPECT_EQ(h.entries()[1].name, "Accept");
}

TEST(HttpSerializeTest, UpstreamRequestIsOriginForm) {
  HttpRequestHead head;
  ASSERT_TRUE(ParseRequest("POST http://example.com:8080/p?q HTTP/1.1\r\n"
                           "Host: example.com:8080\r\n"
                           "Proxy-Authorization: Basic x\r\n"
                           "Connection: keep-alive, X-Hop\r\n"
                           "X-Hop: 1\r\n"
                           "Transfer-Encoding: chunked\r\n"
                           "Accept: */*\r\n\r\n",
                           &head)
                  .done());
  auto uri = ParseAbsoluteForm(head.target);
  ASSERT_TRUE(uri.ok());
  EXPECT_EQ(SerializeUpstreamRequest(head, *uri, true),
            "POST /p?q HTTP/1.1\r\n"
            "Host: example.com:8080\r\n"
            "Accept: */*\r\n"
            "Transfer-Encoding: chunked\r\n\r\n");
  ASSERT_TRUE(
      ParseRequest("GET http://Example.com/ HTTP/1.0\r\nContent-Length: 3\r\n\r\n", &head).done());
  uri = ParseAbsoluteForm(head.target);
  ASSERT_TRUE(uri.ok());
  EXPECT_EQ(SerializeUpstreamRequest(head, *uri, false),
            "GET / HTTP/1.1\r\n"
            "Host: example.com\r\n"
            "Content-Length: 3\r\n"
            "Connection: close\r\n\r\n");
}

// ----------------------------------------------------------------------------- responses

HttpParse ParseResponse(std::string_view text, bool head_request, HttpResponseHead* head) {
  HttpResponseParser p(head_request);
  HttpParse r = p.Feed(text);
  if (head) *head = p.head();
  return r;
}

TEST(HttpResponseParserTest, Framing) {
  struct Case {
    std::string text;
    bool head_request;
    BodyFraming body;
  } cases[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n", false, {BodyKind::kContentLength, 12}},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, {BodyKind::kChunked, 0}},
      {"HTTP/1.1 200 OK\r\n\r\n", false, {BodyKind::kUntilClose, 0}},
      {"HTTP/1.0 200 OK\r\n\r\n", false, {BodyKind::kUntilClose, 0}},
      {"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n", true, {BodyKind::kNone, 0}},
      {"HTTP/1.1 204 No Content\r\n\r\n", false, {BodyKind::kNone, 0}},
      {"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n", false, {BodyKind::kNone, 0}},
      {"HTTP/1.1 100 Continue\r\n\r\n", false, {BodyKind::kNone, 0}},
      {"HTTP/1.1 101 Switching Protocols\r\n\r\n", false, {BodyKind::kNone, 0}},
      {"HTTP/1.1 200\r\nContent-Length: 1\r\n\r\n", false, {BodyKind::kContentLength, 1}},
      {"HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n", false, {BodyKind::kContentLength, 0}},
  };
  for (const auto& c : cases) {
    HttpResponseHead h;
    HttpParse r = ParseResponse(c.text, c.head_request, &h);
    ASSERT_TRUE(r.done()) << c.text << " -> " << r.reason;
    EXPECT_EQ(r.consumed, c.text.size());
    EXPECT_EQ(h.body, c.body) << c.text;
  }
  HttpResponseHead h;
  ASSERT_TRUE(ParseResponse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true, &h).done());
  EXPECT_EQ(h.content_length, 5u);
  EXPECT_TRUE(h.keep_alive);
  ASSERT_TRUE(ParseResponse("HTTP/1.1 200 OK\r\n\r\n", false, &h).done());
  EXPECT_FALSE(h.keep_alive);
  ASSERT_TRUE(
      ParseResponse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n", false, &h)
          .done());
  EXPECT_FALSE(h.keep_alive);
  EXPECT_EQ(h.reason, "OK");
  EXPECT_EQ(h.status, 200);
}

TEST(HttpResponseParserTest, RejectsBadResponsesWith502) {
  for (const char* bad : {
           "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
           "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
           "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
           "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
           "HTTP/1.1 99 Odd\r\n\r\n",
           "HTTP/1.1 600 Odd\r\n\r\n",
           "HTTP/1.1 2000 OK\r\n\r\n",
           "HTTP/1.1 20x OK\r\n\r\n",
           "HTTP/2 200 OK\r\n\r\n",
           "HTTP/1.1  200 OK\r\n\r\n",
           "ICY 200 OK\r\n\r\n",
           "HTTP/1.1 200 O\x01K\r\n\r\n",
           "HTTP/1.1 200 OK\r\nX: y\r\n z\r\n\r\n",
           "HTTP/1.1 200 OK\nX: y\n\n",
       }) {
    HttpParse r = ParseResponse(bad, false, nullptr);
    EXPECT_TRUE(r.error()) << bad;
    EXPECT_EQ(r.http_status, 502) << bad;
  }
  HttpResponseParser p(false);
  HttpParse r = p.Feed("HTTP/1.1 200 OK\r\nX: " + std::string(70000, 'a'));
  EXPECT_TRUE(r.error());
  EXPECT_EQ(r.http_status, 502);
}

TEST(HttpResponseParserTest, InterimThenFinal) {
  std::string both =
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
  HttpResponseParser p(false);
  HttpParse r = p.Feed(both);
  ASSERT_TRUE(r.done());
  EXPECT_EQ(p.head().status, 100);
  p.Reset(false);
  HttpParse r2 = p.Feed(std::string_view(both).substr(r.consumed));
  ASSERT_TRUE(r2.done());
  EXPECT_EQ(p.head().status, 201);
  EXPECT_EQ(both.substr(r.consumed + r2.consumed), "ok");
}

TEST(HttpSerializeTest, ClientResponse) {
  HttpResponseHead h;
  ASSERT_TRUE(ParseResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nKeep-Alive: x\r\n"
                            "Content-Type: text/plain\r\n\r\n",
                            false, &h)
                  .done());
  EXPECT_EQ(SerializeClientResponse(h, 1, true),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(SerializeClientResponse(h, 0, true),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(ParseResponse("HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n", true, &h).done());
  EXPECT_EQ(SerializeClientResponse(h, 1, true), "HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n");
  ASSERT_TRUE(ParseResponse("HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n", false, &h).done());
  EXPECT_EQ(SerializeClientResponse(h, 0, true),
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\n");
  ASSERT_TRUE(ParseResponse("HTTP/1.1 200 OK\r\n\r\n", false, &h).done());
  EXPECT_EQ(SerializeClientResponse(h, 1, true), "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
}

// ----------------------------------------------------------------------------- chunked

TEST(ChunkedDecoderTest, DecodesIncrementally) {
  const std::string body =
      "5\r\nhello\r\n"
      "7;ext=1;q=\"x y\"\r\n, world\r\n"
      "A \t;e\r\n0123456789\r\n"
      "0\r\n"
      "X-Trailer: yes\r\n"
      "\r\n"
      "NEXT";
  for (size_t step : {size_t{1}, size_t{3}, size_t{11}, body.size()}) {
    ChunkedDecoder d;
    std::string out;
    size_t consumed = 0;
    HttpParse r;
    for (size_t i = 0; i < body.size(); i += step) {
      r = d.Feed(std::string_view(body).substr(i, step), &out);
      consumed += r.consumed;
      if (!r.need_more()) break;
    }
    ASSERT_TRUE(r.done()) << step << ": " << r.reason;
    EXPECT_EQ(out, "hello, world0123456789");
    EXPECT_EQ(consumed, body.size() - 4) << step;
    EXPECT_EQ(d.body_bytes(), 22u);
    EXPECT_EQ(d.trailers().Get("x-trailer").value_or(""), "yes");
  }
}

TEST(ChunkedDecoderTest, RejectsMalformedChunks) {
  for (const std::string bad : {
           "5\r\nhelloX\r\n",        // data not followed by CRLF
           "5\r\nhello\n0\r\n\r\n",  // bare LF after data
           "5\nhello\r\n",           // bare LF after size
           "\r\nhello\r\n",          // missing size
           "x\r\n",                  // not hex
           "-5\r\n",                 // sign
           "0x5\r\n",                // prefix
           "5 \r\nhello\r\n",        // whitespace without extension
           "5 5\r\nhello\r\n",       // junk after size
           "5;a\x01\r\nhello\r\n",   // control character in extension
           "1000000000000000\r\n",   // 16 hex digits
           "0\r\nBad Trailer\r\n\r\n",
           "0\r\n folded: x\r\n\r\n",
       }) {
    ChunkedDecoder d;
    std::string out;
    HttpParse r = d.Feed(bad, &out);
    EXPECT_TRUE(r.error()) << QuoteUntrusted(bad);
    EXPECT_EQ(r.http_status, 400);
    // Sticky: more input changes nothing.
    EXPECT_TRUE(d.Feed("0\r\n\r\n", &out).error());
  }
  // Unbounded size line and trailers are cut off.
  ChunkedDecoder d;
  std::string out;
  EXPECT_TRUE(d.Feed("5;" + std::string(5000, 'a'), &out).error());
  ChunkedDecoder t;
  ASSERT_TRUE(t.Feed("0\r\n", &out).need_more());
  HttpParse r;
  for (int i = 0; i < 200 && !r.error(); ++i)
    r = t.Feed("X-" + std::to_string(i) + ": v\r\n", &out);
  EXPECT_TRUE(r.error());
  // A huge but valid size streams without buffering.
  ChunkedDecoder big;
  std::string sink;
  HttpParse b = big.Feed("fffffffffffffff\r\n" + std::string(1000, 'z'), &sink);
  EXPECT_TRUE(b.need_more());
  EXPECT_EQ(sink.size(), 1000u);
}

TEST(ChunkedDecoderTest, EncodeRoundTrip) {
  std::string wire = EncodeChunk("hello") + EncodeChunk("") + EncodeChunk(std::string(300, 'x')) +
                     std::string(kLastChunk);
  EXPECT_EQ(wire.substr(0, 10), "5\r\nhello\r\n");
  EXPECT_NE(wire.find("12c\r\n"), std::string::npos);
  ChunkedDecoder d;
  std::string out;
  HttpParse r = d.Feed(wire, &out);
  ASSERT_TRUE(r.done());
  EXPECT_EQ(r.consumed, wire.size());
  EXPECT_EQ(out, "hello" + std::string(300, 'x'));
}

}  // namespace
}  // namespace ward::net
