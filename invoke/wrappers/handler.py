# coderunner's handler wrapper for /execute: not user code.
#
# Standard input starts with a header from the executor: a decimal length,
# a newline, then that many bytes of JSON {"nonce", "event"}. The rest of
# standard input is the caller's. The nonce tags the result block so that
# text the handler prints can never be taken for its return value; it is
# read from the pipe before any user code runs and is never in the
# environment, argv or a file.
import json
import os
import sys
import traceback

_WRAPPER = __file__


def _read(n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(0, n - len(buf))
        if not chunk:
            raise EOFError("header cut short")
        buf += chunk
    return bytes(buf)


def _header():
    line = bytearray()
    while True:
        b = _read(1)
        if b == b"\n":
            break
        line += b
        if len(line) > 12:
            raise ValueError("bad header length")
    return json.loads(_read(int(line)))


def _write(data):
    while data:
        n = os.write(1, data)
        data = data[n:]


def _emit(nonce, payload):
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    body = json.dumps(payload, ensure_ascii=False, allow_nan=False)
    block = "===SANDBOX_RESULT=== %s\n%s\n===SANDBOX_RESULT_END=== %s\n" % (nonce, body, nonce)
    _write(block.encode("utf-8", "surrogatepass"))


def _user_tb(tb):
    while tb is not None and tb.tb_frame.f_code.co_filename == _WRAPPER:
        tb = tb.tb_next
    return tb


def _fail(nonce, kind, message, exc=None):
    if exc is not None:
        traceback.print_exception(type(exc), exc, _user_tb(exc.__traceback__))
    else:
        sys.stderr.write(message + "\n")
    _emit(nonce, {"ok": False, "kind": kind, "error": message})
    sys.stderr.flush()
    os._exit(1)


def _main():
    hdr = _header()
    nonce = hdr["nonce"]
    event = hdr.get("event")
    if event is None:
        event = {}
    del hdr
    path = sys.argv[1]
    sys.argv = [path]
    sys.path[0] = os.path.dirname(path)
    with open(path, "rb") as f:
        source = f.read()
    module = {"__name__": "main", "__file__": path, "__builtins__": __builtins__}
    try:
        exec(compile(source, path, "exec"), module)
    except SystemExit:
        raise
    except BaseException as e:
        _fail(nonce, "exception", "%s: %s" % (type(e).__name__, e), e)
    handler = module.get("handler")
    if handler is None:
        _fail(nonce, "missing_handler",
              "handler function not found: the code must define handler(event)")
    if not callable(handler):
        _fail(nonce, "missing_handler",
              "handler is not callable: the code must define handler(event) as a function")
    try:
        value = handler(event)
        if hasattr(value, "__await__"):
            import asyncio
            value = asyncio.run(value)
    except SystemExit:
        raise
    except BaseException as e:
        _fail(nonce, "exception", "%s: %s" % (type(e).__name__, e), e)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        _fail(nonce, "not_serializable",
              "handler return value is not JSON serializable: %s" % e)
    _emit(nonce, {"ok": True, "value": value})


_main()
