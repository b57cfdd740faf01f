import pandas as pd


def handler(event, context):
    df = pd.DataFrame({"v": event["values"]})
    df["double"] = df["v"] * 2
    return {"sum": int(df["double"].sum()), "rows": len(df)}
