// The launch plan as sandbox init decodes it from the go message: DecodeInitPlan never crashes or
// allocates beyond the message, and whatever it accepts is exactly what EncodeInitPlan makes of
// the result (one encoding per plan, so nothing is read twice or skipped).
#include <string>

#include "enforce/plan_wire.h"
#include "fuzz_util.h"

using namespace ward::enforce;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = ward::fuzz::AsText(data, size);
  LaunchPlan plan;
  InitLaunch launch;
  ward::Status s = DecodeInitPlan(in, &plan, &launch);
  if (!s.ok()) {
    FUZZ_CHECK(s.message().find("launch plan: ") == 0);
    return 0;
  }
  FUZZ_CHECK(EncodeInitPlan(plan, launch) == in);
  return 0;
}
