// The real secrets in what comes back from a credential's host, in disguise as well as
// literally. An endpoint that echoes its request (or quotes it in an error) returns the secret
// the broker sent: as is, inside a Basic header it re-encoded, base64'd into a larger blob, hex,
// percent- or JSON-escaped. Each of these forms is derived from the secret up front, with a
// replacement of the same length derived the same way from the phantom, and one automaton
// (MultiMatcher) finds them all in a single linear pass over the stream.
//
// base64 (standard and URL-safe) at every alignment: a secret that starts 0, 1 or 2 bytes into
// a 3-byte group encodes to a run of characters that depend on its bytes alone (the stable
// part, which is matched) between at most one character on either side that mixes its first
// or last bits with a neighbour's. Those two characters are rewritten too: the secret's bits in
// them become the phantom's, the neighbour's bits stay. So a whole blob decodes to the same
// text with the phantom in the secret's place, padding and all, and a re-encoded Basic header
// decodes to "user:phantom".
//
// Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "net/multi_matcher.h"

namespace ward::net {

struct SecretForm {
  std::string form;         // "literal", "base64/1", "base64url/2", "hex", "percent", ...
  std::string text;         // what is matched
  std::string replacement;  // the same form of the phantom; 'x's when the lengths differ
  // base64 forms: the alphabet (0 standard, 1 URL-safe; -1: not base64), and the secret's bits
  // in the character before the stable part (its lowest lead_bits) and after it (its highest
  // trail_bits), with the phantom's bits that replace them.
  int alphabet = -1;
  bool either_alphabet = false;  // the text is the same in both alphabets
  uint8_t lead_bits = 0, lead_value = 0;
  uint8_t trail_bits = 0, trail_value = 0;
};

// Every form of one secret, with replacements from its phantom. Forms that are too short to be
// told from ordinary text are left out (the literal secret never is).
std::vector<SecretForm> SecretForms(std::string_view secret, std::string_view phantom);

// The forms of all secrets of a session and their automaton. Immutable once made.
class SecretMaskTable {
 public:
  explicit SecretMaskTable(std::vector<SecretForm> forms);
  const std::vector<SecretForm>& forms() const { return forms_; }
  const MultiMatcher& matcher() const { return matcher_; }
  bool empty() const { return forms_.empty(); }
  // Whether a match can rewrite the character before it (base64 forms).
  bool rewrites_before() const { return rewrites_before_; }

 private:
  std::vector<SecretForm> forms_;  // distinct texts
  MultiMatcher matcher_;
  bool rewrites_before_ = false;
};

// Masks one stream (a response body, or one string). Output keeps the input's length. Only what
// could still become part of a match is held back: the tail that begins some form, and the
// character before it when that one may need rewriting.
class SecretMasker {
 public:
  explicit SecretMasker(const SecretMaskTable& table) : table_(&table) {}
  std::string Process(std::string_view data);
  std::string Flush();  // at the end of the stream

 private:
  struct TrailFix {
    uint64_t at;  // stream offset of the character to rewrite
    size_t form;
  };
  void Rewrite(size_t end, const SecretForm& f);
  void FixTrail(size_t i);
  char AlphabetHint(size_t i) const;
  static constexpr size_t kHintReach = 1024;

  const SecretMaskTable* table_;
  std::string buf_;  // not emitted yet; buf_[0] is at stream offset base_
  uint64_t base_ = 0;
  size_t scanned_ = 0;  // bytes of buf_ the automaton has seen
  MultiMatcher::State state_ = MultiMatcher::kStart;
  std::vector<TrailFix> trail_fixes_;
};

// Encodings used by the forms (exposed for tests).
std::string Base64EncodeWith(std::string_view data, int alphabet, bool pad);
std::string HexEncode(std::string_view data, bool upper);

}  // namespace ward::net
