import json

from lxml import etree
from fdk import response


def handler(ctx, data=None):
    req = json.loads(data.getvalue() or b"{}")
    root = etree.Element("order", id=str(req.get("id", 0)))
    for name in req.get("items", []):
        etree.SubElement(root, "item").text = name
    out = {"xml": etree.tostring(root).decode(),
           "found": [e.text for e in root.xpath(req.get("xpath", "//item"))]}
    return response.Response(ctx, response_data=json.dumps(out),
                             headers={"Content-Type": "application/json"})
