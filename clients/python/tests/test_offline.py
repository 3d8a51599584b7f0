"""Tests with a tiny fake server: retries, parsing and escaping, no coderunner needed."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import unittest
from typing import Any, Callable, Dict, List, Optional, Tuple

from coderunner import (
    BadRequest,
    Chunk,
    Client,
    CoderunnerError,
    EventParser,
    NotFound,
    RateLimited,
    RunResult,
    ServerError,
    SessionExpired,
    TransportError,
    Unavailable,
)
from coderunner.errors import field_of

# An answer: status, headers, body.
Answer = Tuple[int, Dict[str, str], bytes]

RESULT = {
    "stdout": "hi\n", "stderr": "", "exit_code": 0, "execution_time": 0.01, "status": "success",
    "error_message": None, "resource_usage": {}, "limits_applied": {}, "language": "python",
    "backend": "native", "session_id": None, "truncated": False, "memory_exceeded": False,
    "a_new_key": [1, 2],
}


def error(status: int, code: str, message: str, **headers: str) -> Answer:
    body = json.dumps({"error": {"code": code, "message": message, "request_id": "req-1"}}).encode()
    return status, {"Content-Type": "application/json", **headers}, body


def ok(obj: Any, status: int = 200) -> Answer:
    return status, {"Content-Type": "application/json"}, json.dumps(obj).encode()


class FakeServer:
    """Answers requests in turn from a script; records what it was asked."""

    def __init__(self, answers: List[Answer]) -> None:
        self.answers = list(answers)
        self.requests: List[Tuple[str, str, Dict[str, str], bytes]] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                fake.requests.append((self.command, self.path, dict(self.headers), body))
                status, headers, out = fake.answers.pop(0) if fake.answers else error(500, "internal_error", "no more answers")
                if status == 0:  # hang up without an answer
                    self.close_connection = True
                    return
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

        self.httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class FakeTest(unittest.TestCase):
    def serve(self, answers: List[Answer]) -> FakeServer:
        s = FakeServer(answers)
        self.addCleanup(s.close)
        return s

    def client(self, s: FakeServer, **kw: Any) -> Tuple[Client, List[float]]:
        slept: List[float] = []
        return Client(s.url, token="tok", sleep=slept.append, **kw), slept


class RetryTest(FakeTest):
    def test_retries_503_honouring_retry_after(self) -> None:
        s = self.serve([error(503, "queue_full", "queue is full", **{"Retry-After": "2"}),
                        error(503, "queue_full", "queue is full", **{"Retry-After": "1"}), ok(RESULT)])
        c, slept = self.client(s)
        r = c.run("print('hi')", "python")
        self.assertEqual(r.stdout, "hi\n")
        self.assertEqual(slept, [2.0, 1.0])
        self.assertEqual(len(s.requests), 3)
        for method, path, headers, body in s.requests:
            self.assertEqual((method, path), ("POST", "/v1/run"))
            self.assertEqual(headers["Authorization"], "Bearer tok")
            self.assertEqual(headers["Content-Type"], "application/json")
            self.assertEqual(json.loads(body), {"language": "python", "code": "print('hi')"})

    def test_503_without_retry_after_backs_off(self) -> None:
        s = self.serve([error(503, "shutting_down", "x"), error(503, "shutting_down", "x"), ok(RESULT)])
        c, slept = self.client(s)
        c.run("print('hi')", "python")
        self.assertEqual(slept, [0.5, 1.0])

    def test_attempts_are_bounded(self) -> None:
        s = self.serve([error(503, "queue_full", "full", **{"Retry-After": "1"})] * 10)
        c, slept = self.client(s, retries=2)
        with self.assertRaises(Unavailable) as cm:
            c.run("print(1)", "python")
        self.assertEqual(len(s.requests), 3)
        self.assertEqual(slept, [1.0, 1.0])
        self.assertEqual(cm.exception.code, "queue_full")
        self.assertEqual(cm.exception.retry_after, 1.0)
        self.assertEqual(cm.exception.request_id, "req-1")

    def test_total_wait_is_bounded(self) -> None:
        s = self.serve([error(503, "queue_full", "full", **{"Retry-After": "20"})] * 10)
        c, slept = self.client(s, retry_budget=30)
        with self.assertRaises(Unavailable):
            c.run("print(1)", "python")
        self.assertEqual(slept, [20.0])  # a second 20 s would pass the 30 s budget
        self.assertEqual(len(s.requests), 2)

    def test_no_retries(self) -> None:
        s = self.serve([error(503, "queue_full", "full"), ok(RESULT)])
        c, slept = self.client(s, retries=0)
        with self.assertRaises(Unavailable):
            c.run("print(1)", "python")
        self.assertEqual(slept, [])

    def test_429_only_when_asked(self) -> None:
        limited = error(429, "rate_limited", "over the rate", **{"Retry-After": "3"})
        body = json.loads(limited[2])
        body["error"]["limit"] = "requests_per_second"
        limited = (429, limited[1], json.dumps(body).encode())
        s = self.serve([limited])
        c, slept = self.client(s)
        with self.assertRaises(RateLimited) as cm:
            c.run("print(1)", "python")
        self.assertEqual(cm.exception.limit, "requests_per_second")
        self.assertEqual(cm.exception.retry_after, 3.0)
        self.assertEqual(slept, [])
        s2 = self.serve([limited, ok(RESULT)])
        c2, slept2 = self.client(s2, retry_rate_limited=True)
        self.assertEqual(c2.run("print(1)", "python").stdout, "hi\n")
        self.assertEqual(slept2, [3.0])

    def test_500_is_not_retried(self) -> None:
        s = self.serve([error(500, "internal_error", "boom"), ok(RESULT)])
        c, slept = self.client(s)
        with self.assertRaises(ServerError):
            c.run("print(1)", "python")
        self.assertEqual(len(s.requests), 1)

    def test_refused_connection_is_retried(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        slept: List[float] = []
        c = Client(f"http://127.0.0.1:{port}", sleep=slept.append, retries=2)
        with self.assertRaises(TransportError):
            c.run("print(1)", "python")
        self.assertEqual(slept, [0.5, 1.0])

    def test_lost_answer_of_a_get_is_retried(self) -> None:
        s = self.serve([(0, {}, b""), ok({"sessions": []})])
        c, slept = self.client(s)
        self.assertEqual(c.sessions(), [])
        self.assertEqual(slept, [0.5])
        self.assertEqual(len(s.requests), 2)

    def test_lost_answer_of_a_run_is_not_retried(self) -> None:
        # The request reached the server: the program may have run.
        s = self.serve([(0, {}, b""), ok(RESULT)])
        c, slept = self.client(s)
        with self.assertRaises(TransportError) as cm:
            c.run("print(1)", "python")
        self.assertTrue(cm.exception.sent)
        self.assertEqual(slept, [])
        self.assertEqual(len(s.requests), 1)

    def test_bad_retry_after_falls_back(self) -> None:
        s = self.serve([error(503, "queue_full", "x", **{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}), ok(RESULT)])
        c, slept = self.client(s)
        c.run("print(1)", "python")
        self.assertEqual(slept, [0.5])


class ErrorTest(FakeTest):
    def test_field_of(self) -> None:
        cases: List[Tuple[str, Optional[str]]] = [
            ("limits.memory: unknown field", "limits.memory"),
            ("invalid request: test_cases[3].expected_ouput: unknown field", "test_cases[3].expected_ouput"),
            ("args[0]: contains a NUL byte", "args[0]"),
            ("timeout: 0 is out of range", "timeout"),
            ("the body is not JSON", None),
            ("", None),
            ("Content-Type \"text/plain\": send JSON", None),
        ]
        for msg, want in cases:
            self.assertEqual(field_of(msg), want, msg)

    def test_status_classes(self) -> None:
        from coderunner import Conflict, Forbidden, InsufficientStorage, PayloadTooLarge, Unauthorized
        want = {400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
                413: PayloadTooLarge, 415: BadRequest, 429: RateLimited, 500: ServerError,
                503: Unavailable, 507: InsufficientStorage, 418: ServerError}
        s = self.serve([error(st, "some_code", f"status {st}") for st in want])
        c, _ = self.client(s, retries=0)
        for st, cls in want.items():
            with self.assertRaises(cls, msg=str(st)) as cm:
                c.sessions()
            self.assertIs(type(cm.exception), cls)
            self.assertEqual(cm.exception.status, st)
            self.assertEqual(cm.exception.message, f"status {st}")
            self.assertEqual(str(cm.exception), f"{st} some_code: status {st} (request req-1)")

    def test_not_json_error(self) -> None:
        s = self.serve([(502, {"Content-Type": "text/html"}, b"<html>bad gateway</html>")])
        c, _ = self.client(s)
        with self.assertRaises(ServerError) as cm:
            c.sessions()
        self.assertEqual(cm.exception.status, 502)
        self.assertIn("bad gateway", cm.exception.message)

    def test_session_expired(self) -> None:
        s = self.serve([error(404, "session_expired", "id: the session expired")])
        c, _ = self.client(s)
        with self.assertRaises(SessionExpired) as cm:
            c.session("abc")
        self.assertIsInstance(cm.exception, NotFound)

    def test_judge_refusal_keeps_result(self) -> None:
        body = {"request_id": "r", "status": "sandbox_error", "test_results": [], "summary": "Validation error",
                "error_info": {"code": "VALIDATION_ERROR", "message": "invalid request: timeout_ms: 5 is out of range"},
                "error": {"code": "validation_error", "message": "invalid request: timeout_ms: 5 is out of range",
                          "request_id": "req-9"}}
        s = self.serve([ok(body, 400)])
        c, _ = self.client(s)
        with self.assertRaises(BadRequest) as cm:
            c.judge("print(1)", "python", [("", "1\n")], timeout_ms=5)
        e = cm.exception
        self.assertEqual(e.field, "timeout_ms")
        self.assertEqual(e.code, "validation_error")
        assert e.result is not None
        self.assertEqual(e.result.status, "sandbox_error")
        sent = json.loads(s.requests[0][3])
        self.assertEqual(sent["test_cases"], [{"input": "", "expected_output": "1\n"}])
        self.assertEqual(sent["timeout_ms"], 5)

    def test_bad_paths_never_sent(self) -> None:
        s = self.serve([])
        c, _ = self.client(s)
        sb = c.sandbox("s1")
        for bad in ["../etc/passwd", "/abs", "a//b", "a/./b", "a/..", ""]:
            with self.assertRaises(BadRequest, msg=bad) as cm:
                sb.read_file(bad)
            self.assertEqual(cm.exception.field, "path")
        self.assertEqual(s.requests, [])

    def test_ids_and_paths_are_escaped(self) -> None:
        s = self.serve([(200, {}, b"x"), ok({"sessions": []})])
        c, _ = self.client(s)
        self.assertEqual(c.sandbox("a/../../health").read_file("dir/a b?c#d%e.txt"), b"x")
        self.assertEqual(s.requests[0][1], "/v1/sessions/a%2F..%2F..%2Fhealth/files/dir/a%20b%3Fc%23d%25e.txt")

    def test_bad_client_arguments(self) -> None:
        for url in ["ftp://x", "127.0.0.1:8080", "http://user:pw@host", "http://host/?q=1"]:
            with self.assertRaises(ValueError, msg=url):
                Client(url)
        with self.assertRaises(ValueError):
            Client("http://h", token="a\r\nX-Evil: 1")
        with self.assertRaises(TypeError):
            Client("http://h").run("x", "python", args="one string")
        with self.assertRaises(TypeError):
            Client("http://h").judge("x", "python", ["not a test"])  # type: ignore[list-item]


class FilesTest(FakeTest):
    def test_program_files(self) -> None:
        from coderunner import program_files
        self.assertEqual(program_files({"a.py": "x = 1", "b.bin": b"\x00\xff"}), [
            {"path": "a.py", "content": "x = 1"},
            {"path": "b.bin", "content": "AP8=", "encoding": "base64"},
        ])
        self.assertEqual(program_files([{"path": "t.sh", "content": b"#!", "executable": True}]),
                         [{"path": "t.sh", "content": "IyE=", "encoding": "base64", "executable": True}])
        with self.assertRaises(TypeError):
            program_files("a.py")  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            program_files([("a.py", "x")])  # type: ignore[list-item]
        with self.assertRaises(TypeError):
            program_files({"a.py": 3})  # type: ignore[dict-item]
        with self.assertRaises(ValueError):
            program_files([{"path": "a", "content": b"x", "encoding": "utf8"}])

    def test_files_are_sent(self) -> None:
        s = self.serve([ok(RESULT), ok(RESULT), ok({"request_id": "", "status": "all_passed", "test_results": [],
                                                    "total_time_ms": 1, "summary": ""})])
        c, _ = self.client(s)
        c.run("", "python", files={"m.py": b"print(1)"}, entry="m.py", artifacts={"include_content": True})
        sent = json.loads(s.requests[0][3])
        self.assertEqual(sent["files"], [{"path": "m.py", "content": "cHJpbnQoMSk=", "encoding": "base64"}])
        self.assertEqual(sent["entry"], "m.py")
        self.assertEqual(sent["artifacts"], {"include_content": True})
        c.sandbox("s1", idle_timeout=60).run("print(1)", "python", files={"d.txt": "x"})
        sent = json.loads(s.requests[1][3])
        self.assertEqual((sent["session_id"], sent["session_ttl_seconds"]), ("s1", 60))
        self.assertEqual(sent["files"], [{"path": "d.txt", "content": "x"}])
        c.judge("", "python", [("", "")], files={"m.py": "print()"}, entry="m.py")
        sent = json.loads(s.requests[2][3])
        self.assertEqual(sent["files"], [{"path": "m.py", "content": "print()"}])

    def test_artifact_content(self) -> None:
        r = RunResult.from_json(dict(RESULT, artifacts=[{"path": "a.bin", "size": 2, "content": "AP8="},
                                                        {"path": "big.bin", "size": 9}]))
        self.assertEqual(r.artifact_content("a.bin"), b"\x00\xff")
        self.assertIsNone(r.artifact_content("big.bin"))


class ShapeTest(FakeTest):
    def test_unknown_keys_kept(self) -> None:
        r = RunResult.from_json(RESULT)
        self.assertEqual(r.stdout, "hi\n")
        self.assertEqual(r["a_new_key"], [1, 2])
        self.assertEqual(r.get("missing", 7), 7)

    def test_submit_and_poll(self) -> None:
        queued = {"submission_id": "sub_" + "0" * 32, "request_id": "r", "status": "queued",
                  "created_at": "2026-01-01T00:00:00Z", "result": None,
                  "callback": {"url": "https://example.com/cb", "state": "waiting", "attempts": 0}}
        done = dict(queued, status="done", result={"request_id": "r", "status": "all_passed",
                                                   "test_results": [{"test_id": "1", "status": "passed"}],
                                                   "total_time_ms": 3, "summary": "1/1"})
        s = self.serve([ok(queued, 202), ok(queued), ok(done)])
        c, slept = self.client(s)
        sub = c.submit("print(1)", "python", [("", "1\n")], callback_url="https://example.com/cb")
        self.assertEqual(sub.status, "queued")
        self.assertIsNone(sub.result)
        final = c.wait(sub.submission_id, interval=0.25)
        self.assertTrue(final.done)
        assert final.result is not None
        self.assertTrue(final.result.passed)
        self.assertEqual(final.result.test_results[0].status, "passed")
        self.assertEqual(slept, [0.25])
        self.assertEqual(json.loads(s.requests[0][3])["callback_url"], "https://example.com/cb")
        self.assertEqual(s.requests[1][1], "/v1/judge/sub_" + "0" * 32)
        with self.assertRaises(ValueError):
            c.judge("x", "python", [], callback_url="https://example.com/cb")

    def test_batch_stopped(self) -> None:
        line = {"line": 1, "language": "python", "request_id": "", "status": "all_passed", "test_results": [],
                "total_time_ms": 1, "summary": ""}
        body = (json.dumps(line) + "\n" + json.dumps({"error": {"code": "shutting_down", "message": "stopped",
                                                                "request_id": "b"}}) + "\n").encode()
        s = self.serve([(200, {"Content-Type": "application/x-ndjson"}, body)])
        c, _ = self.client(s)
        batch = c.judge_batch([{"language": "python", "code": "x", "test_cases": []}, '{"language":"python"}'])
        it = iter(batch)
        self.assertEqual(next(it).line, 1)
        with self.assertRaises(CoderunnerError) as cm:
            next(it)
        self.assertEqual(cm.exception.code, "shutting_down")
        self.assertIsNone(batch.summary)
        self.assertEqual(s.requests[0][2]["Content-Type"], "application/x-ndjson")
        self.assertEqual(s.requests[0][3].count(b"\n"), 2)
        with self.assertRaises(ValueError):
            c.judge_batch(['{"a":\n1}'])


STREAM = (
    b": keep-alive\r\n\r\n"
    b"event: stdout\r\ndata: \"h\xc3\xa9llo\\n\"\r\n\r\n"
    b"event: stderr\ndata: \"oops\\n\"\n\n"
    b"event: stdout\rdata: \"bye\\n\"\r\r"
    b"event: result\ndata: " + json.dumps(dict(RESULT, stdout="h\u00e9llo\nbye\n")).encode() + b"\n\n"
)


class StreamTest(FakeTest):
    def want(self, events: List[Tuple[str, str]]) -> None:
        self.assertEqual([e[0] for e in events], ["stdout", "stderr", "stdout", "result"])
        self.assertEqual([json.loads(e[1]) for e in events[:3]], ["h\u00e9llo\n", "oops\n", "bye\n"])

    def test_parser_any_split(self) -> None:
        for size in [1, 2, 3, 5, 7, 64, len(STREAM)]:
            p = EventParser()
            events = []
            for i in range(0, len(STREAM), size):
                events += [(e.event, e.data) for e in p.feed(STREAM[i:i + size])]
            events += [(e.event, e.data) for e in p.close()]
            self.want(events)

    def test_parser_details(self) -> None:
        p = EventParser()
        evs = p.feed(b"data: a\ndata: b\nid: 7\nretry: 10\n\ndata:no-space\n\n\n\nevent: x\n\ndata: cut")
        self.assertEqual([(e.event, e.data) for e in evs], [("message", "a\nb"), ("message", "no-space")])
        self.assertEqual(p.close(), [])  # an event without its blank line is dropped

    def test_stream_from_server(self) -> None:
        s = self.serve([(200, {"Content-Type": "text/event-stream"}, STREAM)])
        c, _ = self.client(s)
        items = list(c.stream("print(1)", "python"))
        self.assertEqual(items[:3], [Chunk("stdout", "h\u00e9llo\n"), Chunk("stderr", "oops\n"), Chunk("stdout", "bye\n")])
        self.assertIsInstance(items[3], RunResult)
        self.assertEqual(s.requests[0][2]["Accept"], "text/event-stream")

    def test_stream_cut(self) -> None:
        s = self.serve([(200, {"Content-Type": "text/event-stream"}, STREAM[:60])])
        c, _ = self.client(s)
        with self.assertRaises(TransportError):
            list(c.stream("print(1)", "python"))

    def test_stream_bad_data(self) -> None:
        s = self.serve([(200, {"Content-Type": "text/event-stream"}, b"event: stdout\ndata: {not json\n\n")])
        c, _ = self.client(s)
        with self.assertRaises(TransportError):
            list(c.stream("print(1)", "python"))

    def test_stream_cut_short_by_the_server(self) -> None:
        refused = dict(RESULT, status="setup_error", stdout="",
                       error={"code": "shutting_down", "message": "the server is shutting down", "request_id": "r"})
        body = b": keep-alive\n\nevent: result\ndata: " + json.dumps(refused).encode() + b"\n\n"
        s = self.serve([(200, {"Content-Type": "text/event-stream"}, body)])
        c, _ = self.client(s)
        items = list(c.stream("print(1)", "python"))
        self.assertEqual(len(items), 1)
        r = items[0]
        assert isinstance(r, RunResult)
        self.assertEqual(r.status, "setup_error")
        assert r.error is not None
        self.assertEqual(r.error["code"], "shutting_down")

    def test_stream_refused_first(self) -> None:
        s = self.serve([error(400, "bad_request", "limits.bogus: unknown field")])
        c, _ = self.client(s)
        with self.assertRaises(BadRequest) as cm:
            c.stream("print(1)", "python")
        self.assertEqual(cm.exception.field, "limits.bogus")


if __name__ == "__main__":
    unittest.main()
