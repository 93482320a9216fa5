#include "oci/annotations.h"

#include <algorithm>

namespace ward::oci {
namespace {

// "a, b,,c" -> {"a", "b", "c"}.
std::vector<std::string> SplitList(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    std::string item = value.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(std::move(item));
    start = comma + 1;
  }
  return out;
}

Status Bad(const std::string& key, const std::string& what) {
  return InvalidArgument("annotation " + key + ": " + what);
}

Result<std::vector<uint16_t>> Ports(const std::string& key, const std::string& value) {
  std::vector<uint16_t> ports;
  for (std::string item : SplitList(value)) {
    if (item.ends_with("/tcp")) item.resize(item.size() - 4);
    unsigned long port = 0;
    const bool digits = !item.empty() && item.size() <= 5 &&
                        item.find_first_not_of("0123456789") == std::string::npos;
    if (digits) port = std::stoul(item);
    if (!digits || port == 0 || port > 65535) {
      return Bad(key, "\"" + item + "\" is not a TCP port (1-65535; ward forwards TCP only)");
    }
    if (std::find(ports.begin(), ports.end(), port) != ports.end()) {
      return Bad(key, "port " + item + " is named twice");
    }
    ports.push_back(static_cast<uint16_t>(port));
  }
  if (ports.empty()) return Bad(key, "names no port");
  return ports;
}

}  // namespace

const std::vector<std::string>& KnownAnnotations() {
  static const std::vector<std::string> kKnown = {
      "run.ward/profile",     "run.ward/allow-net", "run.ward/deny-net",
      "run.ward/credentials", "run.ward/approver",  "run.ward/audit-dir",
      "run.ward/allow-socket-bind", "run.ward/expose"};
  return kKnown;
}

Result<WardAnnotations> ParseAnnotations(const std::map<std::string, std::string>& annotations) {
  WardAnnotations w;
  for (const auto& [key, value] : annotations) {
    if (!key.starts_with(kAnnotationPrefix)) continue;
    if (value.find('\0') != std::string::npos) return Bad(key, "contains a NUL byte");
    if (key == "run.ward/profile") {
      w.profile = value;
    } else if (key == "run.ward/allow-net") {
      w.allow_net = SplitList(value);
    } else if (key == "run.ward/deny-net") {
      w.deny_net = SplitList(value);
    } else if (key == "run.ward/credentials") {
      w.credentials = SplitList(value);
    } else if (key == "run.ward/approver") {
      if (!value.starts_with("https://") && !value.starts_with("http://")) {
        return Bad(key, "must be a webhook URL (https://...): a node has no terminal to ask on");
      }
      w.approver = value;
    } else if (key == "run.ward/audit-dir") {
      if (value.empty() || value[0] != '/') return Bad(key, "must be an absolute path");
      w.audit_dir = value;
    } else if (key == "run.ward/allow-socket-bind") {
      w.socket_binds = SplitList(value);
      for (const std::string& p : w.socket_binds) {
        if (p[0] != '/') return Bad(key, "\"" + p + "\" is not an absolute path");
      }
    } else if (key == "run.ward/expose") {
      WARD_ASSIGN_OR_RETURN(w.expose, Ports(key, value));
    } else {
      std::string known;
      for (const std::string& k : KnownAnnotations()) known += (known.empty() ? "" : ", ") + k;
      return Bad(key, "not an annotation ward knows (it knows " + known + ")");
    }
  }
  return w;
}

}  // namespace ward::oci
