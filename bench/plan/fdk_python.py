"""The fdk-python way for the plan benchmark: fdk-python 0.1.117's own
entry point (`fdk func.py handler`), run with its source on PYTHONPATH."""
from fdk.scripts.fdk import main

main()
