"""Raises at import when RAISE_AT_IMPORT is set: a plan is made without
it (the module loads), the case runs with it (test_lambda_diff.py)."""
import os

if os.environ.get("RAISE_AT_IMPORT"):
    raise ValueError("raised at import, as asked")


def handler(event, context):
    return event
