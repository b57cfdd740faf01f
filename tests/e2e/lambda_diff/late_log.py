"""Logs only on the second event: a plan made from the first one finds
logging imported but unused (coldstart.lambda under that plan sets logging
up at its first use, test_lambda_diff.py's plan cases)."""
import logging


def second(event, context):
    if event.get("n") == 2:
        logging.getLogger().warning("second call %s", event["n"])
        logging.getLogger("late").info("not shown at WARNING")
    return event
