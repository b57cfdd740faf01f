import base64
import json

from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC
from fdk import response


def handler(ctx, data=None):
    req = json.loads(data.getvalue() or b"{}")
    key = req.get("key", "k").encode()
    kdf = PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=b"coldstart",
                     iterations=req.get("iterations", 1000))
    derived = kdf.derive(key)
    h = hmac.HMAC(derived, hashes.SHA256())
    h.update(req.get("msg", "").encode())
    out = {"key": base64.b64encode(derived).decode(),
           "hmac": h.finalize().hex()}
    return response.Response(ctx, response_data=json.dumps(out),
                             headers={"Content-Type": "application/json"})
