# An Fn function that imports numpy at module level, the heavy-dependency
# case: with coldstart-fdk's default lazy warm-up the numpy import is paid on
# the first call instead of inside the agent's start-up window.
import io
import json

import numpy as np

from fdk import response


def handler(ctx, data: io.BytesIO = None):
    try:
        values = json.loads(data.getvalue() or b"[]")
    except ValueError as ex:
        return response.Response(
            ctx, response_data=json.dumps({"error": str(ex)}),
            headers={"Content-Type": "application/json"}, status_code=400)
    if not isinstance(values, list) or not values:
        values = [1.0, 2.0, 3.0, 4.0]
    a = np.asarray(values, dtype=float)
    m = np.outer(a, a)
    result = {
        "n": int(a.size),
        "mean": float(a.mean()),
        "std": float(a.std()),
        "trace_outer": float(np.trace(m)),
        "numpy": np.__version__,
    }
    return response.Response(ctx, response_data=json.dumps(result),
                             headers={"Content-Type": "application/json"})
