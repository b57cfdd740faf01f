"""A function file named like a standard-library module."""
import json


def handler(ctx, data=None):
    return json.dumps({"module": __name__, "dumps": callable(json.dumps)})
