import json
from typing import List, Optional

import pydantic
from fdk import response


class Item(pydantic.BaseModel):
    name: str
    price: float
    tags: List[str] = []


class Order(pydantic.BaseModel):
    id: int
    items: List[Item]
    note: Optional[str] = None


def handler(ctx, data=None):
    try:
        order = Order.parse_raw(data.getvalue() or b"{}")
        out = {"ok": True, "total": round(sum(i.price for i in order.items), 2),
               "order": json.loads(order.json())}
    except pydantic.ValidationError as e:
        out = {"ok": False, "errors": len(e.errors())}
    return response.Response(ctx, response_data=json.dumps(out, sort_keys=True),
                             headers={"Content-Type": "application/json"})
