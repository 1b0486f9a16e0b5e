// tether's fleet page: plain JavaScript, no build step, no library.
// The server sends a snapshot, then deltas (server-sent events); the page
// keeps the fleet in a Map and draws one page of tiles at a time, so that
// 10,000 nodes cost the DOM no more than PAGE tiles.
"use strict";

const PAGE = 500;
const NODE_STATES = ["ready", "notready", "lost"];
const VOL_STATES = ["pending", "attaching", "attached", "mounted", "uncertain", "detaching", "refused"];
const fleet = new Map(); // node name -> tile {n, s, v: [[volume, state]...]}
let page = 0;
let shown = [];          // names on the current page, in order
const dirty = new Set(); // nodes changed since the last frame
let redrawAll = true;
let frameQueued = false;

const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function problem(t) {
  return t.s !== "ready" || t.v.some(([, s]) => s !== "mounted" && s !== "attached");
}

function visible() {
  const f = $("filter").value.trim();
  const only = $("problems").checked;
  const out = [];
  for (const [name, t] of fleet) {
    if (f && !name.includes(f)) continue;
    if (only && !problem(t)) continue;
    out.push(name);
  }
  out.sort();
  return out;
}

function drawTile(t) {
  const d = el("div", "tile node-" + t.s);
  d.dataset.node = t.n;
  d.dataset.state = t.s;
  const h = el("h3", "", t.n + " · " + t.s);
  h.title = "history of node " + t.n;
  h.addEventListener("click", () => showHistory("node", t.n));
  d.append(h);
  for (const [vol, s] of t.v) {
    const dot = el("span", "dot v-" + s);
    dot.title = vol + ": " + s;
    dot.dataset.vol = vol;
    dot.dataset.state = s;
    dot.addEventListener("click", () => showHistory("volume", vol));
    d.append(dot);
  }
  return d;
}

function drawSummary() {
  const nodes = {}, vols = {};
  for (const t of fleet.values()) {
    nodes[t.s] = (nodes[t.s] || 0) + 1;
    for (const [, s] of t.v) vols[s] = (vols[s] || 0) + 1;
  }
  const parts = [fleet.size + " nodes"];
  for (const s of NODE_STATES) if (nodes[s]) parts.push(nodes[s] + " " + s);
  parts.push("·");
  for (const s of VOL_STATES) if (vols[s]) parts.push(vols[s] + " " + s);
  $("summary").textContent = parts.join(" ");
}

function draw() {
  frameQueued = false;
  const box = $("nodes");
  if (redrawAll) {
    redrawAll = false;
    dirty.clear();
    const all = visible();
    page = Math.max(0, Math.min(page, Math.ceil(all.length / PAGE) - 1));
    shown = all.slice(page * PAGE, (page + 1) * PAGE);
    const frag = document.createDocumentFragment();
    for (const n of shown) frag.append(drawTile(fleet.get(n)));
    box.replaceChildren(frag);
    $("range").textContent = all.length === 0 ? "no nodes" :
      (page * PAGE + 1) + "–" + (page * PAGE + shown.length) + " of " + all.length;
  } else {
    for (const n of dirty) {
      const old = box.querySelector('.tile[data-node="' + CSS.escape(n) + '"]');
      const t = fleet.get(n);
      if (old && t) old.replaceWith(drawTile(t));
      else if (old) old.remove();
    }
    dirty.clear();
  }
  drawSummary();
}

function queue() {
  if (!frameQueued) {
    frameQueued = true;
    requestAnimationFrame(draw);
  }
}

function changed(name) {
  // A node new to the page, or one that left the filter, moves tiles: redraw.
  if (!shown.includes(name) || $("problems").checked) redrawAll = true;
  else dirty.add(name);
  queue();
}

function eventItem(e) {
  const li = el("li", e.warning ? "warning" : "");
  li.textContent = e.t.slice(11, 23) + " " + e.type + " " + e.kind + "/" + e.name + ": " + e.msg;
  li.dataset.type = e.type;
  return li;
}

function prepend(list, item, max) {
  list.prepend(item);
  while (list.children.length > max) list.lastChild.remove();
}

function drawStats(s) {
  const rows = Object.entries(s.calls).sort();
  const t = $("calls");
  t.replaceChildren();
  for (const [m, r] of rows) {
    const tr = el("tr");
    tr.append(el("td", "", m), el("td", "n", r.toFixed(1)));
    t.append(tr);
  }
  $("inflight").textContent = "operations in flight: " + s.inflight + " · cloud calls so far: " + s.total;
}

function noticeItem(n) {
  const li = el("li", "warning", n.t.slice(11, 23) + " " + n.kind + ": " + n.text);
  li.dataset.kind = n.kind;
  return li;
}

async function showHistory(kind, name) {
  $("history-box").hidden = false;
  $("history-title").textContent = "History of " + kind + " " + name;
  const list = $("history");
  list.replaceChildren(el("li", "", "loading…"));
  const q = new URLSearchParams({ kind, name });
  const res = await fetch("/ui/history?" + q, { credentials: "same-origin" });
  if (!res.ok) {
    list.replaceChildren(el("li", "warning", await res.text()));
    return;
  }
  const body = await res.json();
  list.replaceChildren();
  for (const e of body.events.reverse()) list.append(eventItem(e));
  if (body.events.length === 0) list.append(el("li", "", "no events kept"));
}

function connect() {
  const es = new EventSource("/ui/events");
  const status = $("status");
  es.addEventListener("snapshot", (m) => {
    const s = JSON.parse(m.data);
    fleet.clear();
    for (const t of s.nodes || []) fleet.set(t.n, t);
    $("feed").replaceChildren();
    for (const e of s.feed || []) prepend($("feed"), eventItem(e), 100);
    $("notices").replaceChildren();
    for (const n of s.notices || []) prepend($("notices"), noticeItem(n), 100);
    if (s.stats) drawStats(s.stats);
    status.textContent = "live";
    status.className = "status live";
    redrawAll = true;
    queue();
  });
  es.addEventListener("tile", (m) => {
    const t = JSON.parse(m.data);
    fleet.set(t.n, t);
    changed(t.n);
  });
  es.addEventListener("gone", (m) => {
    const n = JSON.parse(m.data).n;
    fleet.delete(n);
    redrawAll = true;
    queue();
  });
  es.addEventListener("event", (m) => prepend($("feed"), eventItem(JSON.parse(m.data)), 100));
  es.addEventListener("notice", (m) => prepend($("notices"), noticeItem(JSON.parse(m.data)), 100));
  es.addEventListener("stats", (m) => drawStats(JSON.parse(m.data)));
  es.onerror = () => {
    status.textContent = "reconnecting";
    status.className = "status";
    // Closed for good (the session ended): the page shows the login form.
    if (es.readyState === EventSource.CLOSED) setTimeout(() => location.reload(), 2000);
  };
}

function legend() {
  const box = $("legend");
  for (const s of VOL_STATES) {
    const item = el("span");
    item.append(el("span", "dot v-" + s), document.createTextNode(" " + s));
    box.append(item);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  legend();
  $("filter").addEventListener("input", () => { page = 0; redrawAll = true; queue(); });
  $("problems").addEventListener("change", () => { page = 0; redrawAll = true; queue(); });
  $("prev").addEventListener("click", () => { page--; redrawAll = true; queue(); });
  $("next").addEventListener("click", () => { page++; redrawAll = true; queue(); });
  connect();
});
