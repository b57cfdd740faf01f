raise RuntimeError("failing at import")


def handler(event, context):
    return "never"
