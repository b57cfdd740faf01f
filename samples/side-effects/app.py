"""A target whose imports have side effects: coldstart's findings should name
each one and the module that ran it (see README.md)."""
import sidefx

print("side-effects sample: served by port %d" % sidefx.net.PORT)
