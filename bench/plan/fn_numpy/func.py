import json

import numpy as np
from fdk import response


def handler(ctx, data=None):
    req = json.loads(data.getvalue() or b"{}")
    a = np.arange(req.get("n", 12), dtype=np.int64).reshape(-1, 3)
    out = {"sum": int(a.sum()), "mean": float(a.mean()), "shape": list(a.shape),
           "cols": a.sum(axis=0).tolist()}
    return response.Response(ctx, response_data=json.dumps(out),
                             headers={"Content-Type": "application/json"})
