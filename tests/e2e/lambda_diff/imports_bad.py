import bad_syntax  # noqa: F401


def handler(event, context):
    return "never"
