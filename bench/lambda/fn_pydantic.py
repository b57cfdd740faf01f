from typing import List

import pydantic


class Event(pydantic.BaseModel):
    name: str
    values: List[int]
    region: str


def handler(event, context):
    e = Event(**event)
    return {"name": e.name, "total": sum(e.values)}
