// The driver of a JavaScript interpreter session: coderunner starts it
// once in the session's sandbox and sends it cells on standard input, one
// JSON object a line: {"op": "run", "nonce": N, "code": C, "timeout_ms": T}
// (an "interrupt" line is ignored: a cell is stopped at its time limit by
// V8 itself). Each cell runs in the one global context, as node's REPL
// runs it: the completion value of its last statement is returned. The
// answer follows the cell's output on standard output, one line
// MARK N " " JSON "\n", and MARK N "\n" marks the end on
// standard error. N is new for every call, and the cells cannot reach this
// module's variables, so output cannot pass for an answer.
'use strict';
const fs = require('fs');
const path = require('path');
const util = require('util');
const vm = require('vm');

const MARK = '\x1ecoderunner-result ';
const MAX_VALUE = 1 << 20;
const MAX_IMAGE = 8 << 20;
const MAX_IMAGES = 16;
const MAX_IMAGE_TOTAL = 16 << 20;
const MAX_SCAN = 2000;
const IMAGE_TYPES = { '.png': 'image/png', '.svg': 'image/svg+xml' };

const stdoutFd = 1;
const stderrFd = 2;

function writeAll(fd, s) {
  const b = Buffer.from(s);
  let off = 0;
  while (off < b.length) {
    try {
      off += fs.writeSync(fd, b, off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
    }
  }
}

// The cells reach require and the module's helpers as a script in node's
// REPL does.
globalThis.require = require;
globalThis.module = module;

function images() {
  const seen = new Map();
  let count = 0;
  const walk = (dir) => {
    let entries;
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (e) {
      return;
    }
    for (const e of entries) {
      if (++count > MAX_SCAN) return;
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (!e.name.startsWith('.coderunner')) walk(p);
        continue;
      }
      if (!e.isFile()) continue;
      const mime = IMAGE_TYPES[path.extname(e.name).toLowerCase()];
      if (!mime) continue;
      let st;
      try {
        st = fs.lstatSync(p, { bigint: true });
      } catch (err) {
        continue;
      }
      if (!st.isFile()) continue;
      seen.set(p, st.mtimeNs + ':' + st.size);
    }
  };
  walk('.');
  return seen;
}

function readImage(p) {
  let fd;
  try {
    fd = fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (e) {
    return null;
  }
  try {
    if (!fs.fstatSync(fd).isFile()) return null;
    const buf = Buffer.alloc(MAX_IMAGE + 1);
    let n = 0;
    for (;;) {
      const r = fs.readSync(fd, buf, n, buf.length - n, null);
      if (r === 0) break;
      n += r;
      if (n > MAX_IMAGE) return null;
    }
    return buf.subarray(0, n);
  } catch (e) {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

function runCell(msg) {
  const nonce = String(msg.nonce || '');
  const code = typeof msg.code === 'string' ? msg.code : '';
  const timeout = Number.isInteger(msg.timeout_ms) && msg.timeout_ms > 0 ? msg.timeout_ms : undefined;
  const before = images();
  let value = null;
  let error = null;
  let interrupted = false;
  const display = [];
  try {
    const v = vm.runInThisContext(code, { filename: '<cell>', timeout, displayErrors: false });
    if (v !== undefined) {
      globalThis._ = v;
      if (v !== null && typeof v === 'object' && (Array.isArray(v) || Object.getPrototypeOf(v) === Object.prototype)) {
        try {
          const text = JSON.stringify(v);
          if (typeof text === 'string' && text.length <= MAX_VALUE) display.push({ mime: 'application/json', data: text });
        } catch (_) {}
      }
      value = util.inspect(v);
      if (value.length > MAX_VALUE) value = value.slice(0, MAX_VALUE);
    }
  } catch (e) {
    if (e && e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
      interrupted = true;
      error = 'Interrupted: the cell ran out of time';
    } else {
      const name = e && e.name ? e.name : 'Error';
      const message = e && e.message !== undefined ? e.message : String(e);
      error = name + ': ' + message;
    }
    try {
      writeAll(stderrFd, (e && e.stack ? String(e.stack) : String(e)) + '\n');
    } catch (_) {}
  }
  let budget = MAX_IMAGE_TOTAL;
  try {
    const after = images();
    for (const p of [...after.keys()].sort()) {
      if (display.length >= MAX_IMAGES) break;
      if (before.get(p) === after.get(p)) continue;
      const data = readImage(p);
      if (data === null || data.length > budget) continue;
      budget -= data.length;
      display.push({ mime: IMAGE_TYPES[path.extname(p).toLowerCase()], data: data.toString('base64'), path: path.normalize(p) });
    }
  } catch (_) {}
  const answer = JSON.stringify({ value, error, interrupted, display });
  writeAll(stderrFd, MARK + nonce + '\n');
  writeAll(stdoutFd, MARK + nonce + ' ' + answer + '\n');
}

// Lines are read synchronously, one cell at a time: what a cell leaves
// scheduled (timers, promises) runs between cells.
const input = 0;
let pending = Buffer.alloc(0);
function nextLine() {
  for (;;) {
    const i = pending.indexOf(10);
    if (i >= 0) {
      const line = pending.subarray(0, i).toString();
      pending = pending.subarray(i + 1);
      return line;
    }
    const chunk = Buffer.alloc(65536);
    let n;
    try {
      n = fs.readSync(input, chunk, 0, chunk.length, null);
    } catch (e) {
      if (e.code === 'EAGAIN') continue;
      throw e;
    }
    if (n === 0) return null;
    pending = Buffer.concat([pending, chunk.subarray(0, n)]);
  }
}

function loop() {
  const line = nextLine();
  if (line === null) process.exit(0);
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (e) {
    msg = null;
  }
  if (msg && typeof msg === 'object' && msg.op === 'run') runCell(msg);
  // Let what the cell scheduled run before the next one is read.
  setImmediate(loop);
}
loop();
