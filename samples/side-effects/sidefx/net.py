"""Network at import: a loopback listener of its own, a DNS lookup, a connect."""
import socket

_server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
_server.bind(("127.0.0.1", 0))
_server.listen(1)
PORT = _server.getsockname()[1]

socket.getaddrinfo("localhost", PORT)
_client = socket.create_connection(("127.0.0.1", PORT), timeout=5)
_peer, _ = _server.accept()
_client.close()
_peer.close()
_server.close()
