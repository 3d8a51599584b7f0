"""Tests against a real coderunner server.

They run when CODERUNNER_TEST_URL (and CODERUNNER_TEST_TOKEN) name one;
internal/cli's TestPythonClient starts `coderunner serve` and sets them.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import unittest
from typing import Any, Dict, List, Tuple

import coderunner
from coderunner import BadRequest, Chunk, Client, NotFound, RunResult, Unauthorized

HERE = os.path.dirname(os.path.abspath(__file__))
URL = os.environ.get("CODERUNNER_TEST_URL", "")
TOKEN = os.environ.get("CODERUNNER_TEST_TOKEN") or None


@unittest.skipUnless(URL, "CODERUNNER_TEST_URL is not set")
class LiveTest(unittest.TestCase):
    client: Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.client = Client(URL, token=TOKEN, timeout=60)

    def test_health(self) -> None:
        h = self.client.health()
        self.assertEqual(h.status, "ok")
        self.assertEqual(h.backend, "native")

    def test_hello_world(self) -> None:
        r = self.client.run("print('Hello, world')", "python")
        self.assertIsInstance(r, RunResult)
        self.assertEqual(r.stdout, "Hello, world\n")
        self.assertEqual(r.status, "success")
        self.assertTrue(r.ok)
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(r.language, "python")
        self.assertIn("memory_peak_mb", r.resource_usage)
        self.assertEqual(r["stdout"], "Hello, world\n")  # the raw JSON too

    def test_stdin_args_env(self) -> None:
        r = self.client.run(
            "import os, sys\nprint(sys.stdin.read().strip(), sys.argv[1:], os.environ['GREETING'])",
            "python", stdin="in\n", args=["a", "b c"], env={"GREETING": "hi"},
        )
        self.assertEqual(r.stdout, "in ['a', 'b c'] hi\n", r)

    def test_timeout(self) -> None:
        r = self.client.run("while True:\n    pass", "python", timeout=1)
        self.assertEqual(r.status, "timeout")
        self.assertFalse(r.ok)

    def test_bad_field(self) -> None:
        with self.assertRaises(BadRequest) as cm:
            self.client.run("print(1)", "python", limits={"memory": 64})
        e = cm.exception
        self.assertEqual(e.field, "limits.memory")
        self.assertEqual(e.status, 400)
        self.assertEqual(e.code, "bad_request")
        self.assertTrue(e.request_id)
        self.assertIn("limits.memory", str(e))
        with self.assertRaises(BadRequest) as cm:
            self.client.run("print(1)", "python", args=["ok", "nul\x00"])
        self.assertEqual(cm.exception.field, "args[1]")
        with self.assertRaises(BadRequest) as cm:
            self.client.judge("print(1)", "python", [{"input": "", "expected_ouput": "1"}])
        self.assertEqual(cm.exception.field, "test_cases[0].expected_ouput")

    def test_wrong_token(self) -> None:
        bad = Client(URL, token="not-the-token")
        with self.assertRaises(Unauthorized) as cm:
            bad.run("print(1)", "python")
        self.assertEqual(cm.exception.status, 401)
        self.assertEqual(cm.exception.code, "unauthorized")
        self.assertTrue(cm.exception.request_id)
        with self.assertRaises(Unauthorized):
            Client(URL).sessions()

    def test_session_files(self) -> None:
        data = b"line one\nline two\n\x00\xff binary tail"
        with self.client.sandbox() as sb:
            f = sb.write_file("data/in.bin", data)
            self.assertEqual(f.path, "data/in.bin")
            self.assertEqual(f.size, len(data))
            self.assertEqual(f.sha256, hashlib.sha256(data).hexdigest())
            sb.write_file("name with space.txt", "é text")
            self.assertEqual(sb.read_file("data/in.bin"), data)
            self.assertEqual(sb.read_text("name with space.txt"), "é text")
            listed = {x.path: x for x in sb.list_files()}
            self.assertEqual(sorted(listed), ["data/in.bin", "name with space.txt"])
            self.assertEqual(listed["data/in.bin"].sha256, f.sha256)

            r = sb.run("d = open('data/in.bin','rb').read()\nprint(len(d), d[:8].decode())\n"
                       "open('out.txt','w').write('from the program')", "python")
            self.assertEqual(r.stdout, f"{len(data)} line one\n", r)
            self.assertEqual(r.session_id, sb.session_id)
            self.assertEqual(sb.read_file("out.txt"), b"from the program")
            ids = [s.session_id for s in self.client.sessions()]
            self.assertIn(sb.session_id, ids)
            self.assertEqual(sb.info().session_id, sb.session_id)

            sb.delete_file("out.txt")
            with self.assertRaises(NotFound) as gone:
                sb.read_file("out.txt")
            self.assertTrue(gone.exception.message.startswith("path:"), gone.exception.message)
            with self.assertRaises(BadRequest) as bad:
                sb.read_file("../etc/passwd")
            self.assertEqual(bad.exception.field, "path")
            r = sb.run("print('again')", "python", files={"more.txt": "x"})
            self.assertEqual(r.stdout, "again\n")
            self.assertEqual(sb.read_file("more.txt"), b"x")
        with self.assertRaises(NotFound):
            self.client.session(sb.session_id)
        sb.close()  # a second close is fine

    def test_interpreter(self) -> None:
        with self.client.sandbox() as sb:
            self.assertIsNone(sb.run_cell("x = 1").value)
            sb.run_cell("x += 1")
            r = sb.run_cell("print('hi')\nx")
            self.assertEqual((r.value, r.stdout, r.status, r.restarted), ("2", "hi\n", "success", False), r)
            r = sb.run_cell("open('dot.png', 'wb').write(b'\\x89PNG')")
            self.assertEqual(r.images(), [("image/png", b"\x89PNG")])
            r = sb.run_cell("import time\nwhile True:\n    time.sleep(0.01)", timeout=1)
            self.assertEqual(r.status, "timeout")
            self.assertEqual(sb.run_cell("x").value, "2")
            sb.restart()
            self.assertEqual(sb.run_cell("'x' in dir()").value, "False")
            self.assertEqual(sb.run_cell("[1, 2].length", "javascript").value, "2")
            with self.assertRaises(BadRequest):
                sb.run_cell("1", "c")

    def test_program_files(self) -> None:
        r = self.client.run("", "python", entry="app/main.py", artifacts={"include_content": True}, files=[
            {"path": "app/main.py", "content": "import helper, os\n"
             "print(helper.X, open('data.bin', 'rb').read(), os.access('tool.sh', os.X_OK))\n"
             "open('out.bin', 'wb').write(bytes(range(256)))\n"},
            {"path": "app/helper.py", "content": "X = 42\n"},
            {"path": "data.bin", "content": b"\x00\xff"},
            {"path": "tool.sh", "content": "#!/bin/sh\n", "executable": True},
        ])
        self.assertEqual(r.stdout, "42 b'\\x00\\xff' True\n", r)
        self.assertEqual(r.artifact_content("out.bin"), bytes(range(256)), r.artifacts)
        self.assertIsNone(r.artifact_content("missing"))
        with self.assertRaises(BadRequest) as cm:
            self.client.run("print(1)", "python", files={"../escape.py": "x"})
        self.assertEqual(cm.exception.field, "files[0].path")

    def test_one_shot_with_files(self) -> None:
        r = self.client.run("print(open('in.txt').read().upper())", "python", files={"in.txt": "shout"})
        self.assertEqual(r.stdout, "SHOUT\n", r)
        self.assertNotIn(r.session_id, [s.session_id for s in self.client.sessions()])

    def test_stream(self) -> None:
        code = (
            "import sys, time\n"
            "print('one', flush=True)\ntime.sleep(0.2)\n"
            "sys.stderr.write('two\\n'); sys.stderr.flush()\ntime.sleep(0.2)\n"
            "print('three', flush=True)\n"
        )
        items = list(self.client.stream(code, "python"))
        self.assertIsInstance(items[-1], RunResult)
        result = items[-1]
        assert isinstance(result, RunResult)
        chunks = items[:-1]
        self.assertTrue(all(isinstance(c, Chunk) for c in chunks), items)
        merged: List[Tuple[str, str]] = []
        for c in chunks:
            assert isinstance(c, Chunk)
            if merged and merged[-1][0] == c.stream:
                merged[-1] = (c.stream, merged[-1][1] + c.data)
            else:
                merged.append((c.stream, c.data))
        self.assertEqual(merged, [("stdout", "one\n"), ("stderr", "two\n"), ("stdout", "three\n")])
        self.assertEqual(result.stdout, "one\nthree\n")
        self.assertEqual(result.stderr, "two\n")
        self.assertEqual(result.status, "success")

    def test_stream_refused(self) -> None:
        with self.assertRaises(BadRequest) as cm:
            list(self.client.stream("print(1)", "python", limits={"bogus": 1}))
        self.assertEqual(cm.exception.field, "limits.bogus")

    def test_judge(self) -> None:
        code = "a, b = map(int, input().split())\nprint(a + b)"
        r = self.client.judge(code, "python", [("1 2\n", "3\n"), {"id": "t2", "input": "2 2\n", "expected_output": "5\n"}])
        self.assertEqual(r.status, "some_passed", r)
        self.assertEqual([t.status for t in r.test_results], ["passed", "wrong_answer"])
        self.assertEqual(r.test_results[1].test_id, "t2")
        self.assertEqual(r.test_results[1].actual_output, "4\n")
        r = self.client.judge(code, "python", [("1 2\n", "3\n"), ("2 2\n", "4\n")])
        self.assertTrue(r.passed, r)

    def test_judge_batch(self) -> None:
        ok = "print(int(input()) * 2)"
        batch = self.client.judge_batch([
            {"problem_id": "double", "language": "python", "code": ok, "test_cases": [{"input": "2\n", "expected_output": "4\n"}]},
            {"problem_id": "double", "language": "python", "code": "print(0)", "test_cases": [{"input": "2\n", "expected_output": "4\n"}]},
        ])
        results = list(batch)
        self.assertEqual([r.line for r in results], [1, 2])
        self.assertEqual([r.status for r in results], ["all_passed", "all_failed"])
        self.assertEqual(results[0].problem_id, "double")
        self.assertIsInstance(results[0], coderunner.BatchResult)
        assert batch.summary is not None
        self.assertEqual(batch.summary.judged, 2)
        self.assertEqual(batch.summary.passed, 1)


    def readme_output(self, path: str, start: str = "") -> str:
        """Run the python blocks of a README (after the heading ``start``) against the server."""
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if start:
            text = text[text.index(start):]
            text = text[: text.find("\n## ", 1)]
        blocks = re.findall(r"```python\n(.*?)```", text, re.S)
        self.assertTrue(blocks, path)
        namespace: Dict[str, Any] = {}
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            for b in blocks:
                b = b.replace('"http://127.0.0.1:8080"', repr(URL)).replace('token="..."', f"token={TOKEN!r}")
                exec(compile(b, path, "exec"), namespace)  # noqa: S102 - the README's own examples
        return out.getvalue()

    def test_readme_examples(self) -> None:
        out = self.readme_output(os.path.join(HERE, "..", "README.md"))
        for want in ["success Hello\n", "stdout '0\\n'", "status success", "b'done'",
                     "['data/in.csv', 'main.py', 'out.txt']", "all_passed ['passed', 'passed']",
                     "b'from a helper'"]:
            self.assertIn(want, out)
        out = self.readme_output(os.path.join(HERE, "..", "..", "..", "README.md"), "### Python client")
        self.assertEqual(out, "Hello world\n\n")


if __name__ == "__main__":
    unittest.main()
