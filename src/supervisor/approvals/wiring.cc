#include "supervisor/approvals/wiring.h"

#include <string.h>
#include <sys/un.h>

#include <chrono>

#include "audit/session_log.h"
#include "supervisor/approvals/webhook.h"
#include "supervisor/runtime_dir.h"

namespace ward::supervisor {

std::vector<std::string> ApprovalChannelNames(const ApprovalRunOptions& opts, bool interactive) {
  std::vector<std::string> out = {"socket"};
  if (!opts.approver.empty()) {
    out.push_back("webhook");
  } else if (interactive) {
    out.push_back("terminal");
  }
  return out;
}

std::string ApprovalChannelsText(const std::vector<std::string>& channels) {
  std::string out;
  for (const std::string& c : channels) out += (out.empty() ? "" : ", ") + c;
  return out;
}

Status CheckApprovalRun(const ApprovalRunOptions& opts) {
  if (!opts.approver.empty()) {
    Result<WebhookUrl> url = ParseWebhookUrl(opts.approver);
    if (!url.ok()) return std::move(url).take_status().With("--approver");
    if (opts.approver_secret.empty()) {
      return InvalidArgument(
          "--approver needs a signing secret: --approver-secret-env VAR or "
          "--approver-secret-file FILE");
    }
    Result<std::string> secret = LoadWebhookSecret(opts.approver_secret);
    if (!secret.ok()) return std::move(secret).take_status().With("approver secret");
    // Only checked here, before the clone: the copy is wiped so that sandbox init (a copy of
    // this memory) does not hold it. The runtime loads it again after the clone.
    explicit_bzero(secret->data(), secret->size());
  } else if (!opts.approver_secret.empty()) {
    return InvalidArgument("an approver secret was given without --approver");
  }
  return Ok();
}

Result<std::unique_ptr<ApprovalsRuntime>> ApprovalsRuntime::Start(
    asio::io_context& io, const policy::Policy& policy, const enforce::LaunchPlan& plan,
    const ApprovalRunOptions& opts, Prompter* prompter, EventSink* events) {
  std::unique_ptr<ApprovalsRuntime> rt(new ApprovalsRuntime());
  rt->session_ = opts.session.empty() ? audit::NewSessionId() : opts.session;
  BrokerOptions bo;
  bo.policy = policy.approvals;
  bo.home = policy.home;
  WARD_ASSIGN_OR_RETURN(rt->broker_, ApprovalBroker::Create(io, std::move(bo), events));
  if (!opts.approver.empty()) {
    WebhookOptions wo;
    wo.url = opts.approver;
    WARD_ASSIGN_OR_RETURN(wo.secret, LoadWebhookSecret(opts.approver_secret));
    wo.session = rt->session_;
    wo.timeout = std::chrono::milliseconds(policy.approvals.timeout_ms);
    WARD_ASSIGN_OR_RETURN(std::unique_ptr<WebhookChannel> hook,
                          WebhookChannel::Create(io, std::move(wo)));
    rt->broker_->AddChannel(std::move(hook));
  } else if (prompter != nullptr) {
    rt->broker_->AddChannel(std::make_unique<PromptChannel>(prompter));
  }
  rt->channels_ = ApprovalChannelNames(opts, prompter != nullptr);

  WARD_ASSIGN_OR_RETURN(std::string dir, MakeWardRuntimeDir());
  ApprovalServerOptions so;
  so.path = ApprovalSocketPath(dir, rt->session_);
  so.session = rt->session_;
  so.events = events;  // refused peers go to the run's audit trail
  if (so.path.size() >= sizeof(sockaddr_un::sun_path)) {
    return InvalidArgument("the approval socket's path " + so.path + " is longer than a unix " +
                           "socket path may be; set XDG_RUNTIME_DIR to a shorter directory");
  }
  WARD_ASSIGN_OR_RETURN(rt->server_, ApprovalServer::Start(io, rt->broker_, so));
  rt->socket_path_ = rt->server_->path();
  rt->files_ = std::make_shared<FileApprovals>(FileView::From(plan, policy), rt->broker_, events);
  return rt;
}

net::AskHostFn ApprovalsRuntime::HostAsker() const {
  std::weak_ptr<ApprovalBroker> weak = broker_;
  return [weak](const net::HostQuestion& q, net::HostAnswerFn done) {
    std::shared_ptr<ApprovalBroker> broker = weak.lock();
    if (!broker) return done(false);
    ApprovalRequest request;
    request.subject = q.host;
    request.port = q.port;
    if (!q.method.empty()) {
      // A request an "ask" method and path rule matched: granted by method and path.
      if (broker->MatchRequest(q.host, q.port, q.method, q.path)) return done(true);
      request.kind = RequestKind::kRequest;
      request.method = q.method;
      request.path = q.path;
      request.rule = q.rule;
    } else {
      if (broker->Match(RequestKind::kHost, q.host, FileAccess::kRead, q.port)) return done(true);
      request.kind = RequestKind::kHost;
    }
    broker->Ask(std::move(request),
                [done = std::move(done)](const ApprovalDecision& d) { done(d.allow); });
  };
}

ApprovalsRuntime::~ApprovalsRuntime() { Stop(); }

void ApprovalsRuntime::Stop() {
  if (broker_) broker_->Shutdown();
  if (server_) server_->Stop();
  server_.reset();
}

}  // namespace ward::supervisor
