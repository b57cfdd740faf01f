import jinja2

ENV = jinja2.Environment(autoescape=True)
PAGE = ENV.from_string("<h1>{{ name }}</h1><ul>{% for v in values %}<li>{{ v * 2 }}</li>{% endfor %}</ul>")


def handler(event, context):
    return {"html": PAGE.render(name=event["name"], values=event["values"])}
