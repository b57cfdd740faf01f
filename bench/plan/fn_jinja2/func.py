import json

import jinja2
from fdk import response

ENV = jinja2.Environment(autoescape=True)
PAGE = ENV.from_string("<h1>{{ title }}</h1><ul>{% for i in items %}<li>{{ i|upper }}</li>{% endfor %}</ul>")


def handler(ctx, data=None):
    req = json.loads(data.getvalue() or b"{}")
    return response.Response(ctx, response_data=PAGE.render(**req),
                             headers={"Content-Type": "text/html"})
