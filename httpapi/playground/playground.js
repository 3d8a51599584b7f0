// The coderunner playground. Everything a program prints, and everything
// the server answers, goes into the page as text (textContent), never as
// HTML. Images are data: URLs built from the display MIME types below.
"use strict";

const $ = (id) => document.getElementById(id);
const tokenKey = "coderunner.token";
let running = null;

function authHeaders(extra) {
  const h = Object.assign({}, extra);
  const t = sessionStorage.getItem(tokenKey);
  if (t) h.Authorization = "Bearer " + t;
  return h;
}

// askToken shows the token form; a 401 answer calls it.
function askToken(message) {
  $("token-form").hidden = false;
  setStatus(message || "The server needs an API token.");
  $("token").focus();
}

function setStatus(text) { $("status").textContent = text; }

async function errorText(resp) {
  try {
    const body = await resp.json();
    if (body && body.error && body.error.message) return body.error.message;
  } catch (e) { /* not JSON */ }
  return "HTTP " + resp.status;
}

async function loadLanguages() {
  const resp = await fetch("/v1/languages", { headers: authHeaders() });
  if (resp.status === 401) { askToken(await errorText(resp)); return; }
  if (!resp.ok) { setStatus("Unable to list the languages: " + await errorText(resp)); return; }
  const body = await resp.json();
  const sel = $("language");
  const keep = sel.value || "python";
  sel.replaceChildren();
  for (const id of body.languages || []) {
    const o = document.createElement("option");
    o.value = id; o.textContent = id;
    sel.appendChild(o);
  }
  if ((body.languages || []).includes(keep)) sel.value = keep;
}

function appendOutput(stream, text) {
  const span = document.createElement("span");
  if (stream === "stderr") span.className = "stderr";
  span.textContent = text;
  $("output").appendChild(span);
}

// showDisplay shows what a notebook cell displayed: images arrive in
// base64 and become data: URLs (an SVG in an <img> runs no script);
// JSON and plain text are written as text.
function showDisplay(items) {
  const box = $("display");
  const images = ["image/png", "image/jpeg", "image/gif", "image/svg+xml"];
  for (const d of items || []) {
    if (!d || typeof d.data !== "string") continue;
    if (d.mime === "text/plain" || d.mime === "application/json") {
      appendOutput("stdout", d.data + "\n");
      continue;
    }
    if (!images.includes(d.mime) || !/^[A-Za-z0-9+/=\s]*$/.test(d.data)) continue;
    const img = document.createElement("img");
    img.alt = "Displayed " + d.mime + " image";
    img.src = "data:" + d.mime + ";base64," + d.data.replace(/\s/g, "");
    box.appendChild(img);
  }
}

// notebookSession is this tab's interpreter session id.
function notebookSession() {
  let id = sessionStorage.getItem("coderunner.session");
  if (!id) {
    const b = new Uint8Array(12);
    crypto.getRandomValues(b);
    id = "playground-" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    sessionStorage.setItem("coderunner.session", id);
  }
  return id;
}

function showResult(r) {
  if (r.error && r.error.message) { setStatus("Error: " + r.error.message); return; }
  let s = "Status: " + r.status + ", exit code " + r.exit_code;
  if (typeof r.execution_time === "number") s += ", " + r.execution_time.toFixed(3) + " s";
  if (r.error_message) s += " — " + r.error_message;
  if (r.truncated) s += " (output truncated)";
  if (r.value != null) appendOutput("stdout", "⇒ " + r.value + "\n");
  setStatus(s);
  showDisplay(r.display);
}

// readEvents reads a text/event-stream body, calling onEvent(name, data)
// for each event.
async function readEvents(body, onEvent) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onEvent(name, data.join("\n"));
    }
  }
}

function request() {
  const req = { language: $("language").value, code: $("code").value, stdin: $("stdin").value };
  const t = parseInt($("timeout").value, 10);
  if (t > 0) req.timeout = t;
  return req;
}

// runRequest is the /v1/run body: in notebook mode a cell of this tab's
// interpreter session.
function runRequest() {
  const req = request();
  if ($("notebook").checked) {
    req.mode = "interpreter";
    req.session_id = notebookSession();
  }
  return req;
}

async function run() {
  if (running) return;
  $("output").replaceChildren();
  $("display").replaceChildren();
  setStatus("Running…");
  running = new AbortController();
  $("run").disabled = true; $("stop").disabled = false;
  try {
    const resp = await fetch("/v1/run", {
      method: "POST", signal: running.signal,
      headers: authHeaders({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify(runRequest()),
    });
    if (resp.status === 401) { askToken(await errorText(resp)); return; }
    if (!resp.ok) { setStatus("Error: " + await errorText(resp)); return; }
    if (!(resp.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
      const r = await resp.json();
      appendOutput("stdout", r.stdout || ""); appendOutput("stderr", r.stderr || "");
      showResult(r);
      return;
    }
    await readEvents(resp.body, (name, data) => {
      let v;
      try { v = JSON.parse(data); } catch (e) { return; }
      if (name === "stdout" || name === "stderr") appendOutput(name, String(v));
      else if (name === "result") showResult(v);
    });
  } catch (e) {
    setStatus(e.name === "AbortError" ? "Stopped." : "Error: " + e.message);
  } finally {
    running = null;
    $("run").disabled = false; $("stop").disabled = true;
  }
}

function addTest(input, expected) {
  const tr = document.createElement("tr");
  const n = $("tests").tBodies[0].rows.length + 1;
  for (const [cls, text, label] of [["input", input, "Input of test "], ["expected", expected, "Expected output of test "]]) {
    const td = document.createElement("td");
    const ta = document.createElement("textarea");
    ta.className = cls; ta.rows = 2; ta.value = text || ""; ta.spellcheck = false;
    ta.setAttribute("aria-label", label + n);
    td.appendChild(ta); tr.appendChild(td);
  }
  const td = document.createElement("td");
  const rm = document.createElement("button");
  rm.type = "button"; rm.textContent = "Remove";
  rm.setAttribute("aria-label", "Remove test " + n);
  rm.addEventListener("click", () => tr.remove());
  td.appendChild(rm); tr.appendChild(td);
  $("tests").tBodies[0].appendChild(tr);
}

function cell(tr, text, cls) {
  const td = document.createElement("td");
  const pre = document.createElement("pre");
  pre.textContent = text == null ? "" : String(text);
  if (cls) td.className = cls;
  td.appendChild(pre);
  tr.appendChild(td);
}

async function judge() {
  const rows = Array.from($("tests").tBodies[0].rows);
  const req = request();
  delete req.stdin; delete req.timeout;
  const t = parseInt($("timeout").value, 10);
  if (t > 0) req.timeout_ms = Math.min(60000, t * 1000);
  req.test_cases = rows.map((tr, i) => ({
    id: String(i + 1),
    input: tr.querySelector(".input").value,
    expected_output: tr.querySelector(".expected").value,
  }));
  const out = $("results");
  out.tBodies[0].replaceChildren();
  out.hidden = true;
  $("verdict").textContent = "Judging…";
  $("judge").disabled = true;
  try {
    const resp = await fetch("/v1/judge", {
      method: "POST",
      headers: authHeaders({ "Content-Type": "application/json" }),
      body: JSON.stringify(req),
    });
    if (resp.status === 401) { askToken(await errorText(resp)); $("verdict").textContent = ""; return; }
    if (!resp.ok) { $("verdict").textContent = "Error: " + await errorText(resp); return; }
    const r = await resp.json();
    let v = "Verdict: " + r.status;
    if (r.summary) v += " — " + (typeof r.summary === "string" ? r.summary : JSON.stringify(r.summary));
    if (r.error_info && r.error_info.message) v += " — " + r.error_info.message;
    $("verdict").textContent = v;
    if (r.compilation_output) appendOutput("stderr", r.compilation_output);
    for (const tr of r.test_results || []) {
      const row = document.createElement("tr");
      cell(row, tr.test_id);
      cell(row, tr.status, tr.status === "passed" ? "passed" : "failed");
      cell(row, tr.execution_time_ms);
      cell(row, tr.actual_output);
      cell(row, tr.error_message);
      out.tBodies[0].appendChild(row);
    }
    out.hidden = false;
  } catch (e) {
    $("verdict").textContent = "Error: " + e.message;
  } finally {
    $("judge").disabled = false;
  }
}

// Tab in a code box indents instead of leaving it; Escape then Tab still
// leaves (the browser default), so the keyboard is never trapped.
let escaped = false;
function tabIndent(ev) {
  if (ev.key === "Escape") { escaped = true; return; }
  if (ev.key !== "Tab" || ev.ctrlKey || ev.metaKey || ev.altKey || escaped) { escaped = false; return; }
  ev.preventDefault();
  const ta = ev.target;
  const s = ta.selectionStart, e = ta.selectionEnd;
  if (ev.shiftKey) {
    const start = ta.value.lastIndexOf("\n", s - 1) + 1;
    if (ta.value.startsWith("    ", start)) {
      ta.setRangeText("", start, start + 4, "preserve");
    }
    return;
  }
  ta.setRangeText("    ", s, e, "end");
}

document.addEventListener("DOMContentLoaded", () => {
  $("code").addEventListener("keydown", tabIndent);
  $("run").addEventListener("click", run);
  $("stop").addEventListener("click", () => { if (running) running.abort(); });
  $("judge").addEventListener("click", judge);
  $("add-test").addEventListener("click", () => addTest("", ""));
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); run(); }
  });
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(tokenKey, $("token").value);
    $("token").value = "";
    $("token-form").hidden = true;
    setStatus("");
    loadLanguages();
  });
  addTest("1 2\n", "3\n");
  addTest("5 7\n", "12\n");
  loadLanguages();
});
