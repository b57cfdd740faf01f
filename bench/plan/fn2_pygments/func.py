import json

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from fdk import response


def handler(ctx, data=None):
    req = json.loads(data.getvalue() or b"{}")
    lexer = get_lexer_by_name(req.get("lang", "python"))
    html = highlight(req.get("code", ""), lexer, HtmlFormatter(nowrap=True))
    return response.Response(ctx, response_data=html,
                             headers={"Content-Type": "text/html"})
