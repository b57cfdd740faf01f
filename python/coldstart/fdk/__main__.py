"""`python -m coldstart.fdk func.py [handler]`: the coldstart-fdk command."""

import sys

from coldstart.fdk.server import main

sys.exit(main())
