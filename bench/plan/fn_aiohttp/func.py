import json

import aiohttp
from fdk import response


async def handler(ctx, data=None):
    req = json.loads(data.getvalue() or b"{}")
    async with aiohttp.ClientSession(base_url=req.get("base", "http://127.0.0.1:9"),
                                     headers={"X-Bench": "1"}) as s:
        out = {"closed": s.closed, "headers": dict(s.headers),
               "timeout": s.timeout.total}
    out["closed_after"] = s.closed
    return response.Response(ctx, response_data=json.dumps(out, sort_keys=True),
                             headers={"Content-Type": "application/json"})
