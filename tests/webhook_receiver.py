"""A local webhook receiver on 127.0.0.1 (a real HTTP server in a thread) that keeps every JSON body it is sent.
`status` sets what it answers (e.g. 503 for a chat server that is down); `hang` makes it answer only after that
many seconds (a server that accepts the connection and then says nothing)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class WebhookReceiver:
    def __init__(self, status: int = 200):
        self.status, self.bodies, self.tries, self.hang = status, [], 0, 0.0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"null")
                with receiver._lock:
                    receiver.tries += 1
                    if receiver.status < 300:
                        receiver.bodies.append(body)
                time.sleep(receiver.hang)
                self.send_response(receiver.status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/abc123"
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
