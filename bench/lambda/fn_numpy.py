import numpy as np


def handler(event, context):
    a = np.array(event["values"], dtype=float)
    m = np.outer(a, a) + np.eye(len(a))
    return {"det": round(float(np.linalg.det(m)), 6), "mean": float(a.mean())}
