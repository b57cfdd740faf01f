/*
 * Listening sockets and their holders from /proc (see listener.h): a
 * socket's inode links the kernel's table to "socket:[INODE]" in the fd
 * directory of every process that holds it.
 */
#include "sys/listener.h"

#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys/launch.h"
#include "util.h"

/* st of a TCP socket in LISTEN (include/net/tcp_states.h). */
#define TCP_LISTEN_STATE 0x0A
/* Flags of a unix socket that listens (__SO_ACCEPTCON). */
#define UNIX_ACCEPTCON 0x10000

static void add_ino(struct listeners *ls, uint64_t ino)
{
	if (!ino || listeners_has(ls, ino))
		return;
	ALLOC_GROW(ls->ino, ls->nr + 1, ls->alloc);
	ls->ino[ls->nr++] = ino;
}

/* Splits one line into at most max space-separated fields; returns how many. */
static size_t split_fields(char *line, char **f, size_t max)
{
	size_t n = 0;
	char *p = line;

	while (n < max) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		f[n++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		if (!*p)
			break;
		*p++ = '\0';
	}
	return n;
}

/* Calls fn for each line of text after the header, on a writable copy. */
static void each_row(const char *text, void (*fn)(char *line, void *data), void *data)
{
	const char *line = strchr(text, '\n');

	while (line && *++line) {
		const char *nl = strchr(line, '\n');
		char *copy = xstrndup(line, nl ? (size_t)(nl - line) : strlen(line));

		fn(copy, data);
		free(copy);
		line = nl;
	}
}

struct tcp_want {
	struct listeners *ls;
	int port;
};

/* "  0: 0100007F:1F90 00000000:0000 0A ... uid timeout inode ..." */
static void tcp_row(char *line, void *data)
{
	struct tcp_want *w = data;
	char *f[10], *colon, *end;
	unsigned long port, st;
	unsigned long long ino;

	if (split_fields(line, f, ARRAY_SIZE(f)) < 10 || !(colon = strrchr(f[1], ':')))
		return;
	port = strtoul(colon + 1, &end, 16);
	if (*end || (int)port != w->port)
		return;
	st = strtoul(f[3], &end, 16);
	if (*end || st != TCP_LISTEN_STATE)
		return;
	ino = strtoull(f[9], &end, 10);
	if (!*end)
		add_ino(w->ls, ino);
}

struct unix_want {
	struct listeners *ls;
	const char *path;
};

/* "0000000034d6302c: 00000002 00000000 00010000 0001 01 287001 /path" */
static void unix_row(char *line, void *data)
{
	struct unix_want *w = data;
	char *f[7], *end, *path, *eol = line + strlen(line);
	unsigned long flags;
	unsigned long long ino;
	size_t n;

	n = split_fields(line, f, ARRAY_SIZE(f));
	if (n < 7)
		return;
	/* The path is the rest of the line and may hold spaces; a socket without one ends the line. */
	path = f[6] + strlen(f[6]);
	if (path < eol)
		path++;
	while (*path == ' ')
		path++;
	if (strcmp(path, w->path))
		return;
	flags = strtoul(f[3], &end, 16);
	if (*end || !(flags & UNIX_ACCEPTCON))
		return;
	ino = strtoull(f[6], &end, 10);
	if (!*end)
		add_ino(w->ls, ino);
}

static int read_text(const char *path, struct buf *out)
{
	buf_reset(out);
	return buf_read_file(out, path);
}

void listeners_release(struct listeners *ls)
{
	free(ls->ino);
	memset(ls, 0, sizeof(*ls));
}

void listeners_parse_tcp(struct listeners *ls, const char *text, int port)
{
	struct tcp_want w = { ls, port };

	each_row(text, tcp_row, &w);
}

void listeners_parse_unix(struct listeners *ls, const char *text, const char *path)
{
	struct unix_want w = { ls, path };

	each_row(text, unix_row, &w);
}

void listeners_find_tcp(struct listeners *ls, int port)
{
	static const char *const tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	struct buf text = BUF_INIT;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(tables); i++)
		if (!read_text(tables[i], &text))
			listeners_parse_tcp(ls, text.buf, port);
	buf_release(&text);
}

void listeners_find_unix(struct listeners *ls, const char *path)
{
	struct buf text = BUF_INIT;

	if (!read_text("/proc/net/unix", &text))
		listeners_parse_unix(ls, text.buf, path);
	buf_release(&text);
}

int listeners_has(const struct listeners *ls, uint64_t ino)
{
	size_t i;

	for (i = 0; i < ls->nr; i++)
		if (ls->ino[i] == ino)
			return 1;
	return 0;
}

static bool is_listener(const char *target, const void *arg)
{
	return starts_with(target, "socket:[") &&
	       listeners_has((const struct listeners *)arg, strtoull(target + 8, NULL, 10));
}

/* True when pid holds a descriptor of one of ls's sockets. */
static bool holds(const struct listeners *ls, pid_t pid)
{
	return launch_holds(pid, is_listener, ls);
}

pid_t listeners_holder(const struct listeners *ls, const pid_t *pids, size_t nr)
{
	struct dirent *de;
	pid_t found = 0;
	size_t i;
	DIR *d;

	if (!ls->nr)
		return 0;
	if (pids) {
		for (i = 0; i < nr; i++)
			if (holds(ls, pids[i]))
				return pids[i];
		return 0;
	}
	d = opendir("/proc");
	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		pid_t pid = (pid_t)atol(de->d_name);

		if (pid > 0 && isdigit((unsigned char)de->d_name[0]) && holds(ls, pid))
			found = pid;
	}
	closedir(d);
	return found;
}
