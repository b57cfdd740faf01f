import json

import sqlalchemy as sa
from sqlalchemy import orm
from fdk import response


class Base(orm.declarative_base()):
    __abstract__ = True


class User(Base):
    __tablename__ = "users"
    id = sa.Column(sa.Integer, primary_key=True)
    name = sa.Column(sa.String(50), nullable=False)


def handler(ctx, data=None):
    req = json.loads(data.getvalue() or b"{}")
    engine = sa.create_engine("sqlite://")
    Base.metadata.create_all(engine)
    with orm.Session(engine) as s:
        s.add_all([User(name=n) for n in req.get("names", [])])
        s.commit()
        names = [u.name for u in s.query(User).filter(User.name.like("a%")).order_by(User.name)]
    engine.dispose()
    return response.Response(ctx, response_data=json.dumps({"a_names": names}),
                             headers={"Content-Type": "application/json"})
