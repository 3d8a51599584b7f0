"""The coderunner HTTP client: one-shot runs, sessions, streaming and judging."""

from __future__ import annotations

import base64
import http.client
import json
import secrets
import ssl
import time
import urllib.parse
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from .errors import BadRequest, CoderunnerError, NotFound, TransportError, Unavailable, error_for
from .sse import EventParser
from .types import (
    BatchResult,
    BatchSummary,
    Chunk,
    Health,
    JudgeResult,
    RunResult,
    SessionFile,
    SessionInfo,
    Submission,
)

__all__ = ["Client", "Sandbox", "BatchStream", "TestCase", "Files", "program_files"]

# A test case: a dict of the API's keys, or (input, expected_output).
TestCase = Union[Mapping[str, Any], Tuple[str, str]]

# More files of a program: {path: text or bytes}, or the API's
# [{"path", "content", "encoding", "executable"}] (content may be bytes).
Files = Union[Mapping[str, Union[bytes, str]], Sequence[Mapping[str, Any]]]

_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT"})
_READ_PIECE = 16 * 1024


class _Response:
    """An open HTTP answer: its status, headers and connection."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        self.conn = conn
        self.resp = resp
        self.status = resp.status

    def read(self) -> bytes:
        try:
            return self.resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise TransportError(f"reading the answer: {e}") from e
        finally:
            self.close()

    def json(self) -> Any:
        body = self.read()
        try:
            return json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise TransportError(f"the answer (HTTP {self.status}) is not JSON: {body[:200]!r}", status=self.status) from e

    def close(self) -> None:
        self.conn.close()


class Client:
    """A client of a coderunner server.

    ``url`` is the server's base URL (``http://127.0.0.1:8080``), ``token``
    its API token or key (sent as ``Authorization: Bearer``), ``timeout``
    the socket timeout in seconds for connecting and for each read (a run
    waits at least its own timeout plus 30 s).

    Retries: a request the server refused before doing anything is tried
    again, at most ``retries`` more times and for at most ``retry_budget``
    seconds of waiting in all, each time after the answer's Retry-After
    (else 0.5 s, doubling up to 8 s). That is a 503 (queue full, starting,
    shutting down: coderunner refuses those before any work), a 429 when
    ``retry_rate_limited`` is true, and a refused connection (nothing was
    sent). Other failures of a GET or a PUT of a file (which are safe to
    repeat) are retried too; those of a run or a judge request are not,
    since the program may already have run.
    """

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        timeout: float = 60.0,
        *,
        retries: int = 3,
        retry_budget: float = 30.0,
        retry_rate_limited: bool = False,
        ssl_context: Optional[ssl.SSLContext] = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"url {url!r}: want http://host[:port] or https://host[:port]")
        if parsed.query or parsed.fragment or parsed.username or parsed.password:
            raise ValueError(f"url {url!r}: give the token as token=, and no query or fragment")
        if token is not None and any(c in token for c in "\r\n\0"):
            raise ValueError("token: contains a line break or NUL")
        if retries < 0 or retry_budget < 0 or timeout <= 0:
            raise ValueError("retries and retry_budget must be >= 0, timeout > 0")
        self.url = url.rstrip("/")
        self._scheme = parsed.scheme
        self._host = parsed.hostname
        self._port = parsed.port
        self._prefix = parsed.path.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.retry_budget = retry_budget
        self.retry_rate_limited = retry_rate_limited
        self._ssl = ssl_context
        self._sleep = sleep

    # ----- transport -----

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _send(
        self,
        method: str,
        path: str,
        body: Optional[bytes],
        headers: Dict[str, str],
        timeout: float,
    ) -> _Response:
        """One attempt; raises TransportError (with ``sent``) on a network failure."""
        conn = self._connect(timeout)
        h = {"User-Agent": "coderunner-python/1", **headers}
        if self.token is not None:
            h["Authorization"] = "Bearer " + self.token
        try:
            conn.request(method, self._prefix + path, body=body, headers=h)
        except ConnectionRefusedError as e:
            conn.close()
            raise TransportError(f"{method} {path}: {e}", sent=False) from e
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise TransportError(f"{method} {path}: {e}") from e
        try:
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise TransportError(f"{method} {path}: {e}") from e
        return _Response(conn, resp)

    def _request(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        headers: Optional[Dict[str, str]] = None,
        timeout: Optional[float] = None,
        ok: Sequence[int] = (200,),
    ) -> _Response:
        """Send with retries; return an answer whose status is in ``ok``, else raise."""
        headers = headers or {}
        timeout = timeout or self.timeout
        waited = 0.0
        attempt = 0
        while True:
            attempt += 1
            delay: Optional[float] = None
            try:
                r = self._send(method, path, body, headers, timeout)
            except TransportError as e:
                if attempt > self.retries or (e.sent and method not in _IDEMPOTENT):
                    raise
                failure: CoderunnerError = e
            else:
                if r.status in ok:
                    return r
                err = error_for(r.status, r.read(), r.resp.getheader("Retry-After"))
                if isinstance(err, BadRequest) and "test_results" in err.body:
                    err.result = JudgeResult.from_json(err.body)
                retryable = r.status == 503 or (r.status == 429 and self.retry_rate_limited)
                if not retryable or attempt > self.retries:
                    raise err
                failure, delay = err, err.retry_after
            if delay is None:
                delay = min(0.5 * 2 ** (attempt - 1), 8.0)
            if waited + delay > self.retry_budget:
                raise failure
            self._sleep(delay)
            waited += delay

    def _json(self, method: str, path: str, payload: Any = None, timeout: Optional[float] = None, ok: Sequence[int] = (200,)) -> Any:
        body = None
        headers = {"Accept": "application/json"}
        if payload is not None:
            body = json.dumps(payload).encode("utf-8")
            headers["Content-Type"] = "application/json"
        return self._request(method, path, body, headers, timeout, ok).json()

    # ----- /v1/run -----

    @staticmethod
    def _run_payload(
        code: str,
        language: str,
        *,
        stdin: Optional[str] = None,
        timeout: Optional[float] = None,
        limits: Optional[Mapping[str, Any]] = None,
        files: Optional[Files] = None,
        entry: Optional[str] = None,
        artifacts: Optional[Mapping[str, Any]] = None,
        args: Optional[Sequence[str]] = None,
        env: Optional[Mapping[str, str]] = None,
        compiler_flags: Optional[Sequence[str]] = None,
        session_id: Optional[str] = None,
        session_ttl: Optional[int] = None,
    ) -> Dict[str, Any]:
        p: Dict[str, Any] = {"language": language, "code": code}
        if stdin is not None:
            p["stdin"] = stdin
        if timeout is not None:
            p["timeout"] = timeout
        if limits is not None:
            p["limits"] = dict(limits)
        if files is not None:
            p["files"] = program_files(files)
        if entry is not None:
            p["entry"] = entry
        if artifacts is not None:
            p["artifacts"] = dict(artifacts)
        if args is not None:
            if isinstance(args, str):
                raise TypeError("args: want a list of strings, not one string")
            p["args"] = list(args)
        if env is not None:
            p["env"] = dict(env)
        if compiler_flags is not None:
            if isinstance(compiler_flags, str):
                raise TypeError("compiler_flags: want a list of strings, not one string")
            p["compiler_flags"] = list(compiler_flags)
        if session_id is not None:
            p["session_id"] = session_id
        if session_ttl is not None:
            p["session_ttl_seconds"] = session_ttl
        return p

    def _run_timeout(self, timeout: Optional[float]) -> float:
        return max(self.timeout, (timeout or 30.0) + 30.0)

    def run(
        self,
        code: str,
        language: str,
        *,
        stdin: Optional[str] = None,
        timeout: Optional[float] = None,
        limits: Optional[Mapping[str, Any]] = None,
        files: Optional[Files] = None,
        entry: Optional[str] = None,
        artifacts: Optional[Mapping[str, Any]] = None,
        args: Optional[Sequence[str]] = None,
        env: Optional[Mapping[str, str]] = None,
        compiler_flags: Optional[Sequence[str]] = None,
    ) -> RunResult:
        """Run one program and return its result.

        A program that fails, times out or runs out of memory is a result
        (see ``status``), not an exception; exceptions are for requests the
        server refused. ``files`` are more files of the program, written
        beneath /workspace first: ``{path: str or bytes}``, or a list of
        the API's ``{"path", "content", "encoding", "executable"}``;
        ``entry`` is the file to run when it is not ``code``'s (``code``
        may then be ""). ``artifacts={"include_content": True}`` returns
        the files the program leaves (see :meth:`RunResult.artifact_content`).
        """
        p = self._run_payload(code, language, stdin=stdin, timeout=timeout, limits=limits, files=files,
                              entry=entry, artifacts=artifacts, args=args, env=env, compiler_flags=compiler_flags)
        return RunResult.from_json(self._json("POST", "/v1/run", p, timeout=self._run_timeout(timeout)))

    def stream(
        self,
        code: str,
        language: str,
        *,
        stdin: Optional[str] = None,
        timeout: Optional[float] = None,
        limits: Optional[Mapping[str, Any]] = None,
        files: Optional[Files] = None,
        entry: Optional[str] = None,
        artifacts: Optional[Mapping[str, Any]] = None,
        args: Optional[Sequence[str]] = None,
        env: Optional[Mapping[str, str]] = None,
        compiler_flags: Optional[Sequence[str]] = None,
        session_id: Optional[str] = None,
        session_ttl: Optional[int] = None,
    ) -> Iterator[Union[Chunk, RunResult]]:
        """Run a program, yielding its output as it comes, then its result.

        Takes the arguments of :meth:`run`. Yields :class:`Chunk` objects
        (``stream`` "stdout" or "stderr", in the order the program wrote
        them) and, last, the :class:`RunResult`. A request refused before
        the stream started raises at once; one refused or cut short by the
        server's shutdown after it started ends with a result whose
        ``error`` holds the server's error object. Closing the generator
        early closes the connection, which stops the program.
        """
        p = self._run_payload(code, language, stdin=stdin, timeout=timeout, limits=limits, files=files,
                              entry=entry, artifacts=artifacts, args=args, env=env, compiler_flags=compiler_flags,
                              session_id=session_id, session_ttl=session_ttl)
        r = self._request(
            "POST", "/v1/run", json.dumps(p).encode("utf-8"),
            {"Content-Type": "application/json", "Accept": "text/event-stream"},
            timeout=max(self._run_timeout(timeout), 60.0),
        )
        return self._events(r)

    def _events(self, r: _Response) -> Iterator[Union[Chunk, RunResult]]:
        ctype = (r.resp.getheader("Content-Type") or "").split(";")[0].strip()
        try:
            if ctype == "application/json":  # a server without streaming answers at once
                yield RunResult.from_json(json.loads(r.resp.read().decode("utf-8")))
                return
            parser = EventParser()
            while True:
                try:
                    piece = r.resp.read1(_READ_PIECE)
                except (OSError, http.client.HTTPException) as e:
                    raise TransportError(f"reading the event stream: {e}") from e
                events = parser.feed(piece) if piece else parser.close()
                for ev in events:
                    try:
                        data = json.loads(ev.data)
                    except ValueError as e:
                        raise TransportError(f"event {ev.event}: data is not JSON: {ev.data[:200]!r}") from e
                    if ev.event in ("stdout", "stderr"):
                        if not isinstance(data, str):
                            raise TransportError(f"event {ev.event}: data is not a JSON string")
                        yield Chunk(ev.event, data)
                    elif ev.event == "result":
                        yield RunResult.from_json(data)
                        return
                if not piece:
                    raise TransportError("the event stream ended without a result")
        finally:
            r.close()

    # ----- sessions -----

    def sandbox(self, session_id: Optional[str] = None, *, idle_timeout: Optional[int] = None) -> "Sandbox":
        """A session (see :class:`Sandbox`); a new random id unless one is given."""
        return Sandbox(self, session_id, idle_timeout=idle_timeout)

    def sessions(self) -> List[SessionInfo]:
        """The caller's sessions."""
        return [SessionInfo.from_json(s) for s in self._json("GET", "/v1/sessions").get("sessions", [])]

    def session(self, session_id: str) -> SessionInfo:
        """One session's state; NotFound or SessionExpired when it is gone."""
        return SessionInfo.from_json(self._json("GET", "/v1/sessions/" + _seg(session_id)))

    def delete_session(self, session_id: str) -> None:
        """End a session and remove its files."""
        self._request("DELETE", "/v1/sessions/" + _seg(session_id), ok=(204,)).read()

    # ----- judging -----

    @staticmethod
    def _judge_payload(code: str, language: str, tests: Iterable[TestCase], options: Mapping[str, Any]) -> Dict[str, Any]:
        cases: List[Dict[str, Any]] = []
        for i, t in enumerate(tests):
            if isinstance(t, Mapping):
                cases.append(dict(t))
            elif isinstance(t, (tuple, list)) and len(t) == 2:
                cases.append({"input": t[0], "expected_output": t[1]})
            else:
                raise TypeError(f"tests[{i}]: want a dict or an (input, expected_output) pair")
        p: Dict[str, Any] = {"code": code, "language": language, "test_cases": cases}
        for k, v in options.items():
            if v is not None:
                p[k] = program_files(v) if k == "files" else v
        return p

    def judge(self, code: str, language: str, tests: Iterable[TestCase], **options: Any) -> JudgeResult:
        """Compile once, run every test, judge.

        ``tests`` are dicts of the API's keys (input, expected_output, id,
        timeout_ms ...) or (input, expected_output) pairs; ``options`` are
        the request's other keys (timeout_ms, memory_limit_mb, compare,
        checker, subtasks, files, entry, args, env ...; ``files`` as in
        :meth:`run`). A request the server refuses
        whole raises BadRequest, whose ``result`` holds the JudgeResult
        when the server sent one.
        """
        if options.get("callback_url"):
            raise ValueError("callback_url: use submit() for asynchronous judging")
        p = self._judge_payload(code, language, tests, options)
        return JudgeResult.from_json(self._json("POST", "/v1/judge", p, timeout=_judge_timeout(self.timeout, p)))

    def submit(self, code: str, language: str, tests: Iterable[TestCase], *, callback_url: str, **options: Any) -> Submission:
        """Judge asynchronously: the verdict is POSTed to ``callback_url``; poll with :meth:`submission`."""
        p = self._judge_payload(code, language, tests, options)
        p["callback_url"] = callback_url
        return Submission.from_json(self._json("POST", "/v1/judge", p, ok=(202,)))

    def submission(self, submission_id: str) -> Submission:
        """An asynchronous submission's state, and its result once done."""
        return Submission.from_json(self._json("GET", "/v1/judge/" + _seg(submission_id)))

    def wait(self, submission_id: str, *, interval: float = 0.5, timeout: float = 600.0) -> Submission:
        """Poll a submission until it is done (TimeoutError after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while True:
            s = self.submission(submission_id)
            if s.done:
                return s
            if time.monotonic() + interval > deadline:
                raise TimeoutError(f"submission {submission_id} is still {s.status}")
            self._sleep(interval)

    def judge_batch(self, requests: Iterable[Union[Mapping[str, Any], str]]) -> "BatchStream":
        """Judge many solutions: one judge request per item (a dict, or a JSON line).

        Returns a :class:`BatchStream` that yields a :class:`BatchResult` per
        request, in order, as each is judged; its ``summary`` is set once
        the last result was read.
        """
        lines: List[bytes] = []
        for i, req in enumerate(requests):
            if isinstance(req, str):
                line = req.strip("\r\n")
                if "\n" in line or "\r" in line:
                    raise ValueError(f"requests[{i}]: a JSON line holds no line break")
                lines.append(line.encode("utf-8"))
            elif isinstance(req, Mapping):
                lines.append(json.dumps(req).encode("utf-8"))
            else:
                raise TypeError(f"requests[{i}]: want a dict or a JSON line")
        body = b"\n".join(lines) + b"\n"
        r = self._request("POST", "/v1/judge/batch", body,
                          {"Content-Type": "application/x-ndjson", "Accept": "application/x-ndjson"},
                          timeout=max(self.timeout, 600.0))
        return BatchStream(r)

    # ----- other -----

    def health(self) -> Health:
        """The server's readiness (status "starting" or "draining" as well as "ok")."""
        r = self._request("GET", "/health", headers={"Accept": "application/json"}, ok=(200, 503))
        return Health.from_json(r.json())


class BatchStream:
    """The results of a batch, read as the server sends them."""

    def __init__(self, r: _Response) -> None:
        self._r = r
        self.summary: Optional[BatchSummary] = None

    def __iter__(self) -> Iterator[BatchResult]:
        r = self._r
        try:
            while True:
                try:
                    line = r.resp.readline()
                except (OSError, http.client.HTTPException) as e:
                    raise TransportError(f"reading the batch: {e}") from e
                if not line:
                    raise TransportError("the batch ended without its summary")
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line.decode("utf-8"))
                except (UnicodeDecodeError, ValueError) as e:
                    raise TransportError(f"a batch line is not JSON: {line[:200]!r}") from e
                if not isinstance(obj, dict):
                    raise TransportError(f"a batch line is not a JSON object: {line[:200]!r}")
                if "summary" in obj and "status" not in obj:
                    self.summary = BatchSummary.from_json(obj["summary"])
                    return
                if "error" in obj and "status" not in obj:
                    detail = obj["error"] if isinstance(obj["error"], dict) else {}
                    raise Unavailable(str(detail.get("message", "the batch stopped")), code=str(detail.get("code", "")),
                                      request_id=str(detail.get("request_id", "")), status=200, body=obj)
                yield BatchResult.from_json(obj)
        finally:
            r.close()

    def close(self) -> None:
        """Stop reading (the connection closes)."""
        self._r.close()


class Sandbox:
    """A session: runs that share a workspace, and its files.

    The session starts on the server with the first run or file written,
    and ends with :meth:`close` (or the ``with`` block); it also ends by
    itself once idle for ``idle_timeout`` seconds (the server's default
    otherwise).
    """

    def __init__(self, client: Client, session_id: Optional[str] = None, *, idle_timeout: Optional[int] = None) -> None:
        self.client = client
        self.session_id = session_id or "py-" + secrets.token_hex(12)
        self.idle_timeout = idle_timeout
        self._closed = False

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Sandbox({self.session_id!r})"

    def _base(self) -> str:
        return "/v1/sessions/" + _seg(self.session_id)

    def run(
        self,
        code: str,
        language: str,
        *,
        stdin: Optional[str] = None,
        timeout: Optional[float] = None,
        limits: Optional[Mapping[str, Any]] = None,
        files: Optional[Files] = None,
        entry: Optional[str] = None,
        artifacts: Optional[Mapping[str, Any]] = None,
        args: Optional[Sequence[str]] = None,
        env: Optional[Mapping[str, str]] = None,
        compiler_flags: Optional[Sequence[str]] = None,
    ) -> RunResult:
        """Run a program in the session's workspace (arguments as :meth:`Client.run`).

        ``files`` are written into the workspace before the program runs,
        and stay there for the next calls.
        """
        c = self.client
        p = c._run_payload(code, language, stdin=stdin, timeout=timeout, limits=limits, files=files,
                           entry=entry, artifacts=artifacts, args=args, env=env, compiler_flags=compiler_flags,
                           session_id=self.session_id, session_ttl=self.idle_timeout)
        return RunResult.from_json(c._json("POST", "/v1/run", p, timeout=c._run_timeout(timeout)))

    def run_cell(
        self,
        code: str,
        language: str = "python",
        *,
        timeout: Optional[float] = None,
        limits: Optional[Mapping[str, Any]] = None,
    ) -> RunResult:
        """Run ``code`` as a cell of the session's live interpreter (Python or
        JavaScript): variables, imports and definitions stay for the next
        cell. The result's ``value`` is the repr of the last expression (None
        after a statement), ``display`` its images (:meth:`RunResult.images`);
        ``restarted`` says the interpreter was started anew. A cell over its
        ``timeout`` is interrupted and the variables kept.
        """
        c = self.client
        p = c._run_payload(code, language, timeout=timeout, limits=limits,
                           session_id=self.session_id, session_ttl=self.idle_timeout)
        p["mode"] = "interpreter"
        return RunResult.from_json(c._json("POST", "/v1/run", p, timeout=c._run_timeout(timeout)))

    def restart(self) -> None:
        """End the session's interpreter, keeping its files: the next cell
        starts a fresh one. NotFound when the session has not started."""
        self.client._request("POST", self._base() + "/restart", ok=(204,)).read()

    def stream(self, code: str, language: str, **kwargs: Any) -> Iterator[Union[Chunk, RunResult]]:
        """As :meth:`Client.stream`, in the session's workspace."""
        kwargs.setdefault("session_ttl", self.idle_timeout)
        return self.client.stream(code, language, session_id=self.session_id, **kwargs)

    def write_file(self, path: str, content: Union[bytes, str]) -> SessionFile:
        """Write a file (str is written as UTF-8); missing directories are made."""
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        r = self.client._request("PUT", self._base() + "/files/" + _path(path), data,
                                 {"Content-Type": "application/octet-stream", "Accept": "application/json"})
        return SessionFile.from_json(r.json())

    def read_file(self, path: str) -> bytes:
        """A file's bytes; NotFound when there is none."""
        return self.client._request("GET", self._base() + "/files/" + _path(path)).read()

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """A file's text."""
        return self.read_file(path).decode(encoding)

    def list_files(self) -> List[SessionFile]:
        """Every regular file of the workspace, sorted by path."""
        return [SessionFile.from_json(f) for f in self.client._json("GET", self._base() + "/files")]

    def delete_file(self, path: str) -> None:
        """Remove a file (NotFound when there is none)."""
        self.client._request("DELETE", self._base() + "/files/" + _path(path), ok=(204,)).read()

    def info(self) -> SessionInfo:
        """The session's state."""
        return self.client.session(self.session_id)

    def close(self) -> None:
        """End the session and remove its files; a session that never started is fine."""
        if self._closed:
            return
        try:
            self.client.delete_session(self.session_id)
        except NotFound:
            pass
        self._closed = True


def program_files(files: Files) -> List[Dict[str, Any]]:
    """The request's ``files`` array: text as utf8, bytes as base64."""
    items: List[Dict[str, Any]] = []
    if isinstance(files, Mapping):
        for path, content in files.items():
            items.append(_file_item({"path": path, "content": content}, len(items)))
    elif isinstance(files, (str, bytes)):
        raise TypeError("files: want {path: content} or a list of {path, content}")
    else:
        for f in files:
            if not isinstance(f, Mapping):
                raise TypeError(f"files[{len(items)}]: want a dict with path and content")
            items.append(_file_item(f, len(items)))
    return items


def _file_item(f: Mapping[str, Any], i: int) -> Dict[str, Any]:
    item = dict(f)
    content = item.get("content")
    if isinstance(content, (bytes, bytearray, memoryview)):
        if item.get("encoding") not in (None, "base64"):
            raise ValueError(f"files[{i}].encoding: bytes are sent as base64")
        item["content"] = base64.b64encode(bytes(content)).decode("ascii")
        item["encoding"] = "base64"
    elif content is not None and not isinstance(content, str):
        raise TypeError(f"files[{i}].content: want str or bytes, not {type(content).__name__}")
    return item


def _seg(s: str) -> str:
    """One path segment, escaped so it cannot reach another endpoint."""
    if not s:
        raise ValueError("id: empty")
    return urllib.parse.quote(s, safe="")


def _path(path: str) -> str:
    """A workspace file path, escaped segment by segment."""
    parts = path.split("/")
    for p in parts:
        if p in ("", ".", ".."):
            raise BadRequest(f"path: {path!r} must be relative and clean (no empty, '.' or '..' element)",
                             code="bad_request")
    return "/".join(urllib.parse.quote(p, safe="") for p in parts)


def _judge_timeout(base: float, p: Mapping[str, Any]) -> float:
    total = p.get("total_timeout_ms")
    if isinstance(total, (int, float)):
        return max(base, total / 1000.0 + 30.0)
    return max(base, 300.0)
