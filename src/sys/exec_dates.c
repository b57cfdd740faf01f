#include "sys/exec_dates.h"

void exec_dates_apply(struct procwatch *pw, struct profile *p, struct run *r, pid_t target, int64_t exec_ns)
{
	size_t i;

	procwatch_drain(pw);
	if (pw->fd < 0 || procwatch_lost(pw)) {
		if (procwatch_lost(pw))
			profile_add_warning(p, 0, "process events were lost: processes keep their estimated starts");
		return;
	}
	for (i = 0; i < r->nr_procs; i++) {
		struct proc *pr = &r->procs[i];
		size_t n = 0;
		int64_t at;

		if (pr->origin != ORIGIN_EXEC || pr->pid <= 0 || pr->tracer_ns < 0)
			continue;
		at = procwatch_exec_ns(pw, (pid_t)pr->pid, exec_ns, pr->tracer_ns, &n);
		if (at < 0)
			continue;
		if (pr->pid == target) {
			if (n < 2)
				continue; /* coldstart's own exec: the wall's origin stays the start */
			r->launcher_us = (at - exec_ns) / 1000;
		}
		proc_rebase(pr, at);
	}
}
