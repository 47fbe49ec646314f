// A small, safe markdown renderer: it builds DOM nodes with textContent and
// createElement only, never innerHTML, so nothing a model writes becomes
// markup. It knows what models write: headings, paragraphs, fenced code
// (with a light highlighter), lists, quotes, rules, tables, and inline code,
// bold, italic, strikethrough and links (http, https and mailto only).
//
// What a model writes is hostile: no pattern here may take more than about
// linear time on it (a regular expression that backtracks over a long line
// froze the tab: 4,000 backticks took 20 s), quotes nest at most maxQuote
// deep (each level is a call), and text past the bounds below is shown as
// it is, unformatted.

// maxInline bounds the text of one line (or list item) that inline markdown
// is parsed in; a longer one is plain text.
const maxInline = 20000;
// maxQuote bounds how deep quotes nest; deeper ">" are shown as text.
const maxQuote = 8;
// maxHighlightLine bounds the longest line of a code block that is
// highlighted; a block with a longer line (minified code) is plain text.
const maxHighlightLine = 1000;

// spans splits text from offset from into block sources with their start
// offsets: fenced code is one block, other blocks end at a blank line.
function spans(text, from) {
  const starts = [];
  const srcs = [];
  let pos = from;
  let cur = [];
  let at = 0;
  let fence = null;
  const flush = () => { if (cur.length) { starts.push(at); srcs.push(cur.join("\n")); cur = []; } };
  for (const line of text.slice(from).split("\n")) {
    const lineAt = pos;
    pos += line.length + 1;
    if (fence) {
      cur.push(line);
      if (line.trimStart().startsWith(fence)) { flush(); fence = null; }
      continue;
    }
    const m = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (m) { flush(); fence = m[1]; at = lineAt; cur.push(line); continue; }
    if (line.trim() === "") { flush(); continue; }
    if (!cur.length) at = lineAt;
    cur.push(line);
  }
  flush();
  return { starts, srcs };
}

// blocks splits text into block sources: fenced code is one block, other
// blocks end at a blank line. Streaming re-renders only the blocks that
// changed (render below).
export function blocks(text) {
  return spans(text, 0).srcs;
}

// render renders text into el, reusing the nodes of blocks that did not
// change since the last call with the same el. A streamed answer grows at
// its end: when text extends the last one rendered, only its last block
// onwards is split again, and that block, when it grew as the same kind
// (a paragraph, a list, a table or fenced code), keeps the nodes of what
// in it is final and rebuilds only its last line, item or row (extend
// below): a paint costs the same at the end of a long answer, or a long
// code block, as at its start.
export function render(el, text, depth = 0) {
  const prev = el._md;
  let base = 0;
  if (prev && prev.srcs.length && text.startsWith(prev.text)) base = prev.srcs.length - 1;
  const sp = spans(text, base ? prev.starts[base] : 0);
  const old = prev ? prev.srcs : [];
  const srcs = old.slice(0, base).concat(sp.srcs);
  const starts = (prev ? prev.starts.slice(0, base) : []).concat(sp.starts);
  let i = base;
  while (i < srcs.length && i < old.length && srcs[i] === old[i]) i++;
  const nodes = el.childNodes;
  while (nodes.length > i + 1) el.lastChild.remove();
  if (nodes.length > i && !(i === old.length - 1 && i < srcs.length && extend(nodes[i], old[i], srcs[i]))) el.lastChild.remove();
  const frag = document.createDocumentFragment();
  for (let j = nodes.length; j < srcs.length; j++) frag.appendChild(block(srcs[j], depth));
  el.appendChild(frag);
  el._md = { text, srcs, starts };
}

// kind is what block makes of a block's lines, and the fence's opening
// match for fenced code.
function kind(lines) {
  const first = lines[0];
  const m = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/.exec(first);
  if (m) return { k: "fence", m };
  if (lines.length === 1 && /^\s{0,3}(#{1,6})\s+(.*)$/.test(first)) return { k: "heading" };
  if (lines.length === 1 && /^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(first)) return { k: "hr" };
  if (lines.every(l => /^\s{0,3}>/.test(l))) return { k: "quote" };
  if (/^\s{0,3}([-*+]|\d{1,9}[.)])\s+/.test(first)) return { k: "list" };
  if (lines.length >= 2 && /^\s*\|?.*\|.*$/.test(first) && /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(lines[1])) return { k: "table" };
  return { k: "p" };
}

// extend makes e, the element block made of src, the element of next,
// which extends src, changing only its end, and reports whether it could:
// the same kind of block whose earlier lines, items, rows or highlighted
// code are final. Otherwise the caller builds next afresh.
function extend(e, src, next) {
  if (!next.startsWith(src) || !e._tail) return false;
  const a = src.split("\n"), b = next.split("\n");
  const ka = kind(a), kb = kind(b);
  if (ka.k !== kb.k || e._tail.k !== ka.k) return false;
  const t = e._tail;
  if (ka.k === "p") {
    // Lines are rendered one by one: the last one may have grown.
    while (e.childNodes.length > t.at) e.lastChild.remove();
    paraLines(e, b, a.length - 1);
    return true;
  }
  if (ka.k === "list") {
    const ordered = /^\s{0,3}\d/.test(a[0]);
    if (ordered !== /^\s{0,3}\d/.test(b[0]) || (ordered && parseInt(a[0], 10) !== parseInt(b[0], 10))) return false;
    // Items before the last are final: the next one has begun.
    e.lastChild.remove();
    items(e, b, t.from);
    return true;
  }
  if (ka.k === "table") {
    if (a[0] !== b[0] || a[1] !== b[1]) return false;
    const body = e.tBodies[0];
    if (a.length > 2) body.lastChild.remove();
    rows(body, b, Math.max(2, a.length - 1));
    return true;
  }
  if (ka.k === "fence") {
    if (a[0] !== b[0] || closes(a, ka.m)) return false;
    const code = e.firstChild;
    let body = b.slice(1);
    if (body.length && closes(b, kb.m)) body = body.slice(0, -1);
    const text = body.join("\n");
    if (text.length > 100000 || !text.startsWith(t.text.slice(0, t.done))) return false;
    while (code.childNodes.length > t.at) code.lastChild.remove();
    t.done = highlight(code, text, kb.m[2], t.done);
    t.at = code.childNodes.length - code._tailNodes;
    t.text = text;
    return true;
  }
  return false;
}

// closes reports whether fenced lines end with their closing fence.
function closes(lines, m) {
  return lines.length > 1 && lines[lines.length - 1].trimStart().startsWith(m[1]);
}

function h(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

// block renders one block source as one element. Paragraphs, lists,
// tables and fenced code keep in _tail where their final part ends, for
// extend. Quotes nest at most maxQuote deep (depth counts them).
function block(src, depth) {
  const lines = src.split("\n");
  const first = lines[0];
  const kd = kind(lines);
  if (kd.k === "fence") {
    const m = kd.m;
    let body = lines.slice(1);
    if (closes(lines, m)) body = body.slice(0, -1);
    const pre = h("pre");
    const code = h("code");
    if (m[2]) code.dataset.lang = m[2];
    const text = body.join("\n");
    const done = highlight(code, text, m[2], 0);
    pre.appendChild(code);
    pre._tail = { k: "fence", text, done, at: code.childNodes.length - code._tailNodes };
    return pre;
  }
  if (kd.k === "heading") {
    const m = /^\s{0,3}(#{1,6})\s+(.*)$/.exec(first);
    const e = h("h" + Math.min(m[1].length + 1, 4));
    inline(e, m[2].replace(/\s+#+\s*$/, ""));
    return e;
  }
  if (kd.k === "hr") return h("hr");
  if (kd.k === "quote" && depth < maxQuote) {
    const q = h("blockquote");
    const inner = h("div", "md");
    render(inner, lines.map(l => l.replace(/^\s{0,3}>\s?/, "")).join("\n"), depth + 1);
    q.appendChild(inner);
    return q;
  }
  if (kd.k === "list") return list(lines);
  if (kd.k === "table") return table(lines);
  const p = h("p");
  p._tail = { k: "p", at: 0 };
  paraLines(p, lines, 0);
  return p;
}

// paraLines appends the lines of a paragraph from the k-th on, each
// line's inline markdown after a line break, and notes where the last
// begins.
function paraLines(p, ls, k) {
  for (; k < ls.length; k++) {
    if (k === ls.length - 1) p._tail.at = p.childNodes.length;
    if (k) p.appendChild(document.createElement("br"));
    inline(p, ls[k]);
  }
}

function list(ls) {
  const ordered = /^\s{0,3}\d/.test(ls[0]);
  const e = h(ordered ? "ol" : "ul");
  if (ordered) {
    const n = parseInt(ls[0], 10);
    if (n > 1) e.start = n;
  }
  e._tail = { k: "list", from: 0 };
  items(e, ls, 0);
  return e;
}

// items appends the list items of ls that begin at line from or later,
// and notes where the last begins.
function items(e, ls, from) {
  let li = null;
  let buf = [];
  const end = () => { if (li) { inline(li, buf.join(" ")); e.appendChild(li); } };
  for (let k = from; k < ls.length; k++) {
    const m = /^\s{0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(ls[k]);
    if (m) { end(); li = h("li"); buf = [m[2]]; e._tail.from = k; } else buf.push(ls[k].trim());
  }
  end();
}

function cells(l) {
  return l.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map(c => c.trim());
}

function table(ls) {
  const t = h("table");
  const head = h("tr");
  for (const c of cells(ls[0])) { const th = h("th"); inline(th, c); head.appendChild(th); }
  t.appendChild(h("thead")).appendChild(head);
  const body = t.appendChild(h("tbody"));
  rows(body, ls, 2);
  t._tail = { k: "table" };
  return t;
}

// rows appends the table rows of lines from the k-th on.
function rows(body, ls, k) {
  for (const l of ls.slice(k)) {
    const tr = h("tr");
    for (const c of cells(l)) { const td = h("td"); inline(td, c); tr.appendChild(td); }
    body.appendChild(tr);
  }
}

// inline appends the inline markdown of s to el. Each alternative of
// inlineRe stops at the first place its match could end, so a start that
// finds no end costs the distance to that place, not the rest of the line:
// a code span opens and closes on whole runs of backticks (the lookarounds),
// __ cannot run past another __, a link's text past another [.
const inlineRe = /(?<!`)(`+)(?!`)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|(?<!\w)__((?:(?!__)[\s\S])+?)__(?!\w)|\*([^*\s][^*]*?)\*|(?<![\w])_([^_\s][^_]*?)_(?![\w])|~~([\s\S]+?)~~|\[([^[\]]+)\]\(([^()\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g;
export function inline(el, s) {
  if (s.length > maxInline) {
    el.appendChild(document.createTextNode(s));
    return;
  }
  let last = 0;
  for (const m of s.matchAll(inlineRe)) {
    if (m.index > last) el.appendChild(document.createTextNode(s.slice(last, m.index)));
    last = m.index + m[0].length;
    if (m[1]) el.appendChild(h("code", null, m[2].replace(/^ (.*) $/, "$1")));
    else if (m[3] || m[4]) inline(el.appendChild(h("strong")), m[3] || m[4]);
    else if (m[5] || m[6]) inline(el.appendChild(h("em")), m[5] || m[6]);
    else if (m[7]) inline(el.appendChild(h("del")), m[7]);
    else if (m[8]) el.appendChild(link(m[9], m[8]));
    else el.appendChild(link(m[10], m[10]));
  }
  if (last < s.length) el.appendChild(document.createTextNode(s.slice(last)));
}

// link is an anchor for a safe URL, or the text alone.
export function link(href, text) {
  let u = null;
  try { u = new URL(href); } catch { u = null; }
  if (!u || !["http:", "https:", "mailto:"].includes(u.protocol)) return document.createTextNode(text);
  const a = h("a", null, text);
  a.href = u.href;
  a.target = "_blank";
  a.rel = "noopener noreferrer nofollow";
  return a;
}

// A light highlighter: strings, comments, numbers and the keywords most
// languages share. Tokens become spans with textContent only.
const kw = new Set(("break case catch class const continue def default defer do elif else enum export extends false fn for from func " +
  "function go if impl import in interface let match mut new nil none null package pub range return select self static struct " +
  "switch this throw true try type var void while with yield async await lambda not and or is True False None").split(" "));
const tokRe = /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/)|("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)|\b(\d+(?:\.\d+)?)\b|\b([A-Za-z_]\w*)\b/g;
//
// Code is laid out in chunks of chunkLines lines, each a block of its own
// (span.ck, display: block): a streaming code block appends to its last
// chunk, and the browser lays out and paints again that chunk alone, not
// the whole block. Chunks begin at line starts outside every token, so a
// chunk's tokens are those of the whole text.
const chunkLines = 16;

// highlight appends to code the chunks of text from offset from (a chunk
// start: code holds the chunks before it) and returns the offset from
// which they may still change: the start of the chunk that holds the last
// line (it may grow), or of the first after a "/*" or "`" that opens
// nothing yet (later text may close it). code._tailNodes is the count of
// the chunks from there, which the next call from that offset replaces.
export function highlight(code, text, lang, from = 0) {
  const lastLine = text.lastIndexOf("\n") + 1;
  let line = 0; // the line number of from
  for (let k = text.indexOf("\n"); k >= 0 && k < from; k = text.indexOf("\n", k + 1)) line++;
  const plainText = text.length > 100000 || /^(text|txt|plain|diff|)$/.test(lang || "") || longestLine(text) > maxHighlightLine;
  const hashComments = /^(py|python|sh|bash|shell|zsh|rb|ruby|yaml|yml|toml|r|perl)$/i.test(lang);
  const toks = []; // [start, end, class or null]: tokens with a class, and those over lines
  let open = text.length; // the first opener that matched nothing
  if (!plainText) {
    const gap = (a, b) => {
      if (open < text.length) return;
      const k = text.slice(a, b).search(/\/\*|`/);
      if (k >= 0) open = a + k;
    };
    const re = new RegExp(tokRe.source, "g");
    re.lastIndex = from;
    let last = from;
    for (let m; (m = re.exec(text));) {
      gap(last, m.index);
      let cls = null;
      if (m[1] && (m[1][0] !== "#" || hashComments)) cls = "tok-c";
      else if (m[2]) cls = "tok-s";
      else if (m[3]) cls = "tok-n";
      else if (m[4] && kw.has(m[4])) cls = "tok-k";
      last = m.index + m[0].length;
      if (cls || m[0].includes("\n")) toks.push([m.index, last, cls]);
    }
    gap(last, text.length);
  }
  // Chunk starts: every chunkLines-th line start with text after it, not
  // inside a token nor after an open opener.
  const starts = [from];
  let ti = 0;
  for (let k = text.indexOf("\n", from); k >= 0 && k + 1 < text.length; k = text.indexOf("\n", k + 1)) {
    line++;
    const p = k + 1;
    if (p > open) break;
    if (line % chunkLines) continue;
    while (ti < toks.length && toks[ti][1] <= p) ti++;
    if (ti < toks.length && toks[ti][0] < p) continue;
    starts.push(p);
  }
  let done = from;
  for (const p of starts) if (p <= lastLine && p <= open) done = p;
  // The chunks: plain runs as text, tokens with a class as spans.
  let tail = 0;
  ti = 0;
  for (let c = 0; c < starts.length; c++) {
    const a = starts[c], b = c + 1 < starts.length ? starts[c + 1] : text.length;
    if (a >= b) continue;
    const ck = h("span", "ck");
    let at = a;
    for (; ti < toks.length && toks[ti][0] < b; ti++) {
      const [x, y, cls] = toks[ti];
      if (!cls) continue;
      if (x > at) ck.appendChild(document.createTextNode(text.slice(at, x)));
      ck.appendChild(h("span", cls, text.slice(x, y)));
      at = y;
    }
    if (b > at) ck.appendChild(document.createTextNode(text.slice(at, b)));
    code.appendChild(ck);
    if (a >= done) tail++;
  }
  code._tailNodes = tail;
  return done;
}

// longestLine is the length of text's longest line. A string token of the
// highlighter that does not close scans to the end of its line from every
// quote in it: quadratic in the line's length, so long lines are not
// highlighted.
function longestLine(text) {
  let best = 0;
  for (let i = 0; i < text.length;) {
    let j = text.indexOf("\n", i);
    if (j < 0) j = text.length;
    best = Math.max(best, j - i);
    i = j + 1;
  }
  return best;
}
