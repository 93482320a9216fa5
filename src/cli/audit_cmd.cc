// `ward audit`: list, show, tail and verify the supervisor's session logs. The logic lives in
// src/audit (sessions.h, verify.h); this file parses flags and prints.
#include <fmt/core.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "audit/record.h"
#include "audit/session_log.h"
#include "audit/sessions.h"
#include "audit/verify.h"
#include "cli/commands.h"
#include "supervisor/denials.h"

namespace ward::cli {
namespace {

constexpr auto kFollowPoll = std::chrono::milliseconds(250);

struct AuditOptions {
  std::string state_dir;
  bool json = false;
  std::vector<std::string> types;
  std::string session;
  std::vector<std::string> sessions;
  bool all = false;
  bool follow = false;
  int lines = 20;
  bool denials = false;  // show: the session's denials, gathered, instead of its records
};

// How many ended sessions' log reserves a `ward audit` command gives back.
constexpr int kReservesReleasedByAudit = 1000;

std::string StateDir(const AuditOptions& o) {
  return o.state_dir.empty() ? audit::DefaultStateDir() : o.state_dir;
}

void PrintError(const std::string& msg) {
  std::fprintf(stderr, "ward audit: %s\n", audit::SanitizeForTerminal(msg).c_str());
}

bool Wanted(const AuditOptions& o, const std::string& line) {
  if (o.types.empty()) return true;
  auto rec = audit::ParseRecordLine(line);
  if (!rec || !(*rec)["type"].is_string()) return false;
  for (const auto& t : o.types) {
    if (audit::TypeMatches(t, (*rec)["type"].get_ref<const std::string&>())) return true;
  }
  return false;
}

// Human: "seq  time  type  summary"; --json: the stored line, verbatim (canonical, so it can
// be re-hashed by other tools).
void PrintRecord(const AuditOptions& o, const std::string& line) {
  if (o.json) {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    return;
  }
  auto rec = audit::ParseRecordLine(line);
  if (!rec) {
    fmt::print("{:>6}  {:<24}  {:<18}  {}\n", "?", "?", "?", "(unparsable line)");
    return;
  }
  auto field = [&](const char* key) {
    const auto& v = (*rec)[key];
    return audit::SanitizeForTerminal(v.is_string() ? v.get<std::string>() : v.dump());
  };
  const nlohmann::json& data = (*rec)["data"];
  fmt::print("{:>6}  {:<24}  {:<18}  {}\n", field("seq"), field("ts"), field("type"),
             audit::SummarizeData(data.is_null() ? nlohmann::json::object() : data));
}

void PrintHeader(const AuditOptions& o) {
  if (!o.json) fmt::print("{:>6}  {:<24}  {:<18}  {}\n", "SEQ", "TIME", "TYPE", "DATA");
}

std::string ExitColumn(const audit::SessionSummary& s) {
  if (s.setup_error && !s.exit_code) return "setup error";
  if (!s.signal.empty()) return "signal " + s.signal;
  if (s.exit_code) return std::to_string(*s.exit_code);
  return s.ended ? "?" : "no end";
}

int RunList(const AuditOptions& o) {
  std::string state = StateDir(o);
  if (state.empty()) {
    PrintError("no state directory (set XDG_STATE_HOME or HOME, or pass --state-dir)");
    return kExitFailed;
  }
  std::vector<audit::SessionSummary> all = audit::ListSessions(state);
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : all) {
      nlohmann::json j = {{"id", s.id},
                          {"start", s.start},
                          {"command", s.command},
                          {"ended", s.ended},
                          {"setup_error", s.setup_error},
                          {"denials", s.denials},
                          {"records", s.records}};
      j["exit_code"] = s.exit_code ? nlohmann::json(*s.exit_code) : nlohmann::json(nullptr);
      j["signal"] = s.signal.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.signal);
      out.push_back(std::move(j));
    }
    std::printf("%s\n", audit::CanonicalJson(out).c_str());
    return kExitOk;
  }
  if (all.empty()) {
    std::fprintf(stderr, "no sessions in %s\n",
                 audit::SanitizeForTerminal(audit::SessionsDir(state)).c_str());
    return kExitOk;
  }
  fmt::print("{:<26}  {:<24}  {:<12}  {:>7}  {}\n", "ID", "START", "EXIT", "DENIALS", "COMMAND");
  for (const auto& s : all) {
    std::string cmd = audit::SanitizeForTerminal(s.command);
    if (cmd.size() > 80) cmd = audit::SummarizeData(s.command, 80);
    fmt::print("{:<26}  {:<24}  {:<12}  {:>7}  {}\n", s.id, s.start, ExitColumn(s), s.denials, cmd);
  }
  return kExitOk;
}

Result<audit::SessionSummary> Resolve(const AuditOptions& o, const std::string& name) {
  std::string state = StateDir(o);
  if (state.empty()) {
    return InvalidArgument("no state directory (set XDG_STATE_HOME or HOME, or pass --state-dir)");
  }
  return audit::ResolveSession(state, name);
}

// `show --denials`: the session's records gathered as the run's summary gathers its events
// (supervisor/denials.h), most frequent first; --json: the same objects as --json-status.
int PrintDenials(const AuditOptions& o, const std::vector<std::string>& lines) {
  supervisor::DenialTally tally;
  for (const std::string& line : lines) {
    std::optional<nlohmann::json> rec = audit::ParseRecordLine(line);
    if (!rec || !(*rec)["type"].is_string()) continue;
    const nlohmann::json& data = (*rec)["data"];
    tally.AddRecord((*rec)["type"].get_ref<const std::string&>(), data);
  }
  const std::vector<supervisor::Denial> ds = tally.Sorted();
  if (o.json) {
    std::printf("%s\n", supervisor::DenialsToJson(ds).dump().c_str());
    return kExitOk;
  }
  if (ds.empty()) {
    std::fprintf(stderr, "no denials in this session\n");
    return kExitOk;
  }
  auto S = [](const std::string& s) { return audit::SanitizeForTerminal(s); };
  fmt::print("{:>7}  {:<10}  {:<40}  {:<24}  {}\n", "COUNT", "KIND", "TARGET", "ALLOW WITH",
             "RULE");
  for (const supervisor::Denial& d : ds) {
    fmt::print("{:>7}  {:<10}  {:<40}  {:<24}  {}\n", d.count, S(d.kind), S(d.target),
               d.on_purpose ? "(refused on purpose)" : S(d.allow_with), S(d.rule));
  }
  return kExitOk;
}

int RunShow(const AuditOptions& o) {
  auto s = Resolve(o, o.session);
  if (!s.ok()) {
    PrintError(s.status().ToString());
    return kExitFailed;
  }
  audit::LogTail reader(s->dir);
  auto lines = reader.Poll();
  if (!lines.ok()) {
    PrintError(lines.status().ToString());
    return kExitFailed;
  }
  if (o.denials) return PrintDenials(o, *lines);
  PrintHeader(o);
  for (const auto& line : *lines) {
    if (Wanted(o, line)) PrintRecord(o, line);
  }
  return kExitOk;
}

int RunTail(const AuditOptions& o) {
  std::string state = StateDir(o);
  if (state.empty()) {
    PrintError("no state directory (set XDG_STATE_HOME or HOME, or pass --state-dir)");
    return kExitFailed;
  }
  auto newest = [&]() -> std::optional<audit::SessionSummary> {
    auto all = audit::ListSessions(state, /*brief=*/true);
    if (all.empty()) return std::nullopt;
    return all.front();
  };
  std::optional<audit::SessionSummary> cur = newest();
  if (!cur && !o.follow) {
    PrintError("no sessions in " + audit::SessionsDir(state));
    return kExitFailed;
  }
  while (!cur) {  // -f with no session yet: wait for the first one
    std::this_thread::sleep_for(kFollowPoll);
    cur = newest();
  }
  auto announce = [&](const audit::SessionSummary& s) {
    std::string header = "==> session " + s.id + " <==";
    if (o.json) {
      std::fprintf(stderr, "%s\n", header.c_str());
    } else {
      fmt::print("{}\n", header);
      PrintHeader(o);
    }
  };
  announce(*cur);
  auto tail = std::make_unique<audit::LogTail>(cur->dir);
  auto print_new = [&](bool only_last_n) -> bool {
    auto lines = tail->Poll();
    if (!lines.ok()) {
      PrintError(lines.status().ToString());
      return false;
    }
    std::vector<const std::string*> wanted;
    for (const auto& l : *lines) {
      if (Wanted(o, l)) wanted.push_back(&l);
    }
    size_t first = 0;
    if (only_last_n && wanted.size() > static_cast<size_t>(o.lines)) {
      first = wanted.size() - static_cast<size_t>(o.lines);
    }
    for (size_t i = first; i < wanted.size(); ++i) PrintRecord(o, *wanted[i]);
    std::fflush(stdout);
    return true;
  };
  if (!print_new(/*only_last_n=*/true)) return kExitFailed;
  if (!o.follow) return kExitOk;
  for (;;) {
    std::this_thread::sleep_for(kFollowPoll);
    if (!print_new(false)) return kExitFailed;
    auto n = newest();
    if (n && n->id != cur->id && n->start >= cur->start) {  // only ever forward
      if (!print_new(false)) return kExitFailed;            // the rest of the old session first
      cur = n;
      announce(*cur);
      tail = std::make_unique<audit::LogTail>(cur->dir);
      if (!print_new(false)) return kExitFailed;
    }
  }
}

int RunVerify(const AuditOptions& o) {
  if (o.all == !o.sessions.empty()) {
    PrintError("give SESSION... or --all");
    return kExitUsage;
  }
  std::string state = StateDir(o);
  if (state.empty()) {
    PrintError("no state directory (set XDG_STATE_HOME or HOME, or pass --state-dir)");
    return kExitFailed;
  }
  struct Target {
    std::string name;
    std::string dir;
  };
  std::vector<Target> targets;
  int rc = kExitOk;
  nlohmann::json out = nlohmann::json::array();
  if (o.all) {
    for (const auto& s : audit::ListSessions(state, /*brief=*/true))
      targets.push_back({s.id, s.dir});
    if (targets.empty()) std::fprintf(stderr, "no sessions to verify\n");
  } else {
    for (const auto& name : o.sessions) {
      auto s = audit::ResolveSession(state, name);
      if (!s.ok()) {
        PrintError(s.status().ToString());
        if (o.json)
          out.push_back(
              {{"session", name}, {"state", "missing"}, {"detail", s.status().ToString()}});
        rc = kExitFailed;
        continue;
      }
      targets.push_back({s->id, s->dir});
    }
  }
  for (const auto& t : targets) {
    audit::VerifyReport r = audit::VerifySession(t.dir);
    bool bad = r.state == audit::VerifyReport::State::kTampered ||
               r.state == audit::VerifyReport::State::kMissing;
    if (bad) rc = kExitFailed;
    if (o.json) {
      out.push_back({{"session", t.name},
                     {"state", audit::StateName(r.state)},
                     {"records", r.records},
                     {"bad_seq", r.bad_seq >= 0 ? nlohmann::json(r.bad_seq) : nlohmann::json()},
                     {"torn_tail", r.torn_tail},
                     {"detail", r.detail}});
      continue;
    }
    std::string state_name(audit::StateName(r.state));
    if (bad) {
      for (char& c : state_name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    fmt::print("{:<26}  {:<12}  {}\n", t.name, state_name, audit::SanitizeForTerminal(r.detail));
  }
  if (o.json) std::printf("%s\n", audit::CanonicalJson(out).c_str());
  return rc;
}

}  // namespace

void AddAuditCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<AuditOptions>();
  CLI::App* audit = app.add_subcommand(
      "audit", "Read and verify the audit trail (sessions under $XDG_STATE_HOME/ward/sessions)");
  audit->require_subcommand(1);
  audit->fallthrough();
  // Reading the trail is also when the reserves of ended sessions are given back (a run gives
  // back a few at its start).
  audit->parse_complete_callback(
      [o] { audit::ReleaseFinishedReserves(StateDir(*o), kReservesReleasedByAudit); });
  audit->add_option("--state-dir", o->state_dir,
                    "State directory (default: $XDG_STATE_HOME/ward or ~/.local/state/ward)");

  CLI::App* list = audit->add_subcommand("list",
                                         "Sessions, newest first: id, start, command, "
                                         "exit, denials");
  list->add_flag("--json", o->json, "One JSON array");
  list->callback([o, exit_code] { *exit_code = RunList(*o); });

  CLI::App* show = audit->add_subcommand("show", "The records of one session");
  show->add_option("SESSION", o->session, "Session id, unique prefix, or 'last'")->required();
  show->add_option("--type", o->types, "Only this type, or a prefix ending in '.' (net.)");
  show->add_flag("--json", o->json, "The stored JSON lines, verbatim");
  show->add_flag("--denials", o->denials,
                 "What the session refused, gathered: one line per distinct target, counted, "
                 "with the flag that would allow it (--json: an array)");
  show->callback([o, exit_code] { *exit_code = RunShow(*o); });

  CLI::App* tail = audit->add_subcommand("tail", "The last records of the newest session");
  tail->add_flag("-f,--follow", o->follow, "Keep printing new records, also of newer sessions");
  tail->add_option("-n,--lines", o->lines, "How many records to show first")
      ->check(CLI::NonNegativeNumber);
  tail->add_option("--type", o->types, "Only this type, or a prefix ending in '.' (net.)");
  tail->add_flag("--json", o->json, "The stored JSON lines, verbatim");
  tail->callback([o, exit_code] { *exit_code = RunTail(*o); });

  CLI::App* verify = audit->add_subcommand(
      "verify", "Check the hash chain (exit 0: intact or unterminated; 1: tampered or missing)");
  verify->add_option("SESSION", o->sessions, "Session ids, unique prefixes, or 'last'");
  verify->add_flag("--all", o->all, "Every session");
  verify->add_flag("--json", o->json, "One JSON array");
  verify->callback([o, exit_code] { *exit_code = RunVerify(*o); });
}

}  // namespace ward::cli
