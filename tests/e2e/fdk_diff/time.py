"""A function file named like a module every process has loaded."""


def handler(ctx, data=None):
    return "%s.py serves %d bytes" % (__name__, len(data.getvalue()))
