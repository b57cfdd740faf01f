import boto3


def handler(event, context):
    c = boto3.client("s3", region_name=event["region"], aws_access_key_id="AKIDEXAMPLE",
                     aws_secret_access_key="secret")
    ops = c.meta.service_model.operation_names
    return {"region": c.meta.region_name, "ops": len(ops), "has_put": "PutObject" in ops}
