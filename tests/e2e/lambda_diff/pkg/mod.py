def handler(event, context):
    return {"module": __name__}
