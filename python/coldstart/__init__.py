"""coldstart's Python side: the lazy customer-code loader (coldstart.lazy)
and the Fn FDK entrypoint (coldstart.fdk).  Kept tiny on purpose: the
tracer's bootstrap imports this package into every traced process."""

__version__ = "0.1.0"


def otel_wanted(environ):
    """Whether the OpenTelemetry SDK's variables ask for traces of cold
    starts (coldstart.otel): checked before that module is imported, so
    that without them nothing is."""
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or
                environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
