/*
 * Process events from the kernel's proc connector (netlink), kept for one
 * target's tree: its forks to know the tree, its execs to date them.
 */
#include "sys/procwatch.h"

#include <errno.h>
#include <stdlib.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Room for a busy machine's events between two turns of the run loop. */
#define RCVBUF_BYTES (8 << 20)

static bool followed(const struct procwatch *pw, pid_t pid)
{
	size_t i;

	for (i = 0; i < pw->nr_tree; i++)
		if (pw->tree[i] == pid)
			return true;
	return false;
}

static void on_event(struct procwatch *pw, const struct proc_event *ev)
{
	switch (ev->what) {
	case PROC_EVENT_FORK:
		/* A new thread has child_tgid == parent_tgid: nothing new to follow. */
		if (followed(pw, ev->event_data.fork.parent_tgid) && !followed(pw, ev->event_data.fork.child_tgid))
			procwatch_follow(pw, ev->event_data.fork.child_tgid);
		break;
	case PROC_EVENT_EXEC:
		if (followed(pw, ev->event_data.exec.process_tgid)) {
			ALLOC_GROW(pw->execs, pw->nr_execs + 1, pw->alloc_execs);
			pw->execs[pw->nr_execs].pid = ev->event_data.exec.process_tgid;
			/* The kernel stamps events with ktime_get_ns(): CLOCK_MONOTONIC. */
			pw->execs[pw->nr_execs].ns = (int64_t)ev->timestamp_ns;
			pw->nr_execs++;
		}
		break;
	default: break;
	}
}

void procwatch_init(struct procwatch *pw)
{
	memset(pw, 0, sizeof(*pw));
	pw->fd = -1;
}

int procwatch_open(struct procwatch *pw, struct buf *err)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
	struct {
		struct nlmsghdr h;
		struct cn_msg m;
		enum proc_cn_mcast_op op;
	} __attribute__((packed)) msg;
	int size = RCVBUF_BYTES;
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);

	if (fd < 0) {
		buf_addf(err, "cannot open the proc connector: %s", strerror(errno));
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	memset(&msg, 0, sizeof(msg));
	msg.h.nlmsg_len = sizeof(msg);
	msg.h.nlmsg_type = NLMSG_DONE;
	msg.h.nlmsg_pid = (unsigned)getpid();
	msg.m.id.idx = CN_IDX_PROC;
	msg.m.id.val = CN_VAL_PROC;
	msg.m.len = sizeof(msg.op);
	msg.op = PROC_CN_MCAST_LISTEN;
	/* Without CAP_NET_ADMIN the kernel refuses the listen request (EPERM). */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || send(fd, &msg, sizeof(msg), 0) < 0) {
		buf_addf(err, "cannot listen to process events: %s", strerror(errno));
		close(fd);
		return -1;
	}
	pw->fd = fd;
	return 0;
}

void procwatch_follow(struct procwatch *pw, pid_t pid)
{
	if (pid <= 0 || followed(pw, pid))
		return;
	ALLOC_GROW(pw->tree, pw->nr_tree + 1, pw->alloc_tree);
	pw->tree[pw->nr_tree++] = pid;
}

void procwatch_drain(struct procwatch *pw)
{
	char b[8192] __attribute__((aligned(NLMSG_ALIGNTO)));

	while (pw->fd >= 0) {
		ssize_t n = recv(pw->fd, b, sizeof(b), 0);
		struct nlmsghdr *h;
		size_t left;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				pw->lost = true;
				continue;
			}
			return; /* EAGAIN: nothing more queued */
		}
		left = (size_t)n;
		for (h = (struct nlmsghdr *)b; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			struct cn_msg *m = NLMSG_DATA(h);
			struct proc_event ev;

			if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_NOOP)
				continue;
			if (m->id.idx != CN_IDX_PROC || m->len < sizeof(struct proc_event))
				continue;
			/* The event follows a 20-byte header: copy it out to an aligned one. */
			memcpy(&ev, m->data, sizeof(ev));
			on_event(pw, &ev);
		}
	}
}

bool procwatch_lost(const struct procwatch *pw)
{
	return pw->lost;
}

int64_t procwatch_exec_ns(const struct procwatch *pw, pid_t pid, int64_t from_ns, int64_t to_ns, size_t *nr)
{
	int64_t at = -1;
	size_t i, n = 0;

	for (i = 0; i < pw->nr_execs; i++) {
		const struct procwatch_exec *e = &pw->execs[i];

		if (e->pid != pid || e->ns < from_ns || e->ns > to_ns)
			continue;
		n++;
		if (e->ns > at)
			at = e->ns;
	}
	if (nr)
		*nr = n;
	return at;
}

void procwatch_release(struct procwatch *pw)
{
	if (pw->fd >= 0)
		close(pw->fd);
	free(pw->tree);
	free(pw->execs);
	procwatch_init(pw);
}
