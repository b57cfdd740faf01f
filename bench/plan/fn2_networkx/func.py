import json

import networkx as nx
from fdk import response


def handler(ctx, data=None):
    req = json.loads(data.getvalue() or b"{}")
    g = nx.Graph()
    g.add_weighted_edges_from(req.get("edges", []))
    src, dst = req.get("path", [None, None])
    out = {"path": nx.shortest_path(g, src, dst, weight="weight"),
           "mst": sorted(sorted(e) for e in
                         nx.minimum_spanning_edges(g, data=False)),
           "components": sorted(sorted(c) for c in
                                nx.connected_components(g))}
    return response.Response(ctx, response_data=json.dumps(out),
                             headers={"Content-Type": "application/json"})
