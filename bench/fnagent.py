"""A small Fn agent for the plan benchmark: starts a function process
(optionally inside cgroup v1 cpu, cpuacct and memory groups created for it
at the hierarchy root), waits for the lsnr.sock symlink, sends POST /call
requests and returns the timings, the group's CPU time at the first
response, the responses and the group's peak memory.  Groups,
sockets and the process are removed on every path, Ctrl-C included.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

CG_ROOT = "/sys/fs/cgroup"


def interrupt_on_term():
    """SIGTERM and SIGHUP interrupt as Ctrl-C does, so that run()'s cleanup
    (the process group, the groups, the socket directory) happens for them
    too; the default action would leave a function process running in its
    group."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


class Cgroup(object):
    """cgroup v1 cpu + cpuacct + memory groups named
    coldstart-planbench-<pid>-<n>.  Where cpu and cpuacct are co-mounted
    (/sys/fs/cgroup/cpu,cpuacct with cpu and cpuacct linking to it) the cpu
    group is the cpuacct group; without a cpuacct hierarchy cpu_ns() is
    None."""
    seq = 0

    def __init__(self, cpus, memory):
        Cgroup.seq += 1
        name = "coldstart-planbench-%d-%d" % (os.getpid(), Cgroup.seq)
        self.dirs = []
        try:
            cpu = os.path.join(CG_ROOT, "cpu", name)
            os.mkdir(cpu)
            self.dirs.append(cpu)
            period = 100000
            _write(os.path.join(cpu, "cpu.cfs_period_us"), period)
            _write(os.path.join(cpu, "cpu.cfs_quota_us"), int(period * cpus))
            self.acct = None
            acct_root = os.path.join(CG_ROOT, "cpuacct")
            if os.path.exists(os.path.join(cpu, "cpuacct.usage")):
                self.acct = cpu
            elif os.path.isdir(acct_root):
                acct = os.path.join(acct_root, name)
                os.mkdir(acct)
                self.dirs.append(acct)
                self.acct = acct
            mem = os.path.join(CG_ROOT, "memory", name)
            os.mkdir(mem)
            self.dirs.append(mem)
            _write(os.path.join(mem, "memory.limit_in_bytes"), memory)
            try:
                _write(os.path.join(mem, "memory.memsw.limit_in_bytes"), memory)
            except OSError:
                pass
            self.mem = mem
        except BaseException:
            self.remove()
            raise

    def tasks(self):
        return [os.path.join(d, "tasks") for d in self.dirs]

    def cpu_ns(self):
        """CPU time of every process that ran in the group so far, in
        nanoseconds (cpuacct.usage); None without a cpuacct group."""
        if self.acct is None:
            return None
        with open(os.path.join(self.acct, "cpuacct.usage")) as f:
            return int(f.read())

    def peak(self):
        with open(os.path.join(self.mem, "memory.max_usage_in_bytes")) as f:
            return int(f.read())

    def oom_killed(self):
        try:
            with open(os.path.join(self.mem, "memory.oom_control")) as f:
                for line in f:
                    if line.startswith("oom_kill "):
                        return int(line.split()[1]) > 0
        except OSError:
            pass
        return False

    def remove(self):
        for d in reversed(self.dirs):
            for _ in range(100):
                try:
                    with open(os.path.join(d, "tasks")) as f:
                        for pid in f.read().split():
                            try:
                                os.kill(int(pid), signal.SIGKILL)
                            except OSError:
                                pass
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.dirs = []


def _write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def request_bytes(body, call_id="bench-call"):
    deadline = time.strftime("%Y-%m-%dT%H:%M:%SZ",
                             time.gmtime(time.time() + 120))
    head = ("POST /call HTTP/1.1\r\nHost: localhost\r\nFn-Call-Id: %s\r\n"
            "Fn-Deadline: %s\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % (call_id, deadline, len(body)))
    return head.encode() + body


def read_response(s, deadline):
    buf = b""
    while b"\r\n\r\n" not in buf:
        s.settimeout(max(deadline - time.monotonic(), 0.001))
        d = s.recv(65536)
        if not d:
            raise ConnectionError("connection closed before a response")
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    length = None
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    if length is None:
        raise ValueError("response without Content-Length")
    while len(body) < length:
        s.settimeout(max(deadline - time.monotonic(), 0.001))
        d = s.recv(65536)
        if not d:
            raise ConnectionError("connection closed in the body")
        body += d
    return head, body[:length]


def fn_status(head):
    status = int(head.split(b" ", 2)[1])
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"fn-http-status":
            return int(v.strip())
    return status


def cpu_ns(pid):
    """CPU time the process's threads have run so far, in nanoseconds
    (/proc/PID/task/*/schedstat: the scheduler's own count, exact where
    rusage has a tick's resolution); None when it is gone."""
    total = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def run(argv, env, bodies, cpus=None, memory=None, timeout=120.0,
        stderr_path=None):
    """Runs one function process; returns a dict with ready_ms, first_ms
    (exec -> first response), first_at (time.monotonic() then),
    first_cpu_ms (the main process's CPU time when the first response
    arrived), first_cg_cpu_ms (the group's: every
    process of the function, children included; None without groups),
    responses [(fn status, body)], peak_bytes, error (None when every
    request was answered)."""
    d = tempfile.mkdtemp(prefix="planbench-", dir="/tmp")
    sock_path = os.path.join(d, "lsnr.sock")
    env = dict(env, FN_LISTENER="unix:" + sock_path, FN_FORMAT="http-stream")
    cg = Cgroup(cpus, memory) if cpus else None
    out = {"ready_ms": None, "first_ms": None, "first_at": None,
           "first_cpu_ms": None,
           "first_cg_cpu_ms": None, "responses": [],
           "peak_bytes": None, "error": None}
    p = None
    err = open(stderr_path or os.devnull, "wb")
    try:
        tasks = cg.tasks() if cg else []

        def join():
            for t in tasks:
                with open(t, "w") as f:
                    f.write("0")
        t0 = time.monotonic()
        p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                             stdout=err, stderr=err, preexec_fn=join,
                             start_new_session=True)
        limit = t0 + timeout
        while not os.path.islink(sock_path):
            if p.poll() is not None:
                out["error"] = "exited with %s before ready" % p.returncode
                return out
            if time.monotonic() > limit:
                out["error"] = "not ready after %.0f s" % timeout
                return out
            time.sleep(0.001)
        out["ready_ms"] = (time.monotonic() - t0) * 1000
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(sock_path)
            for i, body in enumerate(bodies):
                s.sendall(request_bytes(body, "bench-call-%d" % i))
                head, rbody = read_response(s, limit)
                if i == 0:
                    out["first_at"] = time.monotonic()
                    out["first_ms"] = (out["first_at"] - t0) * 1000
                    c = cpu_ns(p.pid)
                    out["first_cpu_ms"] = c / 1e6 if c is not None else None
                    c = cg.cpu_ns() if cg else None
                    out["first_cg_cpu_ms"] = c / 1e6 if c is not None \
                        else None
                out["responses"].append((fn_status(head), rbody))
        except (OSError, ValueError) as e:
            out["error"] = "request failed: %s" % e
        finally:
            s.close()
        return out
    finally:
        if p is not None:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except OSError:
                    pass
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        if cg is not None:
            try:
                out["peak_bytes"] = cg.peak()
                if cg.oom_killed():
                    out["error"] = (out["error"] or "") + " (OOM killed)"
            except OSError:
                pass
            cg.remove()
        err.close()
        shutil.rmtree(d, ignore_errors=True)
