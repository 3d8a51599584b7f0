"""A client of coderunner's HTTP service, standard library only.

    from coderunner import Client
    client = Client("http://127.0.0.1:8080", token="...")
    print(client.run("print('hi')", "python").stdout)
"""

from .client import BatchStream, Client, Files, Sandbox, TestCase, program_files
from .errors import (
    BadRequest,
    CoderunnerError,
    Conflict,
    Forbidden,
    InsufficientStorage,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    SessionExpired,
    TransportError,
    Unauthorized,
    Unavailable,
)
from .sse import Event, EventParser
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
    TestResult,
)

__version__ = "0.1.0"

__all__ = [
    "Client", "Sandbox", "BatchStream", "TestCase", "Files", "program_files",
    "CoderunnerError", "TransportError", "BadRequest", "Unauthorized", "Forbidden", "NotFound",
    "SessionExpired", "Conflict", "PayloadTooLarge", "RateLimited", "ServerError", "Unavailable",
    "InsufficientStorage",
    "Event", "EventParser",
    "RunResult", "TestResult", "JudgeResult", "BatchResult", "BatchSummary", "Submission",
    "SessionInfo", "SessionFile", "Health", "Chunk",
]
