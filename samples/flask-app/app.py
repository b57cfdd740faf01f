"""A small Flask app (Debian's python3-flask), profiled as the web stacks that
start slowly in containers are: everything it imports is paid before the
first request can be served.

    coldstart profile samples/flask-app/app.py --check      # import only, exit
    coldstart profile --ready http://127.0.0.1:8765/health samples/flask-app/app.py
"""
import json
import os
import sys

from flask import Flask, jsonify

app = Flask(__name__)


@app.route("/health")
def health():
    return jsonify(status="ok")


@app.route("/hello/<name>")
def hello(name):
    return jsonify(message="Hello %s" % name, pid=os.getpid())


if __name__ == "__main__":
    if "--check" in sys.argv:
        print(json.dumps({"routes": sorted(r.rule for r in app.url_map.iter_rules())}))
        sys.exit(0)
    port = int(os.environ.get("PORT", "8765"))
    app.run(host="127.0.0.1", port=port)
