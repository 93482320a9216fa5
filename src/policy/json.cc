#include "policy/json.h"

namespace ward::policy {
namespace {

using nlohmann::json;

const char* SourceKind(CredentialSource::Kind k) {
  switch (k) {
    case CredentialSource::Kind::kEnv:
      return "env";
    case CredentialSource::Kind::kFile:
      return "file";
    case CredentialSource::Kind::kCommand:
      return "command";
  }
  return "unknown";
}

json InjectToJson(const CredentialInject& inj) {
  switch (inj.kind) {
    case CredentialInject::Kind::kHeader:
      return {{"header", inj.name}, {"value", inj.template_}};
    case CredentialInject::Kind::kBasic:
      return {{"basic", inj.template_}};
    case CredentialInject::Kind::kQuery:
      return {{"query", inj.name}, {"value", inj.template_}};
  }
  return json::object();
}

template <typename T>
json OptionalNumber(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

json OriginToJson(const Origin& o) {
  return {{"source", o.source}, {"line", o.line}, {"key", o.key}};
}

json PolicyToJson(const Policy& p) {
  json j;
  j["profile"] = p.profile;
  j["description"] = p.description;
  j["sources"] = json::array();
  for (const ProfileSource& s : p.sources) {
    j["sources"].push_back({{"name", s.name}, {"origin", s.origin}, {"sha256", s.sha256}});
  }
  j["workspace"] = {{"path", p.workspace},
                    {"access", p.workspace_access ? AccessName(*p.workspace_access) : "none"},
                    {"origin", OriginToJson(p.workspace_origin)}};
  j["home"] = p.home;

  json fs;
  fs["paths"] = json::array();
  for (const PathRule& r : p.paths) {
    fs["paths"].push_back({{"path", r.path},
                           {"access", AccessName(r.access)},
                           {"optional", r.optional},
                           {"origin", OriginToJson(r.origin)}});
  }
  fs["deny"] = json::array();
  for (const DenyRule& r : p.deny) {
    fs["deny"].push_back({{"path", r.path}, {"origin", OriginToJson(r.origin)}});
  }
  fs["protected"] = json::array();
  for (const ProtectedRule& r : p.protected_paths) {
    fs["protected"].push_back({{"relpath", r.relpath}, {"origin", OriginToJson(r.origin)}});
  }
  fs["nested_repo_depth"] = p.nested_repo_depth;
  j["filesystem"] = std::move(fs);

  j["env"] = json::array();
  for (const EnvRule& r : p.env) {
    j["env"].push_back(
        {{"name", r.name}, {"kind", r.value ? "set" : "pass"}, {"origin", OriginToJson(r.origin)}});
  }

  json net;
  for (auto [name, list] :
       {std::pair<const char*, const std::vector<HostRule>*>{"allow", &p.network.allow},
        {"deny", &p.network.deny}}) {
    net[name] = json::array();
    for (const HostRule& r : *list) {
      net[name].push_back({{"pattern", r.pattern}, {"origin", OriginToJson(r.origin)}});
    }
  }
  j["network"] = std::move(net);

  json limits = {{"memory_bytes", OptionalNumber(p.limits.memory_bytes)},
                 {"pids", OptionalNumber(p.limits.pids)},
                 {"cpu_cores", OptionalNumber(p.limits.cpu_cores)},
                 {"timeout_ms", OptionalNumber(p.limits.timeout_ms)},
                 {"tmp_size_bytes", OptionalNumber(p.limits.tmp_size_bytes)},
                 {"file_size_bytes", OptionalNumber(p.limits.file_size_bytes)}};
  limits["origins"] = json::object();
  for (const auto& [key, o] : p.limits.origins) limits["origins"][key] = OriginToJson(o);
  j["limits"] = std::move(limits);

  j["credentials"] = json::object();
  for (const auto& [name, c] : p.credentials) {
    j["credentials"][name] = {
        {"from", {{"kind", SourceKind(c.from.kind)}, {"value", c.from.value}}},
        {"hosts", c.hosts},
        {"inject", InjectToJson(c.inject)},
        {"env", c.env},
        {"route", c.route},
        {"route_env", c.route_env},
        {"enabled", c.enabled},
        {"origin", OriginToJson(c.origin)}};
  }

  j["approvals"] = {{"enabled", p.approvals.enabled},
                    {"auto_deny", p.approvals.auto_deny},
                    {"auto_allow_once", p.approvals.auto_allow_once},
                    {"timeout_ms", p.approvals.timeout_ms},
                    {"origin", OriginToJson(p.approvals.origin)}};

  j["allow_degraded"] = json::array();
  for (Layer l : p.allow_degraded) {
    json entry = {{"layer", LayerName(l)}};
    auto it = p.degraded_origins.find(l);
    if (it != p.degraded_origins.end()) entry["origin"] = OriginToJson(it->second);
    j["allow_degraded"].push_back(std::move(entry));
  }
  j["audit"] = p.audit;
  return j;
}

}  // namespace ward::policy
