from pkg.mod import *  # noqa: F401,F403
