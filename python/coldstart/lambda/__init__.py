"""A Lambda runtime interface client for Python that starts fast: a drop-in
for `python3 -m awslambdaric HANDLER` (awslambdaric 4.0.1) speaking the
Runtime API 2018-06-01.  `coldstart-lambda HANDLER` or
`python3 -m coldstart.lambda HANDLER` runs a handler.

The runtime asks for the first event before it imports the handler's module
(the module is found and compiled first, so that the errors awslambdaric
reports during init are still reported during init); see docs/lambda.md.
Nothing here imports anything outside the standard library.
"""

VERSION = "0.1.0"

EXIT_FAILURE = 1
EXIT_USAGE = 2
