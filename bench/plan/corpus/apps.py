"""The servers and Fn functions of the plan corpus (bench/plan/corpus.py),
written into a scratch directory at each run: a Django project, a Flask app
served by gunicorn, a FastAPI app served by uvicorn, and Fn functions on
packages the plan benchmark does not use (lxml, PyYAML, cryptography,
networkx, docutils).  Every answer depends only on the request, so a run
with the plan and one without must answer byte for byte the same."""

import os

DJANGO_SETTINGS = '''
SECRET_KEY = "corpus-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "site_urls"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth"]
MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]
DATABASES = {}
USE_TZ = True
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates",
              "DIRS": [], "APP_DIRS": False, "OPTIONS": {}}]
'''

DJANGO_URLS = '''
import json
from django.http import HttpResponse, JsonResponse
from django.template import Context, Template
from django.urls import path
from django.utils.text import slugify
from django.core.validators import validate_email
from django.core.exceptions import ValidationError


def health(request):
    return JsonResponse({"status": "ok"})


def hello(request, name):
    return JsonResponse({"message": "Hello %s" % name, "slug": slugify(name)})


def page(request, name):
    t = Template("<h1>{{ title|title }}</h1><ul>{% for i in items %}<li>{{ i|upper }}</li>{% endfor %}</ul>")
    return HttpResponse(t.render(Context({"title": name, "items": name.split("-")})))


def email(request, addr):
    try:
        validate_email(addr)
        ok = True
    except ValidationError as e:
        ok = str(e.messages)
    return JsonResponse({"email": addr, "valid": ok})


def echo(request):
    return JsonResponse({"method": request.method, "query": dict(request.GET)})


urlpatterns = [
    path("health", health),
    path("hello/<str:name>", hello),
    path("page/<str:name>", page),
    path("email/<str:addr>", email),
    path("echo", echo),
]
'''

DJANGO_MANAGE = '''
import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "site_settings")
    from django.core.management import execute_from_command_line
    execute_from_command_line(sys.argv)
'''

FLASK_APP = '''
import hashlib
from flask import Flask, jsonify, request, render_template_string, abort

app = Flask(__name__)


@app.route("/health")
def health():
    return jsonify(status="ok")


@app.route("/hello/<name>")
def hello(name):
    return jsonify(message="Hello %s" % name)


@app.route("/page/<name>")
def page(name):
    return render_template_string("<p>{{ n|e }} has {{ n|length }} letters</p>", n=name)


@app.route("/hash/<name>")
def digest(name):
    return jsonify(sha256=hashlib.sha256(name.encode()).hexdigest())


@app.route("/missing")
def missing():
    abort(404)


@app.route("/echo", methods=["GET", "POST"])
def echo():
    return jsonify(method=request.method, args=request.args.to_dict(), body=request.get_data(as_text=True))
'''

FASTAPI_APP = '''
from typing import Optional

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

app = FastAPI()


class Item(BaseModel):
    name: str
    price: float
    tags: Optional[list] = None


@app.get("/health")
def health():
    return {"status": "ok"}


@app.get("/hello/{name}")
def hello(name: str, times: int = 1):
    return {"message": " ".join(["Hello %s" % name] * times)}


@app.post("/items")
def create(item: Item):
    return {"name": item.name, "total": item.price * 2, "tags": item.tags or []}


@app.get("/fail/{code}")
def fail(code: int):
    raise HTTPException(status_code=code, detail="asked for %d" % code)


@app.get("/openapi-paths")
def paths():
    return sorted(app.openapi()["paths"])
'''

FN_LXML = '''
import json
from lxml import etree


def handler(ctx, data=None):
    doc = json.loads(data.getvalue() or b"{}")
    root = etree.Element("order", id=str(doc.get("id", 0)))
    for name in doc.get("items", []):
        etree.SubElement(root, "item").text = name
    xml = etree.tostring(root, pretty_print=True).decode()
    if doc.get("xpath"):
        return json.dumps([e.text for e in root.xpath(doc["xpath"])])
    return xml
'''

FN_YAML = '''
import json
import yaml


def handler(ctx, data=None):
    doc = json.loads(data.getvalue() or b"{}")
    if "yaml" in doc:
        return json.dumps(yaml.safe_load(doc["yaml"]), sort_keys=True, default=str)
    return yaml.safe_dump(doc, sort_keys=True, default_flow_style=doc.get("flow", False))
'''

FN_CRYPTO = '''
import base64
import json
from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC


def handler(ctx, data=None):
    doc = json.loads(data.getvalue() or b"{}")
    key = doc.get("key", "k").encode()
    msg = doc.get("msg", "").encode()
    if doc.get("kdf"):
        kdf = PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=b"corpus", iterations=1000)
        return base64.b64encode(kdf.derive(key)).decode()
    h = hmac.HMAC(key, hashes.SHA256())
    h.update(msg)
    return json.dumps({"hmac": h.finalize().hex()})
'''

FN_NETWORKX = '''
import json
import networkx as nx


def handler(ctx, data=None):
    doc = json.loads(data.getvalue() or b"{}")
    g = nx.Graph()
    g.add_weighted_edges_from(doc.get("edges", []))
    if doc.get("what") == "mst":
        return json.dumps(sorted(map(list, nx.minimum_spanning_edges(g, data=False))))
    if doc.get("what") == "components":
        return json.dumps(sorted(sorted(c) for c in nx.connected_components(g)))
    src, dst = doc.get("path", [None, None])
    return json.dumps(nx.shortest_path(g, src, dst, weight="weight"))
'''

FN_DOCUTILS = '''
import json
from docutils.core import publish_parts


def handler(ctx, data=None):
    doc = json.loads(data.getvalue() or b"{}")
    parts = publish_parts(doc.get("rst", ""), writer_name=doc.get("writer", "html"),
                          settings_overrides={"report_level": 5, "halt_level": 5, "_disable_config": True})
    return parts[doc.get("part", "body")]
'''


def write(root):
    """Writes every app under ROOT; returns {name: directory}."""
    files = {
        "django/site_settings.py": DJANGO_SETTINGS,
        "django/site_urls.py": DJANGO_URLS,
        "django/manage.py": DJANGO_MANAGE,
        "flask/app.py": FLASK_APP,
        "fastapi/main.py": FASTAPI_APP,
        "fn_lxml/func.py": FN_LXML,
        "fn_yaml/func.py": FN_YAML,
        "fn_crypto/func.py": FN_CRYPTO,
        "fn_networkx/func.py": FN_NETWORKX,
        "fn_docutils/func.py": FN_DOCUTILS,
    }
    dirs = {}
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text.lstrip("\n"))
        dirs[rel.split("/")[0]] = os.path.dirname(path)
    return dirs
