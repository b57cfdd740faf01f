"""The slow module at the bottom of the chain: it does real work at import
time (a table built with CPU), as configuration parsers and registries do."""
import os
import time

_budget_s = float(os.environ.get("DEEPCHAIN_SLOW_MS", "30")) / 1000.0
_t0 = time.process_time()
TABLE = {}
i = 0
while time.process_time() - _t0 < _budget_s:
    TABLE[i % 4096] = str(i) * 3
    i += 1
