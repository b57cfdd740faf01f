"""Imports logging only inside a call."""


def handler(event, context):
    import logging
    logging.getLogger("inside").error("imported in call %s", event.get("n"))
    return [event, len(logging.getLogger().handlers)]
