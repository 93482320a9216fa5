// JSON-RPC 2.0 lines from `ward serve` and `ward mcp` clients: ParseMessage never throws and
// classifies consistently; a parsed message's id survives a response round trip; the line
// framer gives the same lines whole and split; ToValidUtf8 output is what SerializeLine keeps.
#include <string>
#include <vector>

#include "api/jsonrpc.h"
#include "fuzz_util.h"

using namespace ward::api;

namespace {

std::vector<std::string> Lines(std::string_view in, size_t step) {
  LineFramer framer(256);
  std::vector<std::string> out;
  for (size_t i = 0; i < in.size(); i += step) {
    framer.Feed(in.substr(i, step));
    while (auto item = framer.Next()) out.push_back(item->oversized ? "<oversized>" : item->line);
  }
  return out;
}

void CheckMessage(std::string_view line) {
  ParseFailure failure;
  Expected<Message> m = ParseMessage(line, &failure);
  if (!m.ok()) {
    FUZZ_CHECK(failure.id.is_null() || failure.id.is_string() || failure.id.is_number_integer());
    // The error response for it serialises to valid JSON.
    const std::string reply = SerializeLine(MakeErrorResponse(failure.id, failure.error));
    FUZZ_CHECK(!reply.empty() && reply.back() == '\n');
    FUZZ_CHECK(nlohmann::json::accept(reply));
    return;
  }
  switch (m->kind) {
    case Message::Kind::kRequest:
      FUZZ_CHECK(m->id.is_string() || m->id.is_number_integer());
      FUZZ_CHECK(m->params.is_object() || m->params.is_array());
      break;
    case Message::Kind::kNotification:
      FUZZ_CHECK(m->id.is_null());
      break;
    case Message::Kind::kResponse:
      break;
  }
  if (m->kind != Message::Kind::kRequest) return;
  const std::string reply = SerializeLine(MakeResult(m->id, m->params));
  ParseFailure rf;
  Expected<Message> back = ParseMessage(std::string_view(reply).substr(0, reply.size() - 1), &rf);
  FUZZ_CHECK(back.ok() && back->kind == Message::Kind::kResponse);
  FUZZ_CHECK(back->id == m->id);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = ward::fuzz::AsText(data, size);
  CheckMessage(in);

  const std::vector<std::string> whole = Lines(in, in.size() + 1);
  FUZZ_CHECK(whole == Lines(in, ward::fuzz::StepFor(in)));
  for (const std::string& line : whole) {
    if (line != "<oversized>") CheckMessage(line);
  }

  const std::string valid = ToValidUtf8(in);
  FUZZ_CHECK(ToValidUtf8(valid) == valid);
  const std::string b64 = Base64Encode(in);
  std::optional<std::string> decoded = Base64Decode(b64);
  FUZZ_CHECK(decoded && *decoded == in);
  (void)Base64Decode(in);
  return 0;
}
