"""Results as dataclasses mirroring the server's JSON.

Every class keeps the whole decoded object in ``raw``, so keys this
version of the client does not know stay readable: ``result.raw["new_key"]``
or ``result["new_key"]``.
"""

from __future__ import annotations

import base64
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple, Type, TypeVar

__all__ = [
    "RunResult",
    "TestResult",
    "JudgeResult",
    "BatchResult",
    "BatchSummary",
    "Submission",
    "SessionInfo",
    "SessionFile",
    "Health",
    "Chunk",
]

T = TypeVar("T", bound="_Model")


@dataclass
class _Model:
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls: Type[T], data: Mapping[str, Any]) -> T:
        """Build from a decoded JSON object; unknown keys stay in ``raw``."""
        if not isinstance(data, Mapping):
            raise TypeError(f"{cls.__name__}: want a JSON object, got {type(data).__name__}")
        kwargs: Dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name == "raw" or f.name not in data:
                continue
            kwargs[f.name] = cls._convert(f.name, data[f.name])
        obj = cls(**kwargs)
        obj.raw = dict(data)
        return obj

    @classmethod
    def _convert(cls, name: str, value: Any) -> Any:
        return value

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def get(self, key: str, default: Any = None) -> Any:
        """A key of the JSON object, known to this class or not."""
        return self.raw.get(key, default)


@dataclass
class RunResult(_Model):
    """The answer of POST /v1/run."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0
    execution_time: float = 0.0
    status: str = ""
    error_message: Optional[str] = None
    resource_usage: Dict[str, Any] = field(default_factory=dict)
    limits_applied: Dict[str, Any] = field(default_factory=dict)
    language: str = ""
    backend: str = ""
    session_id: Optional[str] = None
    truncated: bool = False
    memory_exceeded: bool = False
    artifacts: List[Dict[str, Any]] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    error: Optional[Dict[str, Any]] = None
    """Set on a streamed result when the run was refused or cut short after the stream started."""
    value: Optional[str] = None
    """A cell's (:meth:`Sandbox.run_cell`): the repr of its last expression, or None."""
    display: List[Dict[str, Any]] = field(default_factory=list)
    """A cell's images, each ``{"mime", "data"}`` with data in base64 (see :meth:`images`)."""
    restarted: bool = False
    """A cell's: its session's interpreter was started anew, its variables lost."""

    @property
    def ok(self) -> bool:
        """The program ran and exited 0."""
        return self.status == "success"

    def images(self) -> List[Tuple[str, bytes]]:
        """A cell's images as ``(mime, bytes)``, in the order shown."""
        return [(d["mime"], base64.b64decode(d["data"], validate=True)) for d in self.display
                if isinstance(d, Mapping) and isinstance(d.get("mime"), str) and isinstance(d.get("data"), str)]

    def artifact_content(self, path: str) -> Optional[bytes]:
        """The bytes of a file the program left, when the run asked for
        ``artifacts={"include_content": True}`` and it fitted; else None."""
        for a in self.artifacts:
            if a.get("path") == path and isinstance(a.get("content"), str):
                return base64.b64decode(a["content"], validate=True)
        return None


@dataclass
class TestResult(_Model):
    """One test case's verdict."""

    __test__ = False  # not a unittest/pytest test class

    test_id: str = ""
    status: str = ""
    actual_output: Optional[str] = None
    expected_output: Optional[str] = None
    execution_time_ms: float = 0.0
    memory_used_kb: float = 0.0
    error_message: Optional[str] = None
    checker_message: Optional[str] = None
    points: Optional[float] = None


@dataclass
class JudgeResult(_Model):
    """The answer of POST /v1/judge."""

    request_id: str = ""
    status: str = ""
    test_results: List[TestResult] = field(default_factory=list)
    total_time_ms: float = 0.0
    summary: str = ""
    compilation_output: Optional[str] = None
    error_info: Optional[Dict[str, Any]] = None
    score: Optional[float] = None
    max_score: Optional[float] = None
    subtask_results: List[Dict[str, Any]] = field(default_factory=list)

    @classmethod
    def _convert(cls, name: str, value: Any) -> Any:
        if name == "test_results" and isinstance(value, list):
            return [TestResult.from_json(v) for v in value]
        return value

    @property
    def passed(self) -> bool:
        """Every test passed."""
        return self.status == "all_passed"


@dataclass
class BatchResult(JudgeResult):
    """One line's result of POST /v1/judge/batch."""

    line: int = 0
    problem_id: Optional[str] = None
    language: str = ""


@dataclass
class BatchSummary(_Model):
    """The last line of a batch: counts, pass rates and pass@k."""

    judged: int = 0
    passed: int = 0
    pass_rate: float = 0.0
    by_language: Dict[str, Any] = field(default_factory=dict)
    verdicts: Dict[str, int] = field(default_factory=dict)
    score: Optional[float] = None
    max_score: Optional[float] = None
    pass_at_k: Dict[str, float] = field(default_factory=dict)
    problems: Dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    per_second: float = 0.0


@dataclass
class Submission(_Model):
    """An asynchronous judge submission (POST /v1/judge with callback_url)."""

    submission_id: str = ""
    request_id: str = ""
    status: str = ""
    created_at: str = ""
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    expires_at: Optional[str] = None
    result: Optional[JudgeResult] = None
    callback: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def _convert(cls, name: str, value: Any) -> Any:
        if name == "result" and isinstance(value, Mapping):
            return JudgeResult.from_json(value)
        return value

    @property
    def done(self) -> bool:
        """The submission is judged; ``result`` holds the verdict."""
        return self.status == "done"


@dataclass
class SessionInfo(_Model):
    """GET /v1/sessions/{id}."""

    session_id: str = ""
    created_at: str = ""
    last_used_at: str = ""
    expires_at: str = ""
    idle_timeout_seconds: int = 0
    disk_used_bytes: int = 0
    in_use: bool = False


@dataclass
class SessionFile(_Model):
    """A file of a session's workspace."""

    path: str = ""
    size: int = 0
    sha256: str = ""


@dataclass
class Health(_Model):
    """GET /health."""

    status: str = ""
    backend: str = ""
    version: str = ""
    active_executions: int = 0
    queued_executions: int = 0
    slots: int = 0
    queue_size: int = 0


@dataclass
class Chunk:
    """A piece of a streamed run's output: ``stream`` is "stdout" or "stderr"."""

    stream: str
    data: str
