// Transparent capture in the sandbox's network namespace: TCP to the synthetic ranges that the
// DNS stub hands out (net/synthetic_names.h) reaches one listener the supervisor serves.
//
// Two pieces, both made by the namespace's helper before the sandbox joins it, and out of the
// sandbox's reach afterwards (changing either needs CAP_NET_ADMIN, which nothing inside has):
//  - the ranges are local: routes in the local table through `lo`, so a connect to them is
//    routed at all (the namespace has no other route) and UDP to them finds no socket and is
//    refused at once (QUIC falls back to TCP instead of waiting);
//  - an nftables nat rule at the output hook redirects their TCP to 127.0.0.1 / [::1] at the
//    capture port, where the listener reads the original destination (SO_ORIGINAL_DST); every
//    other packet is left untracked (a nat chain turns connection tracking on for the whole
//    namespace, and its table is the kernel's, shared by every namespace).
// Netlink is spoken directly: no nft binary, no library. Nothing here allocates: it runs in a
// helper that shares the supervisor's memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "enforce/spec.h"

namespace ward::enforce {

// In the calling thread's network namespace. 0, or -errno with *what naming the step. *v6:
// whether the IPv6 range is captured too (false where the kernel has no IPv6).
int SetUpCapture(const NetSpec& net, bool* v6, const char** what);

namespace internal {

// A netlink message writer into a caller's buffer; ok() is false once it overflowed.
class NlWriter {
 public:
  NlWriter(char* buf, size_t cap) : buf_(buf), cap_(cap) {}
  size_t BeginMessage(uint16_t type, uint16_t flags, uint32_t seq);  // returns its offset
  void EndMessage(size_t at);
  void Raw(const void* data, size_t n);  // a family header after the nlmsghdr
  void Attr(uint16_t type, const void* data, size_t n);
  void AttrString(uint16_t type, const char* s);  // with its NUL
  void AttrBe32(uint16_t type, uint32_t host_order);
  size_t BeginNest(uint16_t type);
  void EndNest(size_t at);
  bool ok() const { return ok_; }
  size_t size() const { return len_; }

 private:
  void Pad();
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
  bool ok_ = true;
};

// The route making `prefix_len` bits of `addr` local through interface `ifindex`.
size_t BuildLocalRoute(char* buf, size_t cap, int family, const uint8_t* addr, int prefix_len,
                       int ifindex, uint32_t seq);
// One nftables batch for one family (AF_INET or AF_INET6): table "ward"; a nat chain at the
// output hook with the rule redirecting TCP to addr/prefix_len to `port`; a raw chain before
// connection tracking that leaves untracked whatever is not such TCP. Six messages ask for an
// acknowledgement.
size_t BuildRedirect(char* buf, size_t cap, int family, const uint8_t* addr, int prefix_len,
                     uint16_t port, uint32_t seq);
inline constexpr int kRedirectAcks = 6;

}  // namespace internal
}  // namespace ward::enforce
