#include "policy/policy_json.h"

#include "common/json.h"

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
  return JsonObject()("source", o.source)("line", o.line)("key", o.key);
}

json PolicyToJson(const Policy& p) {
  json j;
  j["profile"] = p.profile;
  j["description"] = p.description;
  j["sources"] = JsonArray(p.sources.size(), [&](size_t i) -> json {
    const ProfileSource& s = p.sources[i];
    return JsonObject()("name", s.name)("origin", s.origin)("sha256", s.sha256);
  });
  j["workspace"] = JsonObject()("path", p.workspace)(
      "access", p.workspace_access ? AccessName(*p.workspace_access) : "none")(
      "origin", OriginToJson(p.workspace_origin));
  if (!p.workspace_anyway.empty()) j["workspace"]["anyway"] = p.workspace_anyway;
  j["home"] = p.home;

  json paths = JsonArray(p.paths.size(), [&](size_t i) -> json {
    const PathRule& r = p.paths[i];
    return JsonObject()("path", r.path)("access", AccessName(r.access))("optional", r.optional)(
        "origin", OriginToJson(r.origin));
  });
  json deny = JsonArray(p.deny.size(), [&](size_t i) -> json {
    return JsonObject()("path", p.deny[i].path)("origin", OriginToJson(p.deny[i].origin));
  });
  json protected_paths = JsonArray(p.protected_paths.size(), [&](size_t i) -> json {
    const ProtectedRule& r = p.protected_paths[i];
    return JsonObject()("relpath", r.relpath)("origin", OriginToJson(r.origin));
  });
  j["filesystem"] = JsonObject()("paths", std::move(paths))("deny", std::move(deny))(
      "protected", std::move(protected_paths))("nested_repo_depth", p.nested_repo_depth);

  j["env"] = JsonArray(p.env.size(), [&](size_t i) -> json {
    const EnvRule& r = p.env[i];
    return JsonObject()("name", r.name)("kind", r.value ? "set" : "pass")("origin",
                                                                          OriginToJson(r.origin));
  });

  auto hosts = [](const std::vector<HostRule>& list) {
    return JsonArray(list.size(), [&](size_t i) -> json {
      return JsonObject()("pattern", list[i].pattern)("origin", OriginToJson(list[i].origin));
    });
  };
  auto rules = JsonArray(p.network.rules.size(), [&](size_t i) -> json {
    const RequestRule& r = p.network.rules[i];
    return JsonObject()("host", r.host)("methods", r.methods)("paths", r.paths)(
        "action", RequestActionName(r.action))("origin", OriginToJson(r.origin));
  });
  j["network"] = JsonObject()("allow", hosts(p.network.allow))("deny", hosts(p.network.deny))(
      "transparent", p.network.transparent)("rules", std::move(rules));

  json limits = {{"memory_bytes", OptionalNumber(p.limits.memory_bytes)},
                 {"pids", OptionalNumber(p.limits.pids)},
                 {"cpu_cores", OptionalNumber(p.limits.cpu_cores)},
                 {"timeout_ms", OptionalNumber(p.limits.timeout_ms)},
                 {"tmp_size_bytes", OptionalNumber(p.limits.tmp_size_bytes)},
                 {"file_size_bytes", OptionalNumber(p.limits.file_size_bytes)},
                 {"proxy_connections", OptionalNumber(p.limits.proxy_connections)}};
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
