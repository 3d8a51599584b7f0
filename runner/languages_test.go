package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/runner"
)

// programs are one language's solutions of the two-sum problem of
// twoSumTests: right, wrong, crashing, looping, memory-hungry and not
// compiling (empty for interpreted languages).
type programs struct {
	lang                                            string
	accepted, wrong, crash, loop, hog, compileError string
}

// twoSumTests give n and a target, then n numbers; the answer is the
// indices of the two numbers that add up to the target.
var twoSumTests = []judge.TestCase{
	{ID: "small", Input: "4 9\n2 7 11 15\n", ExpectedOutput: "0 1\n"},
	{ID: "later", Input: "5 10\n1 2 3 4 6\n", ExpectedOutput: "3 4\n"},
}

var languagePrograms = []programs{
	{
		lang: "python",
		accepted: `import sys
d = sys.stdin.read().split()
n, t = int(d[0]), int(d[1])
a = [int(x) for x in d[2:2 + n]]
seen = {}
for i, x in enumerate(a):
    if t - x in seen:
        print(seen[t - x], i)
        break
    seen[x] = i
`,
		wrong: "print('0 0')\n",
		crash: "raise ValueError('boom')\n",
		loop:  "while True:\n    pass\n",
		hog:   "s = 'x' * (1 << 30)\nprint(len(s))\n",
	},
	{
		lang:     "python3",
		accepted: "import sys\nd=list(map(int,sys.stdin.read().split()))\nn,t=d[0],d[1]\na=d[2:2+n]\nprint(*next((i,j) for i in range(n) for j in range(i+1,n) if a[i]+a[j]==t))\n",
		wrong:    "print(1, 2)\n",
		crash:    "import sys\nsys.exit(1)\n",
		loop:     "import time\nwhile True:\n    time.sleep(1)\n",
		hog:      "b = bytes(1 << 30)\nb = b'x' * (1 << 30)\n",
	},
	{
		lang: "javascript",
		accepted: `const d = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
const n = d[0], t = d[1], a = d.slice(2, 2 + n);
const seen = new Map();
for (let i = 0; i < n; i++) {
  if (seen.has(t - a[i])) { console.log(seen.get(t - a[i]) + ' ' + i); break; }
  seen.set(a[i], i);
}
`,
		wrong: "console.log('0 0');\n",
		crash: "throw new Error('boom');\n",
		loop:  "while (true) {}\n",
		hog:   "const b = Buffer.alloc(1 << 30, 1);\nconsole.log(b[12345]);\n",
	},
	{
		lang: "bash",
		accepted: `read n t
read -a a
for ((i = 0; i < n; i++)); do
  for ((j = i + 1; j < n; j++)); do
    if (( a[i] + a[j] == t )); then echo "$i $j"; exit 0; fi
  done
done
`,
		wrong: "echo 0 0\n",
		crash: "echo failing >&2\nexit 1\n",
		loop:  "while :; do :; done\n",
		hog:   "s=x\nwhile :; do s=$s$s; done\n",
	},
	{
		lang: "c",
		accepted: `#include <stdio.h>
int main(void) {
	int n, t, a[1000];
	if (scanf("%d %d", &n, &t) != 2) return 1;
	for (int i = 0; i < n; i++) scanf("%d", &a[i]);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (a[i] + a[j] == t) { printf("%d %d\n", i, j); return 0; }
	return 0;
}
`,
		wrong:        "#include <stdio.h>\nint main(void) { puts(\"0 0\"); return 0; }\n",
		crash:        "int main(void) { volatile int *p = 0; *p = 1; return 0; }\n",
		loop:         "int main(void) { volatile unsigned x = 0; for (;;) x++; }\n",
		hog:          "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\nint main(void) { size_t n = 1u << 30; char *p = malloc(n); if (!p) return 3; memset(p, 1, n); char *volatile q = p; printf(\"%d\\n\", q[n / 2]); return 0; }\n",
		compileError: "int main(void) { return x; }\n",
	},
	{
		lang: "cpp",
		accepted: `#include <iostream>
#include <unordered_map>
#include <vector>
int main() {
	int n, t;
	std::cin >> n >> t;
	std::vector<int> a(n);
	for (auto &x : a) std::cin >> x;
	std::unordered_map<int, int> seen;
	for (int i = 0; i < n; i++) {
		auto it = seen.find(t - a[i]);
		if (it != seen.end()) { std::cout << it->second << " " << i << "\n"; return 0; }
		seen[a[i]] = i;
	}
}
`,
		wrong:        "#include <iostream>\nint main() { std::cout << \"1 1\\n\"; }\n",
		crash:        "#include <stdexcept>\nint main() { throw std::runtime_error(\"boom\"); }\n",
		loop:         "int main() { volatile unsigned x = 0; for (;;) x = x + 1; }\n",
		hog:          "#include <iostream>\n#include <vector>\nint main() { std::vector<char> v(1u << 30, 1); std::cout << int(v[v.size() / 2]) << \"\\n\"; }\n",
		compileError: "int main() { std::vector<int> v; }\n",
	},
	{
		lang: "java",
		accepted: `import java.io.*;
import java.util.*;

public class TwoSum {
    public static void main(String[] args) throws IOException {
        StreamTokenizer in = new StreamTokenizer(new BufferedReader(new InputStreamReader(System.in)));
        in.nextToken(); int n = (int) in.nval;
        in.nextToken(); int t = (int) in.nval;
        int[] a = new int[n];
        for (int i = 0; i < n; i++) { in.nextToken(); a[i] = (int) in.nval; }
        Map<Integer, Integer> seen = new HashMap<>();
        for (int i = 0; i < n; i++) {
            Integer j = seen.get(t - a[i]);
            if (j != null) { System.out.println(j + " " + i); return; }
            seen.put(a[i], i);
        }
    }
}
`,
		wrong:        "public class Main { public static void main(String[] a) { System.out.println(\"0 0\"); } }\n",
		crash:        "public class Main { public static void main(String[] a) { throw new IllegalStateException(\"boom\"); } }\n",
		loop:         "public class Main { public static void main(String[] a) { long x = 0; while (true) { x++; } } }\n",
		hog:          "import java.util.*;\npublic class Main { public static void main(String[] a) { List<long[]> l = new ArrayList<>(); while (true) { l.add(new long[1 << 20]); } } }\n",
		compileError: "public class Main { public static void main(String[] a) { int x = \"s\" } }\n",
	},
	{
		lang: "go",
		accepted: `package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	r := bufio.NewReader(os.Stdin)
	var n, t int
	fmt.Fscan(r, &n, &t)
	a := make([]int, n)
	for i := range a {
		fmt.Fscan(r, &a[i])
	}
	seen := map[int]int{}
	for i, x := range a {
		if j, ok := seen[t-x]; ok {
			fmt.Println(j, i)
			return
		}
		seen[x] = i
	}
}
`,
		wrong:        "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"0 0\") }\n",
		crash:        "package main\n\nfunc main() { panic(\"boom\") }\n",
		loop:         "package main\n\nfunc main() {\n\tx := 0\n\tfor {\n\t\tx++\n\t}\n}\n",
		hog:          "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tb := make([]byte, 1<<30)\n\tfor i := range b {\n\t\tb[i] = 1\n\t}\n\tfmt.Println(b[len(b)/2])\n}\n",
		compileError: "package main\n\nfunc main() { return x }\n",
	},
	{
		lang: "rust",
		accepted: `use std::io::Read;

fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
    let (n, t) = (v[0] as usize, v[1]);
    let a = &v[2..2 + n];
    for i in 0..n {
        for j in i + 1..n {
            if a[i] + a[j] == t {
                println!("{} {}", i, j);
                return;
            }
        }
    }
}
`,
		wrong:        "fn main() { println!(\"0 0\"); }\n",
		crash:        "fn main() { let v: Vec<i32> = Vec::new(); println!(\"{}\", v[std::hint::black_box(3)]); }\n",
		loop:         "fn main() { let mut x: u64 = 0; loop { x = std::hint::black_box(x + 1); } }\n",
		hog:          "fn main() { let v = vec![1u8; 1 << 30]; println!(\"{}\", v[std::hint::black_box(v.len() / 2)]); }\n",
		compileError: "fn main() { let x: i32 = \"s\"; }\n",
	},
}

// TestLanguages judges each language's programs through the judge with
// the exact statuses the judge gives.
func TestLanguages(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	j := judge.New(r, judge.Options{Parallel: 2})
	for _, lp := range languagePrograms {
		t.Run(lp.lang, func(t *testing.T) {
			t.Parallel()
			cases := []struct {
				name, code string
				memoryMB   int
				want       judge.ExecutionStatus
				wantTest   judge.TestStatus
			}{
				{"accepted", lp.accepted, 0, judge.StatusAllPassed, judge.TestPassed},
				{"wrong answer", lp.wrong, 0, judge.StatusAllFailed, judge.TestWrongAnswer},
				{"runtime error", lp.crash, 0, judge.StatusRuntimeError, judge.TestRuntimeError},
				{"timeout", lp.loop, 0, judge.StatusTimeout, judge.TestTimeout},
				{"memory", lp.hog, 64, judge.StatusMemoryExceeded, judge.TestMemoryExceeded},
				{"compilation error", lp.compileError, 0, judge.StatusCompilationError, ""},
			}
			for _, c := range cases {
				if c.code == "" {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					tests := twoSumTests
					if c.want != judge.StatusAllPassed {
						tests = tests[:1]
					}
					// A memory hog must reach its limit before its time runs
					// out, even on a loaded machine (bash doubles a string).
					timeout := 1500
					if c.want == judge.StatusMemoryExceeded {
						timeout = 10000
					}
					res := j.Execute(context.Background(), judge.ExecutionRequest{
						RequestID:     lp.lang + "-" + c.name,
						Code:          c.code,
						Language:      lp.lang,
						TestCases:     tests,
						TimeoutMS:     timeout,
						MemoryLimitMB: c.memoryMB,
						// Compilation counts against the total: on a loaded
						// machine Go's first build (its standard library's
						// cache) alone can take more than the default minute.
						TotalTimeoutMS: judge.MaxTotalTimeoutMS,
					})
					if res.Status != c.want {
						t.Fatalf("status %s, want %s\nsummary: %s\nresult: %s", res.Status, c.want, res.Summary, describe(res))
					}
					for _, tr := range res.TestResults {
						if tr.Status != c.wantTest {
							t.Errorf("test %s: %s, want %s", tr.TestID, tr.Status, c.wantTest)
						}
					}
					if c.want == judge.StatusCompilationError {
						if res.CompilationOutput == nil || strings.TrimSpace(*res.CompilationOutput) == "" {
							t.Errorf("no compiler output in %s", describe(res))
						}
						if len(res.TestResults) != 0 {
							t.Errorf("test results after a compilation error: %v", res.TestResults)
						}
					}
				})
			}
		})
	}
}
