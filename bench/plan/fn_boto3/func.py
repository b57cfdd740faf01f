import json

import boto3
from fdk import response


def handler(ctx, data=None):
    req = json.loads(data.getvalue() or b"{}")
    c = boto3.client("s3", region_name=req.get("region", "eu-west-1"),
                     aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret")
    ops = c.meta.service_model.operation_names
    return response.Response(ctx, response_data=json.dumps(
        {"region": c.meta.region_name, "endpoint": c.meta.endpoint_url, "ops": len(ops),
         "has_put": "PutObject" in ops}), headers={"Content-Type": "application/json"})
