# The driver of an interpreter session: coderunner starts it once in the
# session's sandbox and sends it cells on standard input, one JSON object
# a line: {"op": "run", "nonce": N, "code": C} or {"op": "interrupt",
# "nonce": N}. It runs each cell as a notebook does (the value of the last
# expression is returned) and answers on standard output with one line,
# MARK N " " JSON "\n", after flushing what the cell printed, and with
# MARK N "\n" on standard error. N is new for every call and
# known only to the server and to this process, so a cell that prints a
# result line cannot make the server take it for the answer.
import ast
import base64
import json
import os
import queue
import signal
import sys
import threading
import traceback

MARK = "\x1ecoderunner-result "
MAX_VALUE = 1 << 20
MAX_IMAGE = 8 << 20
MAX_IMAGES = 16
MAX_IMAGE_TOTAL = 16 << 20
MAX_SCAN = 2000
IMAGE_TYPES = {".png": "image/png", ".svg": "image/svg+xml"}

# The control stream is kept on a descriptor of its own; the cells read an
# empty standard input.
_ctl = os.fdopen(os.dup(0), "rb", buffering=0)
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
sys.stdin = open(0, "r", closefd=False)
# The answers go out through descriptors of their own, whatever a cell
# does to sys.stdout and sys.stderr.
_out = os.fdopen(os.dup(1), "w")
_err = os.fdopen(os.dup(2), "w")
sys.stdout.reconfigure(line_buffering=True)
sys.stderr.reconfigure(line_buffering=True)

_main = threading.get_ident()
# A cell is interrupted as a notebook interrupts it: SIGINT to the main
# thread, which also cuts short a blocking call such as time.sleep.
signal.signal(signal.SIGINT, signal.default_int_handler)

_cells = queue.Queue()
_running = {"nonce": None}
_lock = threading.Lock()


def _read():
    for line in _ctl:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        if msg.get("op") == "interrupt":
            with _lock:
                if _running["nonce"] is not None and _running["nonce"] == msg.get("nonce"):
                    signal.pthread_kill(_main, signal.SIGINT)
        elif msg.get("op") == "run":
            _cells.put(msg)
    _cells.put(None)


def _images():
    """The PNG and SVG files beneath the working directory: path -> (mtime, size)."""
    seen = {}
    count = 0
    for top, dirs, files in os.walk(".", followlinks=False):
        for name in files:
            count += 1
            if count > MAX_SCAN:
                return seen
            ext = os.path.splitext(name)[1].lower()
            if ext not in IMAGE_TYPES:
                continue
            path = os.path.join(top, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not (st.st_mode & 0o170000) == 0o100000:
                continue
            seen[path] = (st.st_mtime_ns, st.st_size)
        dirs[:] = [d for d in dirs if not d.startswith(".coderunner")]
    return seen


def _read_image(path):
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if (os.fstat(f.fileno()).st_mode & 0o170000) != 0o100000:
            return None
        data = f.read(MAX_IMAGE + 1)
    if len(data) > MAX_IMAGE:
        return None
    return data


# _budget is what the images of the current cell may still take.
_budget = [MAX_IMAGE_TOTAL]


def _figures(display):
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    import io
    try:
        nums = plt.get_fignums()
    except Exception:
        return
    for num in nums:
        if len(display) >= MAX_IMAGES:
            break
        try:
            buf = io.BytesIO()
            plt.figure(num).savefig(buf, format="png")
            data = buf.getvalue()
            if len(data) > min(MAX_IMAGE, _budget[0]):
                continue
            _budget[0] -= len(data)
            display.append({"mime": "image/png", "data": base64.b64encode(data).decode()})
        except Exception:
            pass
    try:
        plt.close("all")
    except Exception:
        pass


def _structured(v):
    """A dict or list that JSON holds as it is, as JSON text; else None."""
    if not isinstance(v, (dict, list)):
        return None
    try:
        text = json.dumps(v, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return text if len(text) <= MAX_VALUE else None


def _run(code, ns, display):
    """Runs one cell and returns the repr of its last expression, or None;
    a dict or list that is JSON also goes to display."""
    tree = ast.parse(code, "<cell>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell>", "exec"), ns)
    if last is None:
        return None
    v = eval(compile(last, "<cell>", "eval"), ns)
    if v is None:
        return None
    ns["_"] = v
    text = _structured(v)
    if text is not None:
        display.append({"mime": "application/json", "data": text})
    r = repr(v)
    if len(r) > MAX_VALUE:
        r = r[:MAX_VALUE]
    return r


def main():
    sys.path[0] = os.getcwd()
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    threading.Thread(target=_read, daemon=True).start()
    while True:
        msg = _cells.get()
        if msg is None:
            return
        nonce = str(msg.get("nonce", ""))
        code = msg.get("code", "")
        before = _images()
        value, error, interrupted = None, None, False
        display = []
        _budget[0] = MAX_IMAGE_TOTAL
        with _lock:
            _running["nonce"] = nonce
        try:
            try:
                value = _run(code if isinstance(code, str) else "", ns, display)
            finally:
                with _lock:
                    _running["nonce"] = None
        except KeyboardInterrupt:
            interrupted = True
            error = "KeyboardInterrupt"
            traceback.print_exc()
        except SystemExit as e:
            error = "SystemExit: %s" % (e.code,)
        except BaseException as e:  # the cell's own error, shown as a notebook shows it
            error = "".join(traceback.format_exception_only(type(e), e)).strip()
            traceback.print_exc()
        try:
            _figures(display)
            after = _images()
            for path in sorted(after):
                if len(display) >= MAX_IMAGES:
                    break
                if before.get(path) == after[path]:
                    continue
                data = _read_image(path)
                if data is None or len(data) > _budget[0]:
                    continue
                _budget[0] -= len(data)
                mime = IMAGE_TYPES[os.path.splitext(path)[1].lower()]
                display.append({"mime": mime, "data": base64.b64encode(data).decode(),
                                "path": os.path.normpath(path)})
        except BaseException:
            pass
        answer = json.dumps({"value": value, "error": error, "interrupted": interrupted, "display": display})
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except Exception:
                pass
        _err.write(MARK + nonce + "\n")
        _err.flush()
        _out.write(MARK + nonce + " " + answer + "\n")
        _out.flush()


main()
