import coldstart_no_such_dependency  # noqa: F401


def handler(event, context):
    return "never"
