"""A Runtime API (2018-06-01) of the tests' own, over real sockets: it hands
out the events it is given, one per GET next (the next GET waits until
the test gives another or stops it), and records every request in order,
so that a test can say what a runtime asked for and posted, and when.

The tests use it for what the RIE cannot show: the order of a runtime's
requests against what its handler module did, headers the RIE never sends
(client context, Cognito identity, trace id), and the headers a runtime
posts with an error.
"""
import http.server
import json
import queue
import threading
import time


class Request(object):
    def __init__(self, method, path, headers, body):
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.time = time.monotonic()

    def json(self):
        return json.loads(self.body)


class RuntimeAPI(object):
    """with RuntimeAPI() as api: api.address for AWS_LAMBDA_RUNTIME_API;
    api.add_event(body, headers) queues an event; api.requests lists what
    came; api.wait_for(predicate) waits for a request."""

    def __init__(self):
        self.events = queue.Queue()
        self.requests = []
        self.cond = threading.Condition()
        self.on_next = None
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _record(self, body):
                req = Request(self.command, self.path,
                              {k.lower(): v for k, v in self.headers.items()},
                              body)
                if self.path.endswith("/invocation/next") and owner.on_next:
                    owner.on_next(req)
                with owner.cond:
                    owner.requests.append(req)
                    owner.cond.notify_all()

            def do_GET(self):
                self._record(b"")
                if not self.path.endswith("/runtime/invocation/next"):
                    self.send_error(404)
                    return
                item = owner.events.get()
                if item is None:
                    self.close_connection = True
                    return
                body, headers = item
                self.send_response(200)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                self._record(body)
                self.send_response(202)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      Handler)
        self.server.daemon_threads = True
        self.address = "127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        for _ in range(8):
            self.events.put(None)
        self.server.shutdown()
        self.server.server_close()

    def add_event(self, body, request_id, headers=None):
        h = {"Lambda-Runtime-Aws-Request-Id": request_id,
             "Lambda-Runtime-Deadline-Ms": str(int(time.time() * 1000)
                                               + 60000),
             "Lambda-Runtime-Invoked-Function-Arn":
                 "arn:aws:lambda:eu-west-1:123456789012:function:f",
             "Content-Type": "application/json"}
        h.update(headers or {})
        self.events.put((body if isinstance(body, bytes)
                         else body.encode("utf-8"), h))

    def wait_for(self, predicate, timeout=60):
        """The first request for which predicate(request) holds."""
        end = time.monotonic() + timeout
        with self.cond:
            while True:
                for r in self.requests:
                    if predicate(r):
                        return r
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        "no such request in %ds; got %s" % (timeout, [
                            (r.method, r.path) for r in self.requests]))
                self.cond.wait(left)

    def posted(self, request_id, timeout=60):
        return self.wait_for(lambda r: r.method == "POST"
                             and "/invocation/%s/" % request_id in r.path,
                             timeout)
