"""A JSON POST service on 127.0.0.1 for tests: ``json_server(handle)`` with ``handle(path, body, headers)``
returning ``(status, reply)`` -- a JSON-able reply, or bytes sent as ``text/html`` (a proxy's error page)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

from test_judge_stub import send_json, serve


def json_server(handle):
    """Start the service: ``(base URL, shutdown)``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            status, reply = handle(self.path, body, self.headers)
            if isinstance(reply, bytes):
                self.send_response(status)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)
            else:
                send_json(self, status, reply)

    return serve(Handler)
