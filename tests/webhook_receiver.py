"""A local webhook receiver on 127.0.0.1 (a real HTTP server in a thread) that keeps every JSON body it is sent.
`status` sets what it answers (e.g. 503 for a chat server that is down); `hang` makes it answer only after that
many seconds (a server that accepts the connection and then says nothing). `host`, `port` and `tls` (an
ssl.SSLContext) place it elsewhere on the loopback network or behind TLS; `hosts` keeps each post's Host header."""

from __future__ import annotations

import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class WebhookReceiver:
    def __init__(self, status: int = 200, *, host: str = "127.0.0.1", port: int = 0, tls: ssl.SSLContext | None = None):
        self.status, self.bodies, self.tries, self.hang, self.hosts = status, [], 0, 0.0, []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"null")
                with receiver._lock:
                    receiver.tries += 1
                    receiver.hosts.append(self.headers.get("Host"))
                    if receiver.status < 300:
                        receiver.bodies.append(body)
                time.sleep(receiver.hang)
                self.send_response(receiver.status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.port = self.server.server_port
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.url = f"{'https' if tls else 'http'}://{host}:{self.port}/hooks/abc123"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, count: int = 1, *, tries: bool = False, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen = self.tries if tries else len(self.bodies)
            if seen >= count:
                return seen
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout:.0f}s waiting for {count} webhook post(s)")

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
