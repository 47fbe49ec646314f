// The page of rein serve: threads in a browser over the documented
// JSON-RPC protocol (docs/protocol.md), nothing private. Everything a model
// or a tool wrote reaches the DOM as text (textContent, or md.js, which
// builds nodes and never parses HTML).
import { render as renderMD } from "./md.js";

const $ = (id) => document.getElementById(id);
const h = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
};

// ---------------------------------------------------------------- the wire

// Client is one JSON-RPC connection over the server's WebSocket, made again
// with a growing delay when it is lost.
class Client {
  constructor(onNotify, onState) {
    this.onNotify = onNotify;
    this.onState = onState;
    this.ws = null;
    this.seq = 0;
    this.waiting = new Map();
    this.attempt = 0;
    this.everOpen = false;
  }

  connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    let ws;
    try {
      ws = new WebSocket(`${proto}//${location.host}/`, ["rein.v1"]);
    } catch (e) {
      this.retry(String(e));
      return;
    }
    let opened = false;
    ws.onopen = async () => {
      opened = true;
      this.ws = ws;
      try {
        const r = await this.call("initialize", { clientInfo: { name: "rein-web", title: "rein web page", version: "1" } });
        S.defaults = r.defaults || {};
      } catch (e) {
        this.onState("error", e.message);
        return;
      }
      this.attempt = 0;
      this.everOpen = true;
      this.onState("open");
    };
    ws.onmessage = (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch { return; }
      if (m.method && m.id == null) { this.onNotify(m.method, m.params || {}); return; }
      const w = this.waiting.get(m.id);
      if (!w) return;
      this.waiting.delete(m.id);
      if (m.error) {
        const err = new Error(m.error.message || "error");
        err.code = m.error.code;
        err.data = m.error.data;
        w.reject(err);
      } else w.resolve(m.result);
    };
    ws.onclose = (ev) => {
      if (this.ws === ws) this.ws = null;
      for (const w of this.waiting.values()) w.reject(new Error("the connection was lost"));
      this.waiting.clear();
      this.retry(opened ? (ev.reason || "connection lost") : "");
    };
  }

  async retry(reason) {
    this.attempt++;
    const delay = Math.min(10000, 500 * 2 ** Math.min(this.attempt - 1, 5));
    let signin = false;
    if (!this.everOpen && !reason) {
      // The upgrade failed before opening: is the server up but asking for
      // credentials? A browser is not told the status, so ask /healthz.
      try { signin = (await fetch("/healthz", { cache: "no-store" })).ok; } catch { signin = false; }
    }
    this.onState("closed", reason, delay, signin);
    setTimeout(() => this.connect(), delay);
  }

  call(method, params) {
    return new Promise((resolve, reject) => {
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
        reject(new Error("not connected; retrying"));
        return;
      }
      const id = ++this.seq;
      this.waiting.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }
}

// ------------------------------------------------------------------- state

const S = {
  defaults: {}, // the server's settings of threads that name none (initialize)
  threads: [],
  cursor: "",
  found: null, // the server's answer to the search, while there is one
  attach: [], // text files to send with the next message: {name, text}
  cur: null, // the open thread: see openThread
  buffered: null, // notifications that came while the open thread was read
};

const client = new Client(notify, connState);

function toast(msg) {
  let t = $("toast");
  if (!t) {
    t = h("div", "toast");
    t.id = "toast";
    t.setAttribute("role", "alert");
    Object.assign(t.style, { position: "fixed", bottom: "5.5em", left: "50%", transform: "translateX(-50%)", background: "var(--fg)", color: "var(--bg)", padding: ".5em 1em", borderRadius: "8px", maxWidth: "90vw", zIndex: 20 });
    document.body.appendChild(t);
  }
  t.textContent = msg;
  t.hidden = false;
  clearTimeout(t._timer);
  t._timer = setTimeout(() => { t.hidden = true; }, 6000);
}

async function rpc(method, params) {
  try {
    return await client.call(method, params);
  } catch (e) {
    toast(`${method}: ${e.message}`);
    throw e;
  }
}

function connState(state, reason, delay, signin) {
  const c = $("conn");
  document.body.dataset.conn = state;
  if (state === "open") {
    c.textContent = "connected";
    c.className = "conn ok";
    $("signin").hidden = true;
    loadThreads(true);
    const id = S.cur ? S.cur.id : threadFromHash();
    if (id) openThread(id);
    return;
  }
  if (state === "error") {
    c.textContent = reason;
    c.className = "conn bad";
    return;
  }
  c.className = "conn bad";
  c.textContent = `${reason ? reason + " · " : ""}offline, retrying in ${Math.round(delay / 1000) || 1}s`;
  if (signin) $("signin").hidden = false;
  setComposer();
}

// --------------------------------------------------------------- threads

function threadFromHash() {
  const m = /thread=([\w.:-]+)/.exec(location.hash);
  return m ? m[1] : "";
}

async function loadThreads(fresh) {
  let r;
  try { r = await rpc("thread/list", { limit: 100, cursor: fresh ? undefined : S.cursor || undefined }); } catch { return; }
  // Titles the page learned (from a first message) are kept where the
  // store has none.
  const known = new Map(S.threads.map((t) => [t.id, t]));
  const got = r.threads.map((t) => ({ ...t, title: t.title || (known.get(t.id) || {}).title }));
  if (fresh) S.threads = got;
  else S.threads.push(...got.filter((t) => !known.has(t.id)));
  S.cursor = r.nextCursor;
  $("more-threads").hidden = !S.cursor;
  drawThreads();
}

// The search asks the server (thread/list's query: titles of every
// thread, not only those loaded), a moment after the last key; older
// answers are dropped. The loaded threads are also filtered here, by id,
// workspace and model as well.
let searchTimer = 0;
let searchSeq = 0;
function searchThreads() {
  clearTimeout(searchTimer);
  const q = $("search").value.trim().slice(0, 320);
  if (!q) {
    S.found = null;
    drawThreads();
    return;
  }
  drawThreads();
  searchTimer = setTimeout(async () => {
    const n = ++searchSeq;
    let r;
    try { r = await rpc("thread/list", { limit: 100, query: q }); } catch { return; }
    if (n !== searchSeq || $("search").value.trim().slice(0, 320) !== q) return;
    S.found = r.threads;
    drawThreads();
  }, 200);
}

function age(iso) {
  const s = (Date.now() - new Date(iso).getTime()) / 1000;
  if (!(s >= 0)) return "";
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

function base(p) {
  return (p || "").replace(/\/+$/, "").split("/").pop();
}

function drawThreads() {
  const q = $("search").value.trim().toLowerCase();
  const ul = $("threads");
  ul.replaceChildren();
  // While searching: what the server found, then the loaded threads that
  // match here and it did not list.
  let list = S.threads;
  const found = q && S.found ? new Set(S.found.map((t) => t.id)) : null;
  if (found) list = [...S.found, ...S.threads.filter((t) => !found.has(t.id))];
  // This workspace's threads first (the server's default workspace), each
  // group most recently updated first as listed.
  const here = S.defaults.workspace;
  const order = here ? [...list.filter((t) => !t.workspace || t.workspace === here), ...list.filter((t) => t.workspace && t.workspace !== here)] : list;
  for (const t of order) {
    const hay = `${t.title || ""} ${t.id} ${t.workspace || ""} ${t.model || ""}`.toLowerCase();
    if (q && !(found && found.has(t.id)) && !hay.includes(q)) continue;
    const li = h("li");
    const b = h("button");
    b.type = "button";
    b.dataset.thread = t.id;
    if (S.cur && S.cur.id === t.id) b.setAttribute("aria-current", "true");
    b.appendChild(h("span", "t-title", t.title || "(no message yet)"));
    const meta = [age(t.updatedAt), t.turnCount ? `${t.turnCount} turn${t.turnCount > 1 ? "s" : ""}` : "", base(t.workspace), t.model || "", t.owner ? `by ${t.owner}` : ""].filter(Boolean).join(" · ");
    b.appendChild(h("span", "t-meta", meta));
    b.title = t.title || t.id;
    b.addEventListener("click", () => { openThread(t.id); closeSide(); });
    li.appendChild(b);
    ul.appendChild(li);
  }
}

function upsertThread(t) {
  const i = S.threads.findIndex((x) => x.id === t.id);
  if (i >= 0) S.threads[i] = { ...S.threads[i], ...t };
  else if (t.createdAt) S.threads.unshift(t);
  drawThreads();
}

// ------------------------------------------------------------- a thread

function newView(id) {
  return {
    id,
    thread: null,
    turns: new Map(), // id -> turn (wire form), with .el the turn's container
    items: new Map(), // item id or stream id -> element
    cards: new Map(), // call id -> tool card
    active: null, // the running or paused turn's id
    pause: null, // what the active turn waits for
    usage: new Map(), // turn id -> {inputTokens, outputTokens, cost}
    context: null,
  };
}

async function openThread(id) {
  // The thread left behind stops sending notifications unless a turn of it
  // runs (its end still reorders the list), so the server may forget it.
  const prev = S.cur;
  if (prev && prev.id !== id && !prev.active) {
    client.call("thread/unsubscribe", { threadId: prev.id }).catch(() => {});
  }
  const v = newView(id);
  S.cur = v;
  S.buffered = [];
  location.hash = `thread=${id}`;
  $("log").replaceChildren();
  $("pending").replaceChildren();
  drawThreads();
  let read;
  try {
    await rpc("thread/resume", { threadId: id });
    read = await rpc("thread/read", { threadId: id });
  } catch {
    S.buffered = null;
    return;
  }
  if (S.cur !== v) return;
  const t0 = performance.now();
  applyRead(v, read);
  const buf = S.buffered;
  S.buffered = null;
  for (const [m, p] of buf) handle(m, p);
  document.body.dataset.applyMs = String(Math.round(performance.now() - t0));
  // Rendered once the frame after it is laid out and painted.
  requestAnimationFrame(() => setTimeout(() => {
    document.body.dataset.renderMs = String(Math.round(performance.now() - t0));
    document.body.dataset.thread = id;
  }, 0));
  setComposer();
  $("input").focus();
}

function applyRead(v, r) {
  v.thread = r.thread;
  upsertThread(r.thread);
  drawHeader();
  const frag = document.createDocumentFragment();
  const log = $("log");
  for (const t of r.turns) {
    v.turns.set(t.id, t);
    v.usage.set(t.id, { inputTokens: t.usage.inputTokens, outputTokens: t.usage.outputTokens, cost: t.cost || 0 });
    if (t.status === "inProgress" || t.status === "paused") v.active = t.id;
  }
  // Items into their turns' containers, off the document, then in once.
  log.replaceChildren();
  v.lazy = true;
  for (const it of r.items) addItem(v, it.turnId || lastTurnId(v), it, frag);
  v.lazy = false;
  for (const t of r.turns) { ensureTurnEl(v, t.id, frag); drawFoot(v, t.id); }
  log.appendChild(frag);
  for (const t of r.turns) if (t.pause && t.id === v.active) showPause(v, t.id, t.pause);
  // The latest request's context budget, as the server last saw it: the
  // meter is filled before the next request.
  if (r.context) v.context = r.context;
  drawUsage();
  scrollDown(true);
}

function lastTurnId(v) {
  let last = "";
  for (const id of v.turns.keys()) last = id;
  return last;
}

function ensureTurnEl(v, turnId, parent) {
  let t = v.turns.get(turnId);
  if (!t) { t = { id: turnId, status: "inProgress", usage: { inputTokens: 0, outputTokens: 0 } }; v.turns.set(turnId, t); }
  if (!t.el) {
    t.el = h("div", "turn");
    t.el.dataset.turn = turnId;
    t.body = t.el.appendChild(h("div", "turn-body"));
    t.foot = t.el.appendChild(h("div", "turn-foot"));
    (parent || $("log")).appendChild(t.el);
  }
  return t;
}

function drawHeader() {
  const v = S.cur;
  const t = v && v.thread;
  $("thread-title").textContent = t ? (t.title || "New thread") : "No thread";
  $("thread-meta").textContent = t ? [t.id, t.workspace, t.model, t.approval && `approval ${t.approval}`, t.sandbox, t.knowledgeBases?.length && `kb ${t.knowledgeBases.join(", ")}`].filter(Boolean).join(" · ") : "";
}

function money(c) {
  if (!c) return "";
  return c < 0.01 ? `$${c.toFixed(4)}` : `$${c.toFixed(2)}`;
}

function tokens(n) {
  return n >= 1000 ? `${(n / 1000).toFixed(n >= 10000 ? 0 : 1)}k` : String(n);
}

function drawUsage() {
  const v = S.cur;
  if (!v) return;
  let i = 0, o = 0, c = 0;
  for (const u of v.usage.values()) { i += u.inputTokens; o += u.outputTokens; c += u.cost || 0; }
  $("usage").textContent = i || o ? `${tokens(i)} in · ${tokens(o)} out${c ? " · " + money(c) : ""}` : "";
  const m = $("meter");
  const cx = v.context;
  m.hidden = !cx;
  if (cx) {
    const pct = Math.max(0, Math.min(100, cx.percent || 0));
    $("meter-fill").style.width = `${pct}%`;
    $("meter-text").textContent = `${Math.round(pct)}% of ${tokens(cx.window || cx.total || 0)}`;
    m.className = "meter" + (pct >= 90 ? " full" : pct >= 70 ? " high" : "");
    m.title = `Context: ${cx.used} used, ${cx.free} free of ${cx.window} (${cx.source || "estimate"})`;
  }
}

function drawFoot(v, turnId) {
  const t = v.turns.get(turnId);
  if (!t || !t.foot) return;
  const f = t.foot;
  f.replaceChildren();
  f.dataset.status = t.status;
  if (t.status === "inProgress" || t.status === "queued") {
    f.appendChild(h("span", "status", t.status === "queued" ? "queued" : "working…"));
    return;
  }
  f.appendChild(h("span", `status ${t.status}`, t.status + (t.stopReason && t.stopReason !== "finished" ? ` · ${t.stopReason}` : "")));
  const u = v.usage.get(turnId);
  if (u) f.appendChild(h("span", null, `${tokens(u.inputTokens)} in · ${tokens(u.outputTokens)} out${u.cost ? " · " + money(u.cost) : ""}`));
  if (t.error) f.appendChild(h("span", "status failed", t.error));
  const b = h("button", "trace-btn", "Trace");
  b.type = "button";
  b.addEventListener("click", () => openTrace(v.id, turnId));
  f.appendChild(b);
  // Undo, where the turn wrote files through the file tools (turn/undo:
  // the runtime's undo, as rein undo).
  if (t.status !== "paused" && [...t.el.querySelectorAll(".tool")].some((c) => c._name === "write_file" || c._name === "edit_file")) {
    const u = h("button", "undo-btn", t.undone ? "Undone" : "Undo files");
    u.type = "button";
    u.disabled = !!t.undone;
    u.title = "Put back the files this turn wrote";
    u.addEventListener("click", () => undoTurn(v, turnId, false));
    f.appendChild(u);
  }
}

// undoTurn asks the server to undo a turn's file changes. Files changed
// since are never overwritten silently: the server refuses, naming them,
// and the user may then undo anyway.
async function undoTurn(v, turnId, force) {
  let r;
  try {
    r = await client.call("turn/undo", { threadId: v.id, turnId, force });
  } catch (e) {
    if (e.code === -32020 && !force) {
      const ul = $("undo-files");
      ul.replaceChildren(...((e.data && e.data.conflicts) || []).map((c) => h("li", null, `${c.path}: ${c.why}`)));
      const d = $("undo-dialog");
      d.returnValue = "";
      d.onclose = () => { if (d.returnValue === "force") undoTurn(v, turnId, true); };
      d.showModal();
      return;
    }
    toast(`Undo: ${e.message}`);
    return;
  }
  const t = v.turns.get(turnId);
  if (t) {
    t.undone = true;
    drawFoot(v, turnId);
  }
  toast(r.summary);
}

// ------------------------------------------------------------------ items

function addItem(v, turnId, it, parent) {
  const t = ensureTurnEl(v, turnId, parent);
  if (it.type === "userMessage") return userItem(v, t, it);
  if (it.type === "agentMessage") return agentItem(v, t, it);
  if (it.type === "toolResult") return resultItem(v, t, it);
}

function userItem(v, t, it) {
  let el = v.items.get(it.id);
  if (el) return el;
  if (it.origin === "directive") {
    el = h("div", "item note hidden");
    el.hidden = true;
  } else if (it.origin === "marker") {
    el = h("div", "item note", it.text || "");
  } else {
    el = h("div", `item user${it.origin === "steer" ? " steer" : ""}`);
    const parts = splitAttachments(it.text || "");
    el.appendChild(h("div", "bubble", parts.text));
    for (const a of parts.files) {
      const d = el.appendChild(h("details", "attachment"));
      d.appendChild(h("summary", null, `${a.name} · ${a.size} bytes`));
      d.appendChild(h("pre", null, a.body));
    }
    if (!it.origin && v.thread && !v.thread.title && it.text) {
      // A store that keeps no title: the first message is the title.
      v.thread.title = (parts.text || it.text).replace(/\s+/g, " ").slice(0, 80);
      upsertThread({ id: v.id, title: v.thread.title });
      drawHeader();
    }
  }
  el.dataset.id = it.id;
  v.items.set(it.id, el);
  t.body.appendChild(el);
  return el;
}

function agentEl(v, t, id) {
  let el = v.items.get(id);
  if (el) return el;
  el = h("div", "item agent");
  el.dataset.id = id;
  el._text = "";
  el._think = "";
  el.md = el.appendChild(h("div", "md"));
  el.calls = el.appendChild(h("div", "calls"));
  v.items.set(id, el);
  t.body.appendChild(el);
  return el;
}

function thinkingOf(el) {
  if (!el.thinking) {
    const d = h("details", "thinking");
    d.appendChild(h("summary", null, "Reasoning"));
    d.body = d.appendChild(h("div", "body"));
    el.insertBefore(d, el.md);
    el.thinking = d;
  }
  return el.thinking;
}

function agentItem(v, t, it) {
  let el = v.items.get(it.id);
  const streamed = it.streamId && v.items.get(it.streamId);
  if (streamed && streamed !== el) {
    if (el) streamed.remove(); // read from the store meanwhile: keep that one
    else { el = streamed; el.dataset.id = it.id; v.items.set(it.id, el); }
    v.items.delete(it.streamId);
  }
  el = el || agentEl(v, t, it.id);
  el.classList.toggle("streaming", it.status === "inProgress");
  if (it.status === "completed") {
    el._text = it.text || "";
    el._think = it.thinking || "";
    if (v.lazy) {
      // Read from the store: rendered when it scrolls into view.
      el.md.textContent = el._text;
      if (el._think) thinkingOf(el).body.textContent = el._think;
      el._lazy = true;
      lazy.observe(el);
    } else paint(el);
    for (const c of it.calls || []) {
      const card = cardFor(v, el, c.id, c.name);
      card._args = c.arguments || "";
      drawArgs(card);
    }
  }
  return el;
}

// lazy renders the markdown of the messages of a thread read whole when
// they come near the screen: a thread of thousands of items opens in the
// time of the few that show.
const lazy = new IntersectionObserver((entries) => {
  for (const e of entries) {
    if (!e.isIntersecting) continue;
    lazy.unobserve(e.target);
    if (e.target._lazy) paint(e.target);
  }
}, { rootMargin: "800px 0px" });

// paint renders an agent message's text and reasoning now.
function paint(el) {
  el._lazy = false;
  renderMD(el.md, el._text);
  if (el._think) thinkingOf(el).body.textContent = el._think;
}

// schedule paints an agent message at a coming frame: deltas come faster
// than frames, and a frame renders only the blocks that changed (md.js).
// Streaming paints come at most every minGap ms (a frame of layout and
// paint each, however small the change), and a paint that took d ms is
// followed by at least 3d ms without one, so a long answer rendered again
// and again never takes the main thread. The scroll to the end happens at
// the start of the next paint, before any change, when the layout the
// browser made for the last one is still valid: reading it then costs no
// layout of its own.
const minGap = 50;
let dirty = new Set();
let frame = 0;
let nextPaint = 0;
let scrollDue = false;
function schedule(el) {
  dirty.add(el);
  if (frame) return;
  const wait = Math.max(0, nextPaint - performance.now());
  const go = () => {
    frame = 0;
    if (scrollDue) { scrollDown(); scrollDue = false; }
    const t0 = performance.now();
    const d = dirty;
    dirty = new Set();
    for (const e of d) paint(e);
    const t1 = performance.now();
    nextPaint = t1 + Math.max(minGap, 3 * (t1 - t0));
    scrollDue = true;
    // The last paint's scroll, once it is laid out, when nothing follows.
    requestAnimationFrame(() => { if (scrollDue && !frame) { scrollDown(); scrollDue = false; } });
  };
  frame = wait > 0 ? setTimeout(() => requestAnimationFrame(go), wait) : requestAnimationFrame(go);
}

function cardFor(v, parent, callId, name) {
  let card = v.cards.get(callId);
  if (card) return card;
  card = h("details", "tool");
  card.dataset.call = callId;
  const s = card.appendChild(h("summary"));
  card.nameEl = s.appendChild(h("span", "name", name || "tool"));
  card.brief = s.appendChild(h("span", "brief"));
  card.st = s.appendChild(h("span", "st running", "running"));
  card.dur = s.appendChild(h("span", "dur"));
  card.argsSect = card.appendChild(h("div", "sect"));
  card.resSect = card.appendChild(h("div", "sect"));
  card.resSect.hidden = true;
  card._args = "";
  card._name = name || "";
  v.cards.set(callId, card);
  (parent.calls || parent.body || parent).appendChild(card);
  return card;
}

function parseArgs(s) {
  try { return JSON.parse(s); } catch { return null; }
}

function drawArgs(card) {
  const a = parseArgs(card._args);
  card.brief.textContent = a && typeof a === "object" ? (a.path || a.command || a.query || a.url || a.pattern || Object.values(a).find((x) => typeof x === "string") || "") : card._args.slice(0, 120);
  card.argsSect.replaceChildren(h("h4", null, "Arguments"));
  const diff = a && editDiff(card._name, a);
  if (diff) card.argsSect.appendChild(diff);
  else card.argsSect.appendChild(h("pre", null, a ? JSON.stringify(a, null, 2) : card._args));
}

function resultItem(v, t, it) {
  const r = it.result || {};
  let card = v.cards.get(r.callId);
  if (!card) {
    // A result whose call was not seen (a thread read from the middle).
    const holder = h("div", "item agent");
    holder.calls = holder;
    t.body.appendChild(holder);
    card = cardFor(v, holder, r.callId, r.name);
  }
  card._name = r.name || card._name;
  card.nameEl.textContent = card._name;
  v.items.set(it.id, card);
  if (it.streamId) v.items.delete(it.streamId);
  if (it.status === "inProgress") {
    card._start = performance.now();
    card.st.textContent = "running";
    card.st.className = "st running";
    if (r.arguments && !card._args) { card._args = r.arguments; drawArgs(card); }
    return card;
  }
  const st = r.status || "ok";
  card.st.textContent = st;
  card.st.className = `st ${st}`;
  card.dataset.status = st;
  if (card._start) card.dur.textContent = `${((performance.now() - card._start) / 1000).toFixed(1)} s`;
  card.resSect.hidden = false;
  card.resSect.replaceChildren(h("h4", null, "Result"));
  const text = r.content || "";
  card.resSect.appendChild(h("pre", null, text.length > 20000 ? text.slice(0, 20000) + `\n… ${text.length - 20000} more characters` : text));
  if (st === "error" || st === "aborted") card.open = true;
  return card;
}

// editDiff shows the change an edit or write makes, as a unified diff.
function editDiff(name, a) {
  if (name === "edit_file" && typeof a.patch === "string" && a.patch) return patchView(a.path, a.patch);
  // replace_all changes every occurrence, where the diff shows one: say so.
  if (name === "edit_file" && typeof a.old_string === "string") return diffView(a.replace_all ? `${a.path || ""} · every occurrence (replace_all)` : a.path, a.old_string, a.new_string || "");
  if (name === "write_file" && typeof a.content === "string") return diffView(a.path, "", a.content);
  return null;
}

function patchView(path, patch) {
  const d = h("div", "diff");
  d.appendChild(h("div", "hunk", path || ""));
  for (const l of patch.split("\n")) d.appendChild(h("div", l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : "", l));
  return d;
}

// diffView diffs two texts by lines (longest common subsequence; large
// texts are shown as removed and added whole), unified or side by side.
function diffView(path, a, b) {
  const x = a === "" ? [] : a.split("\n");
  const y = b === "" ? [] : b.split("\n");
  const ops = []; // [kind, text]: " " kept, "-" removed, "+" added
  const n = x.length, m = y.length;
  if (n * m > 4e6) {
    x.forEach((s) => ops.push(["-", s]));
    y.forEach((s) => ops.push(["+", s]));
  } else {
    const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] === y[j]) { ops.push([" ", x[i]]); i++; j++; }
      else if (i < n && (j === m || L[i + 1][j] >= L[i][j + 1])) { ops.push(["-", x[i]]); i++; }
      else { ops.push(["+", y[j]]); j++; }
    }
  }
  const wrap = h("div", "diffwrap");
  const head = wrap.appendChild(h("div", "row between"));
  head.appendChild(h("span", "hunk", path || ""));
  const toggle = head.appendChild(h("button", "link", "Side by side"));
  toggle.type = "button";
  toggle.setAttribute("aria-pressed", "false");
  let box = wrap.appendChild(unified(ops));
  toggle.addEventListener("click", () => {
    const split = toggle.getAttribute("aria-pressed") !== "true";
    toggle.setAttribute("aria-pressed", String(split));
    toggle.textContent = split ? "Unified" : "Side by side";
    const next = split ? sideBySide(ops) : unified(ops);
    box.replaceWith(next);
    box = next;
  });
  return wrap;
}

function unified(ops) {
  const d = h("div", "diff");
  for (const [k, s] of ops) d.appendChild(h("div", k === "+" ? "add" : k === "-" ? "del" : "", k + s));
  return d;
}

// sideBySide pairs each run of removed lines with the added lines after it.
function sideBySide(ops) {
  const d = h("div", "diff split");
  const row = (l, r) => {
    d.appendChild(h("div", l == null ? "none" : l[0] === "-" ? "del" : "", l == null ? "" : l[1]));
    d.appendChild(h("div", r == null ? "none" : r[0] === "+" ? "add" : "", r == null ? "" : r[1]));
  };
  for (let i = 0; i < ops.length;) {
    if (ops[i][0] === " ") { row(ops[i], ops[i]); i++; continue; }
    const del = [], add = [];
    while (i < ops.length && ops[i][0] === "-") del.push(ops[i++]);
    while (i < ops.length && ops[i][0] === "+") add.push(ops[i++]);
    for (let k = 0; k < Math.max(del.length, add.length); k++) row(del[k], add[k]);
  }
  return d;
}

// ------------------------------------------------------------ notifications

function notify(method, p) {
  if (S.buffered && S.cur && p.threadId === S.cur.id) { S.buffered.push([method, p]); return; }
  handle(method, p);
}

function handle(method, p) {
  const v = S.cur;
  if (method === "turn/completed" || method === "turn/started") {
    const t = S.threads.find((x) => x.id === p.threadId);
    if (t) { t.updatedAt = new Date().toISOString(); drawThreads(); }
  }
  if (!v || p.threadId !== v.id) return;
  switch (method) {
    case "turn/started": {
      const t = ensureTurnEl(v, p.turn.id);
      t.status = "inProgress";
      v.active = p.turn.id;
      if (!v.usage.has(p.turn.id)) v.usage.set(p.turn.id, { inputTokens: 0, outputTokens: 0, cost: 0 });
      drawFoot(v, p.turn.id);
      break;
    }
    case "turn/completed": {
      const t = ensureTurnEl(v, p.turn.id);
      const el = t.el;
      Object.assign(t, p.turn, { el, body: t.body, foot: t.foot });
      v.usage.set(p.turn.id, { inputTokens: p.turn.usage.inputTokens, outputTokens: p.turn.usage.outputTokens, cost: p.turn.cost || 0 });
      if (p.turn.status !== "paused") {
        if (v.active === p.turn.id) v.active = null;
        clearPause(v);
      }
      for (const e of t.body.querySelectorAll(".streaming")) e.classList.remove("streaming");
      drawFoot(v, p.turn.id);
      drawUsage();
      if (p.turn.status !== "paused" && p.turn.status !== "completed" && p.turn.error) toast(p.turn.error);
      break;
    }
    case "item/started":
    case "item/completed": {
      const el = addItem(v, p.turnId, p.item);
      if (p.item.type === "agentMessage" && p.item.status === "inProgress" && el) el.classList.add("streaming");
      if (p.item.type === "toolResult" && p.item.status === "completed" && v.pause && p.item.result && p.item.result.callId === v.pause.callId && p.item.result.status !== "pending") clearPause(v);
      scrollDown();
      break;
    }
    case "item/delta": {
      const t = ensureTurnEl(v, p.turnId);
      if (p.kind === "arguments") {
        const msg = agentEl(v, t, p.itemId);
        const card = cardFor(v, msg, p.callId || "?", "");
        card._args += p.delta;
        card.brief.textContent = card._args.slice(-100);
        break;
      }
      const el = agentEl(v, t, p.itemId);
      el.classList.add("streaming");
      if (p.kind === "thinking") el._think += p.delta;
      else el._text += p.delta;
      schedule(el);
      break;
    }
    case "pause/requested":
      showPause(v, p.turnId, { kind: "question", callId: p.callId, tool: p.tool, intro: p.intro, questions: p.questions });
      break;
    case "approval/requested":
      showPause(v, p.turnId, { kind: "approval", callId: p.callId, tool: p.tool, arguments: p.arguments, reason: p.reason });
      break;
    case "usage/updated": {
      const u = v.usage.get(p.turnId) || { inputTokens: 0, outputTokens: 0, cost: 0 };
      u.inputTokens += p.usage.inputTokens;
      u.outputTokens += p.usage.outputTokens;
      if (p.cost) u.cost = p.cost;
      v.usage.set(p.turnId, u);
      drawUsage();
      break;
    }
    case "context/updated":
      v.context = p.context;
      drawUsage();
      break;
    case "warning":
      if (p.code === "notifications_dropped") { openThread(v.id); break; }
      if (p.message) toast(p.message);
      break;
  }
  setComposer();
}

// ---------------------------------------------------------------- pauses

function clearPause(v) {
  v.pause = null;
  $("pending").replaceChildren();
}

function showPause(v, turnId, pause) {
  v.pause = { ...pause, turnId };
  v.active = turnId;
  const box = $("pending");
  box.replaceChildren();
  const card = h("div", "card");
  card.dataset.pause = pause.kind;
  if (pause.kind === "approval") approvalCard(v, card, turnId, pause);
  else questionCard(v, card, turnId, pause);
  box.appendChild(card);
  const first = card.querySelector("[data-decision=approve]") || card.querySelector("input, textarea, button");
  if (first) first.focus();
  scrollDown(true);
}

function approvalCard(v, card, turnId, p) {
  card.appendChild(h("h3", null, `Allow ${p.tool}?`));
  // Why these arguments need asking (a write every workspace's prompt
  // carries): approving the tool for the thread would not cover it.
  if (p.reason) card.appendChild(h("p", "why", p.reason));
  const a = parseArgs(p.arguments || "");
  const diff = a && editDiff(p.tool, a);
  card.appendChild(diff || h("pre", null, a ? JSON.stringify(a, null, 2) : p.arguments || ""));
  const reason = h("input");
  reason.type = "text";
  reason.placeholder = "reason (sent to the model with a denial)";
  reason.setAttribute("aria-label", "Reason for denying");
  const row = h("div", "row");
  const answer = async (decision) => {
    for (const b of row.querySelectorAll("button")) b.disabled = true;
    try {
      await rpc("approval/answer", { threadId: v.id, turnId, callId: p.callId, decision, text: reason.value || undefined });
      clearPause(v);
    } catch {
      for (const b of row.querySelectorAll("button")) b.disabled = false;
    }
  };
  const choices = [["Approve", "approve", "primary"], ["Approve for this thread", "approveThread", ""], ["Deny", "deny", "danger"]];
  for (const [label, d, cls] of p.reason ? choices.filter((c) => c[1] !== "approveThread") : choices) {
    const b = h("button", cls, label);
    b.type = "button";
    b.dataset.decision = d;
    b.addEventListener("click", () => answer(d));
    row.appendChild(b);
  }
  card.appendChild(row);
  card.appendChild(reason);
  reason.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); answer("deny"); } });
}

function questionCard(v, card, turnId, p) {
  const form = h("form");
  form.appendChild(h("h3", null, p.intro || "rein asks"));
  const getters = [];
  (p.questions || []).forEach((q, qi) => {
    const fs = h("fieldset");
    fs.appendChild(h("legend", null, q.header ? `${q.header}: ${q.prompt}` : q.prompt));
    const name = `q${qi}`;
    const picked = [];
    for (const o of q.options || []) {
      const l = h("label", "opt");
      const inp = h("input");
      inp.type = q.multiSelect ? "checkbox" : "radio";
      inp.name = name;
      inp.value = o.label;
      picked.push(inp);
      l.appendChild(inp);
      l.appendChild(document.createTextNode(" " + o.label));
      if (o.description) l.appendChild(h("span", "desc", ` — ${o.description}`));
      fs.appendChild(l);
    }
    let free = null;
    if (q.allowFreeText || !(q.options || []).length) {
      free = h("input");
      free.type = "text";
      free.placeholder = (q.options || []).length ? "or answer in your words" : "your answer";
      free.setAttribute("aria-label", q.prompt);
      fs.appendChild(free);
    }
    getters.push(() => {
      const txt = free && free.value.trim();
      const chosen = picked.filter((i) => i.checked).map((i) => i.value);
      return { questionId: q.id, text: txt || chosen.join(", ") };
    });
    form.appendChild(fs);
  });
  const send = h("button", "primary", "Answer");
  send.type = "submit";
  form.appendChild(send);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const answers = getters.map((g) => g());
    if (answers.some((a) => !a.text)) { toast("answer every question"); return; }
    send.disabled = true;
    try {
      await rpc("pause/answer", { threadId: v.id, turnId, callId: p.callId, answers });
      clearPause(v);
    } catch { send.disabled = false; }
  });
  card.appendChild(form);
}

// -------------------------------------------------------------- composer

function setComposer() {
  const v = S.cur;
  const open = document.body.dataset.conn === "open";
  const running = !!(v && v.active);
  $("input").disabled = !v || !open;
  $("send").disabled = !v || !open;
  $("attach").disabled = !v || !open;
  $("send").textContent = running ? "Steer" : "Send";
  $("send").title = running ? "Steer the running turn: read before its next model call (Enter)" : "Send (Enter)";
  $("queue").hidden = !running;
  $("stop").hidden = !running;
  $("input").placeholder = running ? "Steer the running turn, or queue the next (Alt+Enter)" : "Message rein";
}

// Attached files. The server puts each into the message, headed by its
// name, in a fence longer than any backtick run in it (server/attach.go);
// splitAttachments takes them out again to show them folded.
const ATTACH_MAX = 10;
const ATTACH_SIZE = 256 << 10;
const attachRE = /\n\nAttached file ("(?:[^"\\]|\\.)*") \((\d+) bytes\):\n(`{3,})\n([\s\S]*?)\n\3\n/g;

function splitAttachments(text) {
  const files = [];
  const rest = text.replace(attachRE, (m, name, size, _fence, body) => {
    let n = name;
    try { n = JSON.parse(name); } catch { /* shown as sent */ }
    files.push({ name: n, size: Number(size), body });
    return "";
  });
  return { text: files.length ? rest.trim() : text, files };
}

async function addFiles(files) {
  for (const f of files) {
    if (S.attach.length >= ATTACH_MAX) { toast(`attach at most ${ATTACH_MAX} files`); break; }
    if (f.size > ATTACH_SIZE) { toast(`${f.name} is over ${ATTACH_SIZE >> 10} KiB; attach smaller text files`); continue; }
    let text;
    try { text = new TextDecoder("utf-8", { fatal: true }).decode(await f.arrayBuffer()); } catch { text = null; }
    if (text == null || text.includes("\u0000")) { toast(`${f.name} is not a text file`); continue; }
    S.attach.push({ name: f.name, text });
  }
  drawAttachments();
}

function drawAttachments() {
  const ul = $("attachments");
  ul.replaceChildren(...S.attach.map((a, i) => {
    const li = h("li", "chip");
    li.appendChild(h("span", null, `${a.name} · ${a.text.length < 1024 ? a.text.length + " B" : Math.ceil(a.text.length / 1024) + " KiB"}`));
    const x = li.appendChild(h("button", null, "×"));
    x.type = "button";
    x.setAttribute("aria-label", `Remove ${a.name}`);
    x.addEventListener("click", () => { S.attach.splice(i, 1); drawAttachments(); });
    return li;
  }));
  ul.hidden = !S.attach.length;
}

async function submit(queue) {
  const v = S.cur;
  const inp = $("input");
  const text = inp.value;
  if (!v || (!text.trim() && !S.attach.length)) return;
  const files = S.attach;
  const input = [...(text.trim() ? [{ type: "text", text }] : []), ...files.map((a) => ({ type: "file", name: a.name, text: a.text }))];
  inp.value = "";
  S.attach = [];
  drawAttachments();
  try {
    if (v.active && !queue) {
      try {
        await client.call("turn/steer", { threadId: v.id, expectedTurnId: v.active, input });
        return;
      } catch (e) {
        // The turn ended meanwhile: the input becomes a turn of its own.
        if (e.code !== -32010 && e.code !== -32011) throw e;
      }
    }
    const r = await client.call("turn/start", { threadId: v.id, input });
    if (r.turn.status === "queued") { const t = ensureTurnEl(v, r.turn.id); t.status = "queued"; drawFoot(v, r.turn.id); }
  } catch (e) {
    inp.value = text;
    S.attach = files;
    drawAttachments();
    toast(e.message);
  }
}

async function interrupt() {
  const v = S.cur;
  if (!v || !v.active) return;
  try { await rpc("turn/interrupt", { threadId: v.id, turnId: v.active }); } catch { /* shown */ }
}

// --------------------------------------------------------------- the rest

let pinned = true;
function scrollDown(force) {
  const log = $("log");
  if (force || pinned) log.scrollTop = log.scrollHeight;
}

async function openTrace(threadId, turnId) {
  let r;
  try { r = await rpc("turn/trace", { threadId, turnId }); } catch { return; }
  $("trace-title").textContent = `Trace of ${turnId}`;
  $("trace-frame").srcdoc = r.html;
  $("trace-dialog").showModal();
}

function closeSide() {
  $("side").classList.remove("open");
  $("menu").setAttribute("aria-expanded", "false");
}

function theme() {
  const saved = localStorage.getItem("rein-theme");
  if (saved) document.documentElement.dataset.theme = saved;
}

// drawKBs lists the knowledge bases in the new-thread dialog. A base
// still listed keeps its box, in place: redrawn, a box the user had just
// checked or focused was replaced under them (its check kept, the focus
// and a click on its way lost).
let kbSeq = 0;
function drawKBs(list) {
  const kbs = Array.isArray(list) ? list.filter((k) => typeof k === "string") : [];
  const box = $("kb-list");
  $("new-kbs").hidden = kbs.length === 0;
  const have = new Map([...box.children].map((l) => [l.querySelector("input").value, l]));
  const want = new Set(kbs);
  for (const [name, l] of have) if (!want.has(name)) { l.remove(); have.delete(name); }
  let at = box.firstChild;
  for (const name of kbs) {
    let l = have.get(name);
    if (!l) {
      const i = h("input");
      i.type = "checkbox"; i.name = "kb"; i.value = name;
      l = h("label");
      l.append(i, h("span", null, name));
      have.set(name, l);
    }
    if (l === at) at = at.nextSibling;
    else box.insertBefore(l, at);
  }
}

function init() {
  theme();
  $("theme").addEventListener("click", () => {
    const dark = document.documentElement.dataset.theme ? document.documentElement.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
    const next = dark ? "light" : "dark";
    document.documentElement.dataset.theme = next;
    localStorage.setItem("rein-theme", next);
  });
  $("menu").addEventListener("click", () => {
    const open = $("side").classList.toggle("open");
    $("menu").setAttribute("aria-expanded", String(open));
    // Keyboard users land in the list they opened.
    if (open) ($("threads").querySelector("[aria-current=true]") || $("new-thread")).focus();
  });
  $("search").addEventListener("input", searchThreads);
  $("more-threads").addEventListener("click", () => loadThreads(false));
  $("log").addEventListener("scroll", () => {
    const l = $("log");
    pinned = l.scrollHeight - l.scrollTop - l.clientHeight < 80;
  });
  $("composer").addEventListener("submit", (e) => { e.preventDefault(); submit(false); });
  $("queue").addEventListener("click", () => submit(true));
  $("attach").addEventListener("click", () => $("attach-input").click());
  $("attach-input").addEventListener("change", async (e) => { await addFiles([...e.target.files]); e.target.value = ""; });
  $("composer").addEventListener("dragover", (e) => { if (e.dataTransfer && [...e.dataTransfer.types].includes("Files")) e.preventDefault(); });
  $("composer").addEventListener("drop", (e) => {
    if (!e.dataTransfer || !e.dataTransfer.files.length) return;
    e.preventDefault();
    addFiles([...e.dataTransfer.files]);
  });
  $("stop").addEventListener("click", interrupt);
  $("input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit(e.altKey);
    }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || document.querySelector("dialog[open]")) return;
    e.preventDefault();
    // Esc closes the threads opened over the page (a phone's width)
    // first; otherwise it interrupts.
    if ($("side").classList.contains("open")) {
      closeSide();
      $("menu").focus();
      return;
    }
    interrupt();
  });
  const dlg = $("new-dialog");
  $("new-thread").addEventListener("click", () => {
    $("new-error").textContent = "";
    const d = S.defaults;
    const f = $("new-form");
    f.workspace.placeholder = d.workspace ? `the server's: ${d.workspace}` : "the server's";
    f.model.placeholder = d.model ? `the server's: ${d.model}` : "the server's";
    const list = $("models");
    list.replaceChildren(...(d.models || []).map((m) => { const o = h("option"); o.value = m; return o; }));
    for (const [sel, val] of [[f.approval, d.approval], [f.sandbox, d.sandbox]]) sel.options[0].textContent = val ? `the server's (${val})` : "the server's";
    // The knowledge bases as initialize listed them, none checked, then
    // as they are now (knowledge/list: rein kb changes them while the
    // page is open); the boxes checked meanwhile stay checked.
    $("kb-list").replaceChildren();
    drawKBs(d.knowledgeBases);
    dlg.showModal();
    const seq = ++kbSeq;
    client.call("knowledge/list", {}).then((r) => {
      if (seq === kbSeq && dlg.open) drawKBs(r.knowledgeBases);
    }, () => { /* an older server: initialize's list stays */ });
  });
  $("new-cancel").addEventListener("click", () => dlg.close());
  $("new-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    const params = {};
    for (const k of ["workspace", "model", "approval", "sandbox", "instructions"]) {
      const x = String(f.get(k) || "").trim();
      if (x) params[k] = x;
    }
    const kbs = f.getAll("kb").map(String);
    if (kbs.length) params.knowledgeBases = kbs;
    try {
      const r = await client.call("thread/start", params);
      dlg.close();
      upsertThread(r.thread);
      await openThread(r.thread.id);
    } catch (err) {
      $("new-error").textContent = err.message;
    }
  });
  $("trace-close").addEventListener("click", () => $("trace-dialog").close());
  window.addEventListener("hashchange", () => {
    const id = threadFromHash();
    if (id && (!S.cur || S.cur.id !== id) && document.body.dataset.conn === "open") openThread(id);
  });
  setComposer();
  client.connect();
}

init();
