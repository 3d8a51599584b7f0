// coderunner's handler wrapper for /execute: not user code.
//
// Standard input starts with a header from the executor: a decimal length,
// a newline, then that many bytes of JSON {"nonce", "event"}. The rest of
// standard input is the caller's. The nonce tags the result block so that
// text the handler prints can never be taken for its return value; it is
// read from the pipe before any user code runs and is never in the
// environment, argv or a file.
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

function readSome(buf, off, len) {
  for (;;) {
    try {
      return fs.readSync(0, buf, off, len, null);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
}

function readExact(n) {
  const buf = Buffer.alloc(n);
  let off = 0;
  while (off < n) {
    const got = readSome(buf, off, n - off);
    if (got === 0) throw new Error('header cut short');
    off += got;
  }
  return buf;
}

function readHeader() {
  let line = '';
  for (;;) {
    const c = readExact(1).toString('latin1');
    if (c === '\n') break;
    line += c;
    if (line.length > 12) throw new Error('bad header length');
  }
  return JSON.parse(readExact(parseInt(line, 10)).toString('utf8'));
}

const hdr = readHeader();
const nonce = hdr.nonce;
const event = hdr.event == null ? {} : hdr.event;

function writeAll(s) {
  const b = Buffer.from(s, 'utf8');
  let off = 0;
  while (off < b.length) {
    try {
      off += fs.writeSync(1, b, off, b.length - off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
    }
  }
}

function emit(payload) {
  writeAll('===SANDBOX_RESULT=== ' + nonce + '\n' + JSON.stringify(payload) + '\n===SANDBOX_RESULT_END=== ' + nonce + '\n');
}

// userStack is err's stack without the frames of this wrapper and below.
function userStack(err) {
  const lines = String(err.stack).split('\n');
  const i = lines.findIndex((l) => l.includes(__filename));
  return (i < 0 ? lines : lines.slice(0, i)).join('\n');
}

function fail(kind, message, err) {
  try {
    fs.writeSync(2, (err && err.stack ? userStack(err) : message) + '\n');
  } catch (_) { /* stderr closed */ }
  emit({ ok: false, kind: kind, error: message });
  process.exit(1);
}

function describe(err) {
  if (err instanceof Error) return err.name + ': ' + err.message;
  return 'Uncaught ' + String(err);
}

const file = path.resolve(process.argv[2]);
process.argv.splice(1, 2, file);
const source = fs.readFileSync(file, 'utf8');

// The code runs as a script in this context, so that a top-level
// "function handler" or "const handler" is found as Lambda users expect;
// require, module and exports are there for code written as a module.
const mod = { exports: {}, filename: file, id: '.', paths: module.paths };
mod.require = require;
globalThis.require = require;
globalThis.module = mod;
globalThis.exports = mod.exports;
globalThis.__filename = file;
globalThis.__dirname = path.dirname(file);

let handler;
try {
  vm.runInThisContext(source, { filename: file });
  handler = vm.runInThisContext('typeof handler === "undefined" ? undefined : handler', { filename: 'coderunner-wrapper' });
  if (handler === undefined && mod.exports) handler = mod.exports.handler;
} catch (e) {
  fail('exception', describe(e), e);
}
if (handler === undefined || handler === null) {
  fail('missing_handler', 'handler function not found: the code must define handler(event)');
}
if (typeof handler !== 'function') {
  fail('missing_handler', 'handler is not callable: the code must define handler(event) as a function');
}

function finish(value) {
  let body;
  try {
    body = JSON.stringify(value === undefined ? null : value);
  } catch (e) {
    fail('not_serializable', 'handler return value is not JSON serializable: ' + e.message);
  }
  if (body === undefined) body = 'null';
  writeAll('===SANDBOX_RESULT=== ' + nonce + '\n{"ok":true,"value":' + body + '}\n===SANDBOX_RESULT_END=== ' + nonce + '\n');
  process.exit(0);
}

let value;
try {
  value = handler(event);
} catch (e) {
  fail('exception', describe(e), e);
}
if (value !== null && typeof value === 'object' && typeof value.then === 'function') {
  value.then(finish, (e) => fail('exception', describe(e), e));
} else {
  finish(value);
}
