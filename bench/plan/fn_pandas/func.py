import io
import json

import pandas as pd
from fdk import response


def handler(ctx, data=None):
    req = json.loads(data.getvalue() or b"{}")
    df = pd.DataFrame(req.get("rows", []))
    g = df.groupby("city")["temp"].mean().round(2)
    return response.Response(ctx, response_data=json.dumps({"mean": g.to_dict(), "n": len(df)}),
                             headers={"Content-Type": "application/json"})
