import json

from docutils.core import publish_parts
from fdk import response


def handler(ctx, data=None):
    req = json.loads(data.getvalue() or b"{}")
    parts = publish_parts(req.get("rst", ""), writer_name="html",
                          settings_overrides={"report_level": 5,
                                              "halt_level": 5,
                                              "_disable_config": True})
    return response.Response(ctx, response_data=parts["body"],
                             headers={"Content-Type": "text/html"})
