# An Fn "hello" function written the fdk-python way, like the one the Fn team
# profiled: json, asyncio and xml.dom.minidom are imported at module level,
# so whoever imports this file pays for all three before the first call.
import asyncio  # noqa: F401 - module-level cost, as in the profiled function
import io
import json
import xml.dom.minidom

import fdk
from fdk import response


def _as_xml(name):
    doc = xml.dom.minidom.Document()
    root = doc.createElement("greeting")
    root.appendChild(doc.createTextNode("Hello {0}".format(name)))
    doc.appendChild(root)
    return doc.toxml()


def handler(ctx, data: io.BytesIO = None):
    name = "World"
    try:
        body = json.loads(data.getvalue())
        name = body.get("name", name)
    except (Exception, ValueError) as ex:
        print("no JSON name in the payload: " + str(ex), flush=True)

    accept = ctx.Headers().get("accept", "")
    if "xml" in str(accept):
        return response.Response(
            ctx, response_data=_as_xml(name),
            headers={"Content-Type": "application/xml"})
    return response.Response(
        ctx, response_data=json.dumps({"message": "Hello {0}".format(name)}),
        headers={"Content-Type": "application/json"})


if __name__ == "__main__":
    fdk.handle(handler)
