"""The floor for the Fn readiness benchmark: the least a Python process must
do to look ready to Fn's agent.  It binds a phony socket next to
FN_LISTENER with mode 0666 (the umask during bind(), as coldstart-fdk does:
a chmod() afterwards would follow a symlink planted in the socket's place),
links lsnr.sock to it, answers one POST /call with 200 and exits 0
(removing both), so coldstart-fdk's time-to-ready can be compared with this
one's.  Exit status 2: FN_LISTENER missing or invalid.
"""
import os
import sys

import _socket


def _read_request(conn):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = conn.recv(65536)
        if not d:
            return None
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip() or b"0")
    while len(body) < length:
        d = conn.recv(65536)
        if not d:
            break
        body += d
    return head.split(b"\r\n", 1)[0]


def main():
    value = os.environ.get("FN_LISTENER", "")
    if not value.startswith("unix:") or len(value) <= len("unix:"):
        sys.stderr.write("fdk_floor: FN_LISTENER must be unix:/path/lsnr.sock\n")
        return 2
    path = value[len("unix:"):]
    d, base = os.path.split(path)
    phony = os.path.join(d, "phony" + base)
    for p in (path, phony):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    old = os.umask(0o111)
    try:
        s.bind(phony)
    finally:
        os.umask(old)
    s.listen(16)
    os.symlink(os.path.basename(phony), path)
    try:
        while True:
            fd, _ = s._accept()
            conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, fd)
            line = _read_request(conn)
            if line is None:
                conn.close()
                continue
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
                         b"Connection: close\r\n\r\n")
            conn.close()
            if line.startswith(b"POST /call "):
                return 0
    finally:
        s.close()
        for p in (path, phony):
            try:
                os.unlink(p)
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(main())
