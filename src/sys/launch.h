/*
 * Child processes, in git's run-command life cycle: child_init, set fields,
 * child_start, read child->err_fd, child_finish.  Exec failures come back
 * over a close-on-exec pipe, so "python not found" is told apart from
 * "python failed".  No shell ever builds an argv.
 */
#ifndef COLDSTART_LAUNCH_H
#define COLDSTART_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "util.h"

struct child {
	/* In: argv (args.v[0] is looked up in PATH when it has no slash). */
	struct strvec args;
	/* In: the complete environment; when empty the child inherits ours. */
	struct strvec env;
	const char *dir; /* NULL: our cwd */
	bool capture_stderr; /* stderr into err_fd (a pipe) */
	bool capture_stdout; /* stdout into out_fd (a pipe) */
	bool null_stdin; /* stdin from /dev/null */
	int stdout_fd; /* >= 0: becomes the child's stdout (before stderr is redirected); -1: ours */
	/*
	 * Files (cgroup.procs or tasks) the child writes "0" into after fork
	 * and before exec, so it is inside its cgroups before the target runs.
	 * NULL-terminated, may be NULL.  Failure to join is an exec failure.
	 */
	const char *const *join_files;
	/*
	 * When env holds LAUNCH_EXEC_ENV "=" (a placeholder, strvec_push'd as
	 * LAUNCH_EXEC_PLACEHOLDER), the child writes into it, right before
	 * execve, its pid and the exec_ns below: "COLDSTART_EXEC=PID:NS".  The
	 * tracer takes it as the start of the process of that pid, so that the
	 * target's times count from exec on the same clock as the wall.
	 */
	/* Out. */
	pid_t pid;
	/*
	 * Readable once the child exits (a pidfd), so a loop can poll for the
	 * exit; -1 where the kernel has no pidfd_open (before 5.3): use SIGCHLD.
	 */
	int pidfd;
	int err_fd; /* -1 unless capture_stderr */
	int out_fd; /* -1 unless capture_stdout */
	int64_t start_ns; /* CLOCK_MONOTONIC just before fork */
	int64_t exec_ns; /* CLOCK_MONOTONIC in the child just before execve */
};

#define LAUNCH_EXEC_ENV "COLDSTART_EXEC"
/* Room for a pid and a CLOCK_MONOTONIC nanosecond count, each up to 20 digits. */
#define LAUNCH_EXEC_PLACEHOLDER LAUNCH_EXEC_ENV "=00000000000000000000:00000000000000000000"

struct child_exit {
	int exit_code; /* valid when !signaled */
	int term_signal; /* valid when signaled */
	bool signaled;
	int64_t wall_us; /* exec_ns to reaping: reap as soon as the exit is known */
	int64_t user_us;
	int64_t sys_us;
	int64_t maxrss_kb;
};

void child_init(struct child *c);
/*
 * Forks and execs.  Returns 0, or -1 with a message in err such as
 * "cannot run 'python9': No such file or directory" (errno is set to the
 * child's exec errno, so ENOENT can be told apart).
 */
int child_start(struct child *c, struct buf *err);
/* Non-blocking reap: 1 when the child ended and ex is filled, 0 if running, -1 on error. */
int child_poll(struct child *c, struct child_exit *ex);
/* Blocking reap. */
int child_finish(struct child *c, struct child_exit *ex);
/* Frees args, env and closes pipes; does not kill. */
void child_release(struct child *c);

/*
 * Sends sig to every living descendant of pid (walking /proc), deepest first,
 * then to pid itself when include_root.  Returns the number signalled.
 */
int kill_tree(pid_t pid, int sig, bool include_root);
/*
 * root and its living descendants (walking /proc), parents before their
 * children; *out (root first) is the caller's to free.  Returns how many.
 */
size_t launch_descendants(pid_t root, pid_t **out);
/*
 * True when one of pid's descriptors links (/proc/PID/fd/N) to a target
 * match(target, arg) accepts ("socket:[123]", "pipe:[456]", a path).
 */
bool launch_holds(pid_t pid, bool (*match)(const char *target, const void *arg), const void *arg);

/*
 * Opens /dev/null on whichever of fds 0, 1 and 2 is closed, so that no
 * descriptor coldstart opens later (the signal pipe, the target's stderr
 * pipe) takes a standard one's number.  Call it before anything else.
 * -1 when /dev/null cannot be opened.
 */
int launch_open_std_fds(void);

/*
 * Makes this process a child subreaper so orphaned descendants of the target
 * are reparented to coldstart and can be reaped and killed.
 */
void launch_become_subreaper(void);
/*
 * Reaps any exited children (non-blocking).  Only call it once the target
 * itself has been reaped, or it may take the target's status.
 */
void launch_reap_orphans(void);

#endif
