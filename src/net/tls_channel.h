// One TLS connection as a state machine over memory buffers: ciphertext is fed in and taken out
// by the caller, plaintext is read and written through it. No sockets, no blocking, no threads:
// the proxy's connection coroutines move the bytes (so TLS shares their deadlines, backpressure
// and leftover buffers), and tests can connect two channels in memory.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "net/tls_util.h"

namespace ward::net {

class TlsChannel {
 public:
  // A client for `host` (SNI and certificate name check; an IP literal is checked as an
  // address and sent without SNI) with the verification settings of `ctx`.
  static Result<std::unique_ptr<TlsChannel>> Client(SSL_CTX* ctx, const std::string& host);
  static Result<std::unique_ptr<TlsChannel>> Server(SSL_CTX* ctx);
  ~TlsChannel();
  TlsChannel(const TlsChannel&) = delete;
  TlsChannel& operator=(const TlsChannel&) = delete;

  enum class Io {
    kOk,        // progress: the handshake is complete / n plaintext bytes were read
    kWantRead,  // more ciphertext is needed (send what TakeOutput() has first)
    kClosed,    // the peer sent close_notify
    kError,     // fatal; error() says why
  };

  // Ciphertext received from the peer.
  void Feed(std::string_view ciphertext);
  // Ciphertext to send to the peer, drained. Check after every call below.
  std::string TakeOutput();
  bool HasOutput() const;

  Io Handshake();
  bool handshake_done() const;
  // Up to cap plaintext bytes into buf; *n is set on kOk.
  Io Read(char* buf, size_t cap, size_t* n);
  // All of data (the memory buffer takes everything), or kError.
  Io Write(std::string_view data);
  // Queues close_notify.
  void Shutdown();

  // One line: why the last kError happened (certificate verification result included).
  const std::string& error() const { return error_; }
  // The negotiated ALPN protocol, "" when none.
  std::string alpn() const;
  // Ciphertext fed and not yet consumed by the engine.
  size_t buffered_input() const;

 private:
  TlsChannel() = default;
  Io Fail(int ret, const char* op);

  SslPtr ssl_;
  BIO* in_ = nullptr;   // owned by ssl_
  BIO* out_ = nullptr;  // owned by ssl_
  std::string error_;
};

}  // namespace ward::net
