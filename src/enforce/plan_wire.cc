#include "enforce/plan_wire.h"

#include <linux/filter.h>

#include <cstdint>

#include "enforce/bpf.h"
#include "enforce/wire.h"

namespace ward::enforce {
namespace {

using wire::Reader;
using wire::Writer;

constexpr uint32_t kMagic = 0x31504957;  // "WIP1"

void PutMount(Writer& w, const MountSpec& m) {
  w.Vec(m.ops, [&](const MountOp& op) {
    w.Raw<uint8_t>(static_cast<uint8_t>(op.kind));
    w.Str(op.source);
    w.Str(op.target);
    w.Bool(op.writable);
    w.Bool(op.is_dir);
    w.Bool(op.beneath_workspace);
    w.Str(op.overlay_upper);
    w.Str(op.overlay_work);
    w.Raw<uint64_t>(op.size);
    w.Raw<uint32_t>(op.mode);
    w.Str(op.content);
    w.Str(op.why);
  });
  w.Vec(m.masks, [&](const MaskOp& mask) {
    w.Str(mask.target);
    w.Str(mask.why);
  });
  w.Strs(m.protect.roots);
  w.Strs(m.protect.relpaths);
  w.Raw<int32_t>(m.protect.nested_repo_depth);
  w.Str(m.workdir);
  w.Str(m.workspace);
  w.Str(m.hostname);
  w.Vec(m.sysctls, [&](const Sysctl& sysctl) {
    w.Str(sysctl.path);
    w.Str(sysctl.value);
    w.Bool(sysctl.optional);
  });
  w.Bool(m.by_path);
}

bool GetMount(Reader& r, MountSpec* m) {
  // Each op takes at least its kind, six length words, three booleans, size and mode.
  const bool ops = r.Vec("mount.ops", 1 + 6 * 8 + 3 + 8 + 4, &m->ops, [&](MountOp& op) {
    uint8_t kind = 0;
    if (!r.Raw("mount.ops.kind", &kind)) return false;
    if (kind > static_cast<uint8_t>(MountOp::Kind::kFile)) {
      return r.Fail("mount.ops.kind", "unknown kind");
    }
    op.kind = static_cast<MountOp::Kind>(kind);
    return r.Str("mount.ops.source", &op.source) && r.Str("mount.ops.target", &op.target) &&
           r.Bool("mount.ops.writable", &op.writable) && r.Bool("mount.ops.is_dir", &op.is_dir) &&
           r.Bool("mount.ops.beneath_workspace", &op.beneath_workspace) &&
           r.Str("mount.ops.overlay_upper", &op.overlay_upper) &&
           r.Str("mount.ops.overlay_work", &op.overlay_work) &&
           r.Raw("mount.ops.size", &op.size) && r.Raw("mount.ops.mode", &op.mode) &&
           r.Str("mount.ops.content", &op.content) && r.Str("mount.ops.why", &op.why);
  });
  int32_t depth = 0;
  const bool ok = ops &&
                  r.Vec("mount.masks", 2 * 8, &m->masks,
                        [&](MaskOp& mask) {
                          return r.Str("mount.masks.target", &mask.target) &&
                                 r.Str("mount.masks.why", &mask.why);
                        }) &&
                  r.Strs("mount.protect.roots", &m->protect.roots) &&
                  r.Strs("mount.protect.relpaths", &m->protect.relpaths) &&
                  r.Raw("mount.protect.nested_repo_depth", &depth) &&
                  r.Str("mount.workdir", &m->workdir) && r.Str("mount.workspace", &m->workspace) &&
                  r.Str("mount.hostname", &m->hostname) &&
                  r.Vec("mount.sysctls", 2 * 8 + 1, &m->sysctls,
                        [&](Sysctl& sysctl) {
                          return r.Str("mount.sysctls.path", &sysctl.path) &&
                                 r.Str("mount.sysctls.value", &sysctl.value) &&
                                 r.Bool("mount.sysctls.optional", &sysctl.optional);
                        }) &&
                  r.Bool("mount.by_path", &m->by_path);
  m->protect.nested_repo_depth = depth;
  return ok;
}

void PutPorts(Writer& w, const std::vector<uint16_t>& ports) {
  w.Vec(ports, [&](uint16_t p) { w.Raw(p); });
}

bool GetPorts(Reader& r, const char* field, std::vector<uint16_t>* ports) {
  return r.Vec(field, sizeof(uint16_t), ports, [&](uint16_t& p) { return r.Raw(field, &p); });
}

void PutLandlock(Writer& w, const LandlockSpec& l) {
  w.Bool(l.enabled);
  w.Raw<int32_t>(l.abi);
  w.Vec(l.paths, [&](const LandlockPath& p) {
    w.Str(p.path);
    w.Bool(p.writable);
    w.Bool(p.device);
    w.Bool(p.proc);
  });
  PutPorts(w, l.connect_tcp);
  w.Bool(l.connect_any);
  PutPorts(w, l.bind_tcp);
  w.Bool(l.tcp);
}

bool GetLandlock(Reader& r, LandlockSpec* l) {
  int32_t abi = 0;
  const bool ok = r.Bool("landlock.enabled", &l->enabled) && r.Raw("landlock.abi", &abi) &&
                  r.Vec("landlock.paths", 8 + 3, &l->paths,
                        [&](LandlockPath& p) {
                          return r.Str("landlock.paths.path", &p.path) &&
                                 r.Bool("landlock.paths.writable", &p.writable) &&
                                 r.Bool("landlock.paths.device", &p.device) &&
                                 r.Bool("landlock.paths.proc", &p.proc);
                        }) &&
                  GetPorts(r, "landlock.connect_tcp", &l->connect_tcp) &&
                  r.Bool("landlock.connect_any", &l->connect_any) &&
                  GetPorts(r, "landlock.bind_tcp", &l->bind_tcp) &&
                  r.Bool("landlock.tcp", &l->tcp);
  l->abi = abi;
  return ok;
}

void PutProcess(Writer& w, const ProcessSpec& p) {
  w.Strs(p.argv);
  w.Strs(p.env);
  w.Str(p.workdir);
  w.Vec(p.rlimits, [&](const ProcessSpec::Rlimit& rl) {
    w.Raw<int32_t>(rl.resource);
    w.Raw<uint64_t>(rl.soft);
    w.Raw<uint64_t>(rl.hard);
  });
  w.Vec(p.container_seccomp, [&](const sock_filter& f) {
    w.Raw<uint16_t>(f.code);
    w.Raw<uint8_t>(f.jt);
    w.Raw<uint8_t>(f.jf);
    w.Raw<uint32_t>(f.k);
  });
}

bool GetProcess(Reader& r, ProcessSpec* p) {
  return r.Strs("process.argv", &p->argv) && r.Strs("process.env", &p->env) &&
         r.Str("process.workdir", &p->workdir) &&
         r.Vec("process.rlimits", 4 + 2 * 8, &p->rlimits, [&](ProcessSpec::Rlimit& rl) {
           int32_t resource = 0;
           uint64_t soft = 0, hard = 0;
           if (!r.Raw("process.rlimits", &resource) || !r.Raw("process.rlimits", &soft) ||
               !r.Raw("process.rlimits", &hard)) {
             return false;
           }
           rl = {resource, static_cast<rlim_t>(soft), static_cast<rlim_t>(hard)};
           return true;
         }) &&
         r.Vec("process.container_seccomp", 8, &p->container_seccomp, [&](sock_filter& f) {
           return r.Raw("process.container_seccomp", &f.code) &&
                  r.Raw("process.container_seccomp", &f.jt) &&
                  r.Raw("process.container_seccomp", &f.jf) &&
                  r.Raw("process.container_seccomp", &f.k);
         }) &&
         p->container_seccomp.size() <= kBpfMaxInsns;
}

}  // namespace

std::string EncodeInitPlan(const LaunchPlan& plan, const InitLaunch& launch) {
  Writer w;
  w.Raw(kMagic);
  w.Bool(launch.unshare_cgroup_ns);
  w.Raw<uint32_t>(plan.uid);
  w.Raw<uint32_t>(plan.gid);
  w.Bool(plan.privileged);
  PutMount(w, plan.mount);
  PutLandlock(w, plan.landlock);
  w.Bool(plan.seccomp_enabled);
  w.Vec(plan.seccomp.insns, [&](const struct sock_filter& f) { w.Raw(f); });
  PutProcess(w, plan.process);
  w.Bool(plan.exec_server);
  w.Bool(plan.container_init);
  w.Bool(plan.await_late_setup);
  w.Raw<int32_t>(plan.late_file_op);
  w.Bool(plan.cgroup_after_clone);
  for (bool t : plan.tty) w.Bool(t);
  w.Bool(plan.has_termios);
  w.Raw(plan.termios);
  w.Bool(plan.has_winsize);
  w.Raw(plan.winsize);
  return w.Take();
}

Status DecodeInitPlan(std::string_view bytes, LaunchPlan* plan, InitLaunch* launch) {
  Reader r(bytes);
  uint32_t magic = 0, uid = 0, gid = 0;
  int32_t late_file_op = -1;
  if (r.Raw("magic", &magic) && magic != kMagic) r.Fail("magic", "not a launch plan");
  const bool read =
      r.Bool("unshare_cgroup_ns", &launch->unshare_cgroup_ns) && r.Raw("uid", &uid) &&
      r.Raw("gid", &gid) && r.Bool("privileged", &plan->privileged) && GetMount(r, &plan->mount) &&
      GetLandlock(r, &plan->landlock) && r.Bool("seccomp_enabled", &plan->seccomp_enabled) &&
      r.Vec("seccomp.insns", sizeof(struct sock_filter), &plan->seccomp.insns,
            [&](struct sock_filter& f) { return r.Raw("seccomp.insns", &f); }) &&
      GetProcess(r, &plan->process) && r.Bool("exec_server", &plan->exec_server) &&
      r.Bool("container_init", &plan->container_init) &&
      r.Bool("await_late_setup", &plan->await_late_setup) &&
      r.Raw("late_file_op", &late_file_op) &&
      r.Bool("cgroup_after_clone", &plan->cgroup_after_clone) && r.Bool("tty", &plan->tty[0]) &&
      r.Bool("tty", &plan->tty[1]) && r.Bool("tty", &plan->tty[2]) &&
      r.Bool("has_termios", &plan->has_termios) && r.Raw("termios", &plan->termios) &&
      r.Bool("has_winsize", &plan->has_winsize) && r.Raw("winsize", &plan->winsize);
  if (read) {
    if (late_file_op < -1 ||
        (late_file_op >= 0 && static_cast<size_t>(late_file_op) >= plan->mount.ops.size())) {
      r.Fail("late_file_op", "not a mount op");
    } else if (!r.AtEnd()) {
      r.Fail("end", "trailing bytes");
    }
  }
  plan->uid = uid;
  plan->gid = gid;
  plan->late_file_op = late_file_op;
  if (!r.error().empty()) return InvalidArgument("launch plan: " + r.error());
  return Ok();
}

}  // namespace ward::enforce
