import json

import requests
from fdk import response


def handler(ctx, data=None):
    req = json.loads(data.getvalue() or b"{}")
    s = requests.Session()
    s.headers["User-Agent"] = "bench"
    p = s.prepare_request(requests.Request("POST", req.get("url", "http://127.0.0.1:9/x"),
                                           params=req.get("params"), json=req.get("body")))
    s.close()
    return response.Response(ctx, response_data=json.dumps(
        {"url": p.url, "len": len(p.body or b""), "ctype": p.headers["Content-Type"]}),
        headers={"Content-Type": "application/json"})
