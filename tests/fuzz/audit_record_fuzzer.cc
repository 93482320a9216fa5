// Audit log lines, which `ward audit` reads from a state directory the user (and a compromised
// session log writer) controls: ParseRecordLine never throws; what it parses serialises
// canonically exactly as the reference does, and the canonical line parses back to the same value.
#include <string>

#include "audit/record.h"
#include "fuzz_util.h"

using namespace ward::audit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = ward::fuzz::AsText(data, size);
  const bool shallow = JsonDepthWithin(in, kMaxJsonDepth);
  std::optional<nlohmann::json> j = ParseRecordLine(in);
  if (!j) return 0;
  FUZZ_CHECK(shallow);
  FUZZ_CHECK(j->is_object());
  const std::string canonical = CanonicalJson(*j);
  FUZZ_CHECK(canonical == CanonicalJsonReferenceForTesting(*j));
  std::optional<nlohmann::json> back = ParseRecordLine(canonical);
  FUZZ_CHECK(back && CanonicalJson(*back) == canonical);

  // A record built from it (as the writer does) carries the same data, whichever way it is built.
  const std::string ts = "2026-11-30T16:22:33.123Z";
  FUZZ_CHECK(IsValidTimestamp(ts));
  BuiltRecord a = BuildRecord(1, ts, "fuzz", *j, kZeroHash);
  BuiltRecord b = BuildRecordFromCanonicalData(1, ts, "fuzz", canonical, kZeroHash);
  FUZZ_CHECK(a.line == b.line && a.hash == b.hash);
  std::optional<nlohmann::json> rec = ParseRecordLine(a.line);
  FUZZ_CHECK(rec && rec->contains("data") && CanonicalJson((*rec)["data"]) == canonical);
  (void)IsValidTimestamp(in);
  (void)IsDenialType(in);
  return 0;
}
