#!/bin/sh
# Lambda cold starts under AWS's emulator: awslambdaric vs coldstart.lambda
# vs coldstart.lambda --plan vs the floor (bench/lambda_bench.py says how).
cd "$(dirname "$0")/.." && exec /usr/bin/python3 bench/lambda_bench.py
