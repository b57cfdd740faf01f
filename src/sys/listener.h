/*
 * Who listens: the socket inodes of listening TCP ports and unix socket
 * paths (/proc/net/tcp, tcp6, unix) and the processes that hold them
 * (/proc/PID/fd), so that readiness can tell the target's own listener from
 * something else's.  Linux only.
 */
#ifndef COLDSTART_LISTENER_H
#define COLDSTART_LISTENER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct listeners {
	uint64_t *ino;
	size_t nr, alloc;
};

void listeners_release(struct listeners *ls);
/*
 * Parses the text of /proc/net/tcp or /proc/net/tcp6 and appends the inodes
 * of the sockets in LISTEN state on port.  Malformed rows are skipped.
 */
void listeners_parse_tcp(struct listeners *ls, const char *text, int port);
/* The same for /proc/net/unix: listening sockets bound to path. */
void listeners_parse_unix(struct listeners *ls, const char *text, const char *path);
/* Reads the kernel's tables: the listeners on TCP port (IPv4 and IPv6) or unix path. */
void listeners_find_tcp(struct listeners *ls, int port);
void listeners_find_unix(struct listeners *ls, const char *path);
/* True when inode is in ls. */
int listeners_has(const struct listeners *ls, uint64_t ino);
/*
 * The first of pids that holds a descriptor of one of ls's sockets, or 0.
 * With pids NULL, every process on the system is looked at.
 */
pid_t listeners_holder(const struct listeners *ls, const pid_t *pids, size_t nr);

#endif
