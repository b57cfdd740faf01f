import json

import yaml
from fdk import response


def handler(ctx, data=None):
    req = json.loads(data.getvalue() or b"{}")
    doc = yaml.safe_load(req.get("yaml", "{}"))
    out = yaml.safe_dump({"parsed": doc, "keys": sorted(doc)}, sort_keys=True,
                         default_flow_style=False)
    return response.Response(ctx, response_data=out,
                             headers={"Content-Type": "application/yaml"})
