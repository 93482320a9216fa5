#include "net/broker/setup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iterator>
#include <map>

#include "common/unique_fd.h"

namespace ward::net {

namespace {

constexpr const char* kBundlePaths[] = {
    "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu, Arch, Gentoo
    "/etc/pki/tls/certs/ca-bundle.crt",                   // Fedora, RHEL
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // RHEL 7+
    "/etc/ssl/ca-bundle.pem",                             // openSUSE
    "/etc/ssl/cert.pem",                                  // Alpine
};
constexpr size_t kMaxBundleBytes = 16 << 20;

Result<std::string> ReadSmallFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) return ErrnoError(path, errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return InvalidArgument(path + ": not a regular file");
  }
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(path + ": read", errno);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxBundleBytes) return InvalidArgument(path + ": too large");
  }
  return out;
}

}  // namespace

std::vector<std::string> CaBundlePaths() { return {std::begin(kBundlePaths), std::end(kBundlePaths)}; }

std::string FindSystemCaBundle() {
  for (const char* p : kBundlePaths) {
    struct stat st {};
    if (::stat(p, &st) == 0 && S_ISREG(st.st_mode)) return p;
  }
  return "";
}

std::string CaBundleTarget(const std::string& system_bundle_path) {
  if (!system_bundle_path.empty()) return system_bundle_path;
  std::string found = FindSystemCaBundle();
  return found.empty() ? std::string(kBundlePaths[0]) : found;
}

Result<std::string> MergedCaBundle(std::string_view ca_pem, const std::string& system_bundle_path) {
  std::string out;
  if (!system_bundle_path.empty()) {
    WARD_ASSIGN_OR_RETURN(out, ReadSmallFile(system_bundle_path));
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  out += "# ward: this session's credential broker CA (its key never leaves the supervisor)\n";
  out.append(ca_pem);
  return out;
}

std::string RouteUrl(std::string_view proxy_host, uint16_t proxy_port, std::string_view route) {
  std::string host(proxy_host);
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(proxy_port) + "/" + std::string(route);
}

Result<CredentialSetup> PrepareCredentials(const policy::Policy& policy,
                                           const CredentialSetupOptions& options) {
  CredentialSetup setup;
  std::vector<CredentialSpec> specs;
  for (const auto& [name, c] : policy.credentials) {
    if (!c.enabled) continue;
    const std::string what = "credential " + name + " (" + c.origin.ToString() + ")";
    auto secret = FetchSecret(c.from, options.sources);
    if (!secret.ok()) {
      return Status(secret.status().code(), what + ": " + secret.status().ToString());
    }
    CredentialSpec s;
    s.name = name;
    s.secret = std::move(secret).value();
    for (const std::string& h : c.hosts) s.hosts.push_back(policy::HostRule{h, c.origin});
    s.inject = c.inject;
    s.route = c.route;
    if (!c.route.empty() && options.proxy_port == 0) {
      return InvalidArgument(what + ": a route needs the proxy's port");
    }
    specs.push_back(std::move(s));
  }
  // Method and path rules need their hosts' requests: their tunnels are intercepted too.
  std::vector<policy::HostRule> inspect;
  for (const policy::RequestRule& r : policy.network.rules) {
    inspect.push_back(policy::HostRule{r.host, r.origin});
  }
  if (specs.empty() && inspect.empty()) return setup;
  for (const CredentialSpec& s : specs) setup.secrets.push_back(s.secret);
  BrokerOptions bo;
  bo.upstream.extra_ca_files = options.upstream_ca_files;
  bo.intercept = options.intercept;
  bo.inspect_hosts = std::move(inspect);
  auto broker = CredentialBroker::Create(std::move(specs), std::move(bo));
  if (!broker.ok()) return Status(broker.status().code(), broker.status().message());
  setup.broker = std::move(broker).value();

  std::map<std::string, std::string> env;  // one value per variable, in a stable order
  for (const BrokeredCredential& bc : setup.broker->credentials()) {
    const policy::Credential& c = policy.credentials.at(bc.name);
    if (!c.env.empty()) env[c.env] = bc.phantom;
    std::string url =
        c.route.empty() ? "" : RouteUrl(options.proxy_host, options.proxy_port, c.route);
    for (const auto& [var, value] : c.route_env) {
      std::string v = value;
      size_t pos = 0;
      while ((pos = v.find("{route_url}", pos)) != std::string::npos) {
        v.replace(pos, 11, url);
        pos += url.size();
      }
      env[var] = v;
    }
  }
  if (!setup.broker->ca_pem().empty()) {
    std::string system =
        options.system_bundle_path.empty() ? FindSystemCaBundle() : options.system_bundle_path;
    auto bundle = MergedCaBundle(setup.broker->ca_pem(), system);
    if (!bundle.ok()) {
      return Status(bundle.status().code(), "the CA bundle: " + bundle.status().ToString());
    }
    setup.ca_bundle = std::move(bundle).value();
    // Bound over the system bundle, so that clients that ignore the variables trust it too.
    setup.ca_bundle_path = CaBundleTarget(system);
    for (std::string_view var : kCaBundleVariables) env[std::string(var)] = setup.ca_bundle_path;
  }
  for (auto& [k, v] : env) setup.env.emplace_back(k, std::move(v));
  return setup;
}

}  // namespace ward::net
