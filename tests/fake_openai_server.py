"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1 with scripted replies (for judge tests).

Script: a list of ``(marker, actions)``. A request is routed to the first marker found in its last user
message; each request consumes the next action of that marker (the last one repeats). Actions:

    ("reply", text)            200 with ``text`` as the assistant message
    ("status", code)           an error response with that HTTP status (429, 500, ...)
    ("sleep", seconds, text)   wait, then reply (longer than the client timeout = a timeout)
    ("tool_call", name, args)  200 with an assistant message that asks for tool ``name`` (``args``: JSON text)
    ("wait", event, text)      wait until ``event`` (a threading.Event) is set (at most 60 s), then reply

Unrouted requests get a 500. Every request body is kept in ``server.requests`` for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Action = tuple[Any, ...]


class FakeOpenAI(ThreadingHTTPServer):
    """The server; start with ``start()``, stop with ``stop()``; ``base_url`` ends in ``/v1``."""

    daemon_threads = True

    def __init__(self, script: Sequence[tuple[str, Sequence[Action]]] = ()) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.script: list[tuple[str, list[Action]]] = [(m, list(a)) for m, a in script]
        self.cursor: dict[str, int] = {}
        self.requests: list[dict[str, Any]] = []
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """Endpoint for OPENAI_BASE_URL."""
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def set_script(self, script: Sequence[tuple[str, Sequence[Action]]]) -> None:
        """Replace the script and forget the request log."""
        with self.lock:
            self.script = [(m, list(a)) for m, a in script]
            self.cursor = {}
            self.requests = []

    def next_action(self, body: dict[str, Any]) -> Action:
        """Record the request and pick the action the script holds for it."""
        messages = body.get("messages") or []
        users = [m.get("content", "") for m in messages if m.get("role") == "user"]
        text = users[0] if users else ""
        with self.lock:
            self.requests.append(body)
            for marker, actions in self.script:
                if marker in text:
                    i = self.cursor.get(marker, 0)
                    self.cursor[marker] = i + 1
                    return actions[min(i, len(actions) - 1)]
        return ("status", 500)

    def start(self) -> FakeOpenAI:
        """Serve in a daemon thread."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Shut down and close the socket."""
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: FakeOpenAI

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the default stderr log
        return

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": "not found"}})
            return
        action = self.server.next_action(body)
        if action[0] == "status":
            self._send(int(action[1]), {"error": {"message": f"scripted {action[1]}", "type": "scripted"}})
            return
        if action[0] == "sleep":
            time.sleep(float(action[1]))
        if action[0] == "wait":
            action[1].wait(60)
        message: dict[str, Any] = {"role": "assistant", "content": action[-1]}
        finish = "stop"
        if action[0] == "tool_call":
            call = {"id": "call_1", "type": "function", "function": {"name": action[1], "arguments": action[2]}}
            message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        self._send(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                "usage": {  # as OpenAI answers: the cached part of the prompt, the reasoning part of the output
                    "prompt_tokens": 100,
                    "completion_tokens": 20,
                    "total_tokens": 120,
                    "prompt_tokens_details": {"cached_tokens": 64},
                    "completion_tokens_details": {"reasoning_tokens": 8},
                },
            },
        )

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and went away
