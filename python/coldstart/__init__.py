"""coldstart's Python side: the lazy customer-code loader (coldstart.lazy)
and the Fn FDK entrypoint (coldstart.fdk).  Kept tiny on purpose: the
tracer's bootstrap imports this package into every traced process."""

__version__ = "0.1.0"
