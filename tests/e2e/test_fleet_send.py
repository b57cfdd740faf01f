"""coldstart profile --otlp URL / --push-gateway URL: the run is sent as it
ends to a real OTLP/HTTP receiver run by the test (Python's http.server
capturing the request, decoded by the official OpenTelemetry bindings) and
to a real Prometheus Pushgateway; failures (refused, an error answer, a
receiver that never answers) end in a clear message and exit 1 within the
--send-timeout, and the local profile is written all the same."""
import http.server
import json
import os
import threading
import time

import pytest

import shutil

import fleet_util as fu
from conftest import DEBIAN_PYTHON

needs_otlp = pytest.mark.skipif(bool(fu.missing_otlp_oracle()), reason=fu.missing_otlp_oracle() or "ready")


class Receiver:
    """An OTLP/HTTP receiver on a free loopback port: records each request; answers `status`,
    or with hang=True accepts and never answers (and records when the client gave up)."""

    def __init__(self, status=200, hang=False):
        self.requests = []
        self.closed_after = []
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                t0 = time.monotonic()
                body = self.rfile.read(int(self.headers["Content-Length"]))
                rec.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if hang:
                    # Wait for the client to close its end: then it gave up.
                    self.connection.settimeout(30)
                    try:
                        while self.connection.recv(1):
                            pass
                    except OSError:
                        pass
                    rec.closed_after.append(time.monotonic() - t0)
                    self.close_connection = True
                    return
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                msg = b"" if status == 200 else b"bad span batch"
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                self.wfile.write(msg)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


@pytest.fixture
def receiver(request):
    r = Receiver(**getattr(request, "param", {}))
    yield r
    r.stop()


def app(tmp_path):
    script = tmp_path / "app.py"
    script.write_text("import json, email.parser\nopen(%r, 'w').write('ran')\n" % str(tmp_path / "ran"))
    return script


@needs_otlp
def test_otlp_protobuf_sent_to_a_bare_url_goes_to_v1_traces(coldstart, receiver, tmp_path):
    out = tmp_path / "p.json"
    before = time.time_ns()
    r = coldstart("profile", "--no-report", "-o", out, "--otlp", receiver.url, "--python", DEBIAN_PYTHON,
                  app(tmp_path), env={"OTEL_SERVICE_NAME": "checkout", "OTEL_EXPORTER_OTLP_HEADERS":
                                      "x-api-key=s3cr%20t,x-team=fleet"})
    after = time.time_ns()
    assert r.returncode == 0, r.stderr
    assert len(receiver.requests) == 1
    req = receiver.requests[0]
    assert req["path"] == "/v1/traces"
    assert req["headers"]["Content-Type"] == "application/x-protobuf"
    assert req["headers"]["x-api-key"] == "s3cr t" and req["headers"]["x-team"] == "fleet"
    (tmp_path / "sent.pb").write_bytes(req["body"])
    res = fu.otlp_check(tmp_path / "sent.pb", "protobuf")
    assert res["ok"], res.get("error")
    assert res["resource"]["service.name"] == "checkout"
    doc = json.loads(out.read_text())
    assert res["traces"] == len(doc["runs"])
    root = [s for s in res["spans_list"] if not s["parent"]][0]
    # A run sent as it ends is placed at its real time, not at the profile's stamp (to the second).
    assert before <= int(root["start"]) <= int(root["end"]) <= after
    main = doc["runs"][0]["processes"][0]
    assert root["attrs"]["process.pid"] == str(main["pid"])
    assert int(root["end"]) - int(root["start"]) >= main["end_ns"] - main["start_ns"]


@needs_otlp
def test_otlp_json_by_the_sdk_protocol_variable(coldstart, receiver, tmp_path):
    r = coldstart("profile", "--no-report", "--otlp", receiver.url + "/custom/traces", "--python",
                  DEBIAN_PYTHON, app(tmp_path), env={"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
    assert r.returncode == 0, r.stderr
    req = receiver.requests[0]
    assert req["path"] == "/custom/traces"
    assert req["headers"]["Content-Type"] == "application/json"
    (tmp_path / "sent.json").write_bytes(req["body"])
    res = fu.otlp_check(tmp_path / "sent.json", "json")
    assert res["ok"], res.get("error")


@pytest.mark.parametrize("receiver", [{"status": 400}], indirect=True)
def test_collector_refusing_is_exit_1_and_the_profile_is_written(coldstart, receiver, tmp_path):
    out = tmp_path / "p.json"
    r = coldstart("profile", "--no-report", "-o", out, "--otlp", receiver.url, "--python", DEBIAN_PYTHON,
                  app(tmp_path))
    assert r.returncode == 1
    assert "cannot send the trace to '%s': answered 400 Bad Request: bad span batch" % receiver.url in r.stderr
    assert json.loads(out.read_text())["runs"]


@pytest.mark.parametrize("receiver", [{"hang": True}], indirect=True)
def test_collector_that_never_answers_is_given_up_after_the_timeout(coldstart, receiver, tmp_path):
    out = tmp_path / "p.json"
    r = coldstart("profile", "--no-report", "-o", out, "--otlp", receiver.url, "--send-timeout", "1",
                  "--python", DEBIAN_PYTHON, app(tmp_path), timeout=60)
    assert r.returncode == 1
    assert "no answer before the timeout" in r.stderr
    assert json.loads(out.read_text())["runs"]
    deadline = time.monotonic() + 10
    while not receiver.closed_after and time.monotonic() < deadline:
        time.sleep(0.05)
    print("the client closed %.3f s after its request" % receiver.closed_after[0])
    # --send-timeout 1: the client gives up after a second, not after the receiver's 30.
    assert receiver.closed_after[0] < 3.0


def test_refused_connection_is_exit_1(coldstart, tmp_path):
    port = fu.free_port()
    out = tmp_path / "p.json"
    r = coldstart("profile", "--no-report", "-o", out, "--push-gateway", "http://127.0.0.1:%d" % port,
                  "--python", DEBIAN_PYTHON, app(tmp_path))
    assert r.returncode == 1
    assert "cannot push the metrics to 'http://127.0.0.1:%d': cannot connect: Connection refused" % port in r.stderr
    assert out.exists()


@pytest.mark.parametrize("url,message", [
    ("https://collector:4318", "https is not supported"),
    ("collector:4318", "expected http://HOST[:PORT][/PATH]"),
    ("http://:4318/", "no host"),
    ("http://collector:99999", "the port must be 1 to 65535"),
    ("http://user:pw@collector/", "credentials in the URL are not supported"),
])
@pytest.mark.parametrize("option", ["--otlp", "--push-gateway"])
def test_bad_urls_are_usage_errors_before_the_run(coldstart, tmp_path, option, url, message):
    r = coldstart("profile", option, url, "--python", DEBIAN_PYTHON, app(tmp_path))
    assert r.returncode == 2
    assert message in r.stderr and option in r.stderr
    assert not (tmp_path / "ran").exists()


@pytest.mark.skipif(not shutil.which("prometheus-pushgateway"),
                    reason="prometheus-pushgateway is not installed (Debian prometheus-pushgateway)")
def test_push_gateway_holds_the_runs_gauges(coldstart, tmp_path):
    gw = fu.pushgateway(tmp_path)
    out = tmp_path / "p.json"
    try:
        r = coldstart("profile", "--no-report", "-o", out, "--push-gateway", gw.url, "--python", DEBIAN_PYTHON,
                      app(tmp_path))
        assert r.returncode == 0, r.stderr
        back = fu.parse_exposition(fu.http_get(gw.url + "/metrics"))
    finally:
        gw.stop()
    doc = json.loads(out.read_text())
    run = doc["runs"][0]
    walls = [(l, v) for n, l, v in back if n == "coldstart_wall_seconds"]
    assert len(walls) == 1
    labels, value = walls[0]
    assert labels["job"] == "coldstart"
    assert labels["target"] == str(tmp_path / "app.py") and labels["interpreter"] == DEBIAN_PYTHON
    assert value == run["wall_us"] / 1e6
    assert any(n == "coldstart_module_import_seconds" and l["module"] == "email.parser" for n, l, _ in back)
