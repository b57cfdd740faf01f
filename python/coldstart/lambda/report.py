"""The REPORT line of the first invocation (COLDSTART_LAMBDA_REPORT=1): what
Lambda's own REPORT line says of init and the first call, measured inside
the process, with the CPU time beside the wall time.

Init runs from the process's start (its start time in /proc, kept by the
kernel in clock ticks, 10 ms here) to the first GET next; the invocation
from there to the answer posted.  CPU times are the process's own (user +
system, all threads), to the nanosecond (CLOCK_PROCESS_CPUTIME_ID).
"""

import os
import sys
import time


def _process_start_boottime():
    """Seconds since boot at which this process started, or None."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        fields = stat[stat.rindex(b")") + 2:].split()
        return int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _cpu():
    # CLOCK_PROCESS_CPUTIME_ID: user + system of every thread, in
    # nanoseconds.  (os.times() counts clock ticks: an init of less than
    # 10 ms of CPU read as 0.)
    return time.process_time()


def _boottime():
    return time.clock_gettime(time.CLOCK_BOOTTIME)


class Report(object):
    def __init__(self):
        self.init_wall = None
        self.init_cpu = None
        self.t_arrived = None
        self.cpu_next = None

    def init_done(self):
        if self.init_wall is not None:
            return
        now = _boottime()
        self.init_cpu = _cpu()
        start = _process_start_boottime()
        self.init_wall = now - start if start is not None else None

    def line(self, invoke_id):
        """The line for the call that began after init_done()."""
        # The call's time starts when the event arrives, not when GET next
        # was sent: the wait for the event is neither init nor the call.
        wall = time.monotonic() - self.t_arrived
        cpu = _cpu() - self.cpu_next
        rss = 0
        try:
            import resource
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        except (ImportError, OSError):
            pass
        init = ("%.2f ms" % (self.init_wall * 1000)
                if self.init_wall is not None else "unknown")
        return ("REPORT RequestId: %s\tInit Duration: %s\tInit CPU: %.2f ms\t"
                "Duration: %.2f ms\tDuration CPU: %.2f ms\t"
                "Max Memory Used: %d MB" % (
                    invoke_id, init, self.init_cpu * 1000, wall * 1000,
                    cpu * 1000, rss))

    def arrived(self):
        self.t_arrived = time.monotonic()
        self.cpu_next = _cpu()

    def invoked(self, invoke_id, log_sink):
        try:
            sys.stderr.write("coldstart-lambda: %s\n" % self.line(invoke_id))
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
