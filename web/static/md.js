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
// onwards is split again and rebuilt, so a long answer costs the same per
// frame at its end as at its start.
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
  while (nodes.length > i) el.lastChild.remove();
  const frag = document.createDocumentFragment();
  for (let j = i; j < srcs.length; j++) frag.appendChild(block(srcs[j], depth));
  el.appendChild(frag);
  el._md = { text, srcs, starts };
}

function h(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

// block renders one block source as one element, inside depth quotes.
function block(src, depth) {
  const lines = src.split("\n");
  const first = lines[0];
  let m = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/.exec(first);
  if (m) {
    let body = lines.slice(1);
    if (body.length && body[body.length - 1].trimStart().startsWith(m[1])) body = body.slice(0, -1);
    const pre = h("pre");
    const code = h("code");
    if (m[2]) code.dataset.lang = m[2];
    highlight(code, body.join("\n"), m[2]);
    pre.appendChild(code);
    return pre;
  }
  m = /^\s{0,3}(#{1,6})\s+(.*)$/.exec(first);
  if (m && lines.length === 1) {
    const e = h("h" + Math.min(m[1].length + 1, 4));
    inline(e, m[2].replace(/\s+#+\s*$/, ""));
    return e;
  }
  if (lines.length === 1 && /^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(first)) return h("hr");
  if (depth < maxQuote && lines.every(l => /^\s{0,3}>/.test(l))) {
    const q = h("blockquote");
    const inner = h("div", "md");
    render(inner, lines.map(l => l.replace(/^\s{0,3}>\s?/, "")).join("\n"), depth + 1);
    q.appendChild(inner);
    return q;
  }
  if (/^\s{0,3}([-*+]|\d{1,9}[.)])\s+/.test(first)) return list(lines);
  if (lines.length >= 2 && /^\s*\|?.*\|.*$/.test(first) && /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(lines[1])) return table(lines);
  const p = h("p");
  lines.forEach((l, k) => {
    if (k) p.appendChild(document.createElement("br"));
    inline(p, l);
  });
  return p;
}

function list(lines) {
  const ordered = /^\s{0,3}\d/.test(lines[0]);
  const e = h(ordered ? "ol" : "ul");
  if (ordered) {
    const n = parseInt(lines[0], 10);
    if (n > 1) e.start = n;
  }
  let li = null;
  let buf = [];
  const end = () => { if (li) { inline(li, buf.join(" ")); e.appendChild(li); } };
  for (const l of lines) {
    const m = /^\s{0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(l);
    if (m) { end(); li = h("li"); buf = [m[2]]; } else buf.push(l.trim());
  }
  end();
  return e;
}

function cells(l) {
  return l.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map(c => c.trim());
}

function table(lines) {
  const t = h("table");
  const head = h("tr");
  for (const c of cells(lines[0])) { const th = h("th"); inline(th, c); head.appendChild(th); }
  t.appendChild(h("thead")).appendChild(head);
  const body = t.appendChild(h("tbody"));
  for (const l of lines.slice(2)) {
    const tr = h("tr");
    for (const c of cells(l)) { const td = h("td"); inline(td, c); tr.appendChild(td); }
    body.appendChild(tr);
  }
  return t;
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
export function highlight(code, text, lang) {
  if (text.length > 100000 || /^(text|txt|plain|diff|)$/.test(lang || "") || longestLine(text) > maxHighlightLine) {
    code.textContent = text;
    return;
  }
  const hashComments = /^(py|python|sh|bash|shell|zsh|rb|ruby|yaml|yml|toml|r|perl)$/i.test(lang);
  let last = 0;
  let buf = "";
  const flush = () => { if (buf) { code.appendChild(document.createTextNode(buf)); buf = ""; } };
  for (const m of text.matchAll(tokRe)) {
    let cls = null;
    if (m[1] && (m[1][0] !== "#" || hashComments)) cls = "tok-c";
    else if (m[2]) cls = "tok-s";
    else if (m[3]) cls = "tok-n";
    else if (m[4] && kw.has(m[4])) cls = "tok-k";
    buf += text.slice(last, m.index);
    last = m.index + m[0].length;
    if (cls) { flush(); code.appendChild(h("span", cls, m[0])); } else buf += m[0];
  }
  buf += text.slice(last);
  flush();
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
