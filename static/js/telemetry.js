// Live telemetry: one WebSocket per page. Job and node pages open with a "series" message: every chart's history,
// downsampled on the server and columnar, drawn once per chart (Plotly.newPlot). Live frames are queued and
// drawn once per animation frame (one extendTraces per chart); charts off-screen or in a hidden tab keep their
// queue and catch up when shown. Which number of a frame feeds which chart comes with the series message
// (static/js/telemetry-charts.json, read by telemetry/series.py too). The server numbers frames per group (seq);
// a jump means frames were lost, and the page asks for the ring from the time of the last frame it holds.
// Stale samples arrive as null and show as gaps, never as zeros.
"use strict";

const HISTORY_POINTS = 600; // the server's series.MAX_POINTS
const COMPACT_AT = 1800; // a trace this long is thinned back to HISTORY_POINTS: memory stays flat however long
const QUEUE_LIMIT = 20000; // points a hidden chart holds before dropping its oldest
const REDRAW_MS = [1000, 10000]; // a live chart redraws when new points move its line by about a pixel, within these
const REDRAWS_PER_FRAME = 2; // charts redrawn in one animation frame; the others wait for the next
const MARKERS_BELOW = 50; // short traces show their points, so a single sample is visible
const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
const DASHES = ["solid", "dash", "dot", "dashdot"];
const TZ_OFFSET_MS = new Date().getTimezoneOffset() * 60000; // Plotly draws epoch ms as UTC: shift to local time

class TelemetrySocket {
  constructor(path, handlers) {
    this.path = path;
    this.handlers = handlers;
    this.lastSeq = 0;
    this.lastT = 0;
    this.retry = 1000;
    this.open();
  }

  open() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    this.ws = new WebSocket(`${scheme}//${location.host}${this.path}`);
    this.ws.onopen = () => { this.retry = 1000; this.status("live"); };
    this.ws.onmessage = (event) => this.receive(JSON.parse(event.data));
    this.ws.onclose = () => {
      this.status("reconnecting…");
      setTimeout(() => this.open(), this.retry);
      this.retry = Math.min(this.retry * 2, 5000);
    };
  }

  status(text) {
    if (this.handlers.status) this.handlers.status(text);
  }

  receive(message) {
    if (message.type === "history") {
      for (const frame of message.frames) this.frame(frame, true);
    } else if (message.type === "frame") {
      this.frame(message, false);
    } else if (message.type === "series") {
      // A reconnect draws the whole history again; frames up to its newest are in it.
      if (message.last) { this.lastSeq = message.last.seq; this.lastT = message.last.t; }
      if (this.handlers.series) this.handlers.series(message);
    } else if (this.handlers[message.type]) {
      this.handlers[message.type](message);
    }
  }

  frame(frame, fromHistory) {
    if (frame.seq <= this.lastSeq) {
      // Already shown (a resync overlaps), unless the counter started again (Redis lost its data).
      if (fromHistory || this.lastSeq - frame.seq < 1000) return;
    } else if (!fromHistory && this.lastSeq && frame.seq > this.lastSeq + 1) {
      this.ws.send(JSON.stringify({ resync: this.lastT }));
    }
    this.lastSeq = frame.seq;
    this.lastT = frame.t;
    this.handlers.frame(frame);
  }
}

// -- reading frames through the chart table (the mirror of telemetry/series.py `points`) ----------------------
const fill = (template, row) => template.replace(/\{(\w+)\}/g, (_, name) => (row[name] ?? ""));

function valueOf(row, path) {
  if (Array.isArray(path)) {
    const values = path.map((p) => valueOf(row, p)).filter((v) => v !== null);
    return values.length ? Math.max(...values) : null;
  }
  let value = row;
  for (const part of path.split(".")) value = value && typeof value === "object" ? value[part] : null;
  return typeof value === "number" ? value : null;
}

function rowsOf(frame, kind) {
  if (kind === "gpus") return frame.gpus || [];
  const hosts = frame.hosts || (frame.kind === "node" ? [frame] : []);
  if (kind === "hosts") return hosts;
  if (kind === "disks") return hosts.flatMap((h) => (h.disks || []).map((d) => ({ ...d, host: h.node })));
  if (kind === "pod") return frame.pod ? [frame.pod] : [];
  return frame.trainer || [];
}

function* framePoints(table, frame) {
  for (const [chart, spec] of Object.entries(table)) {
    for (const source of spec.sources) {
      for (const row of rowsOf(frame, source.rows)) {
        let y = valueOf(row, source.y);
        if (y !== null && source.scale) y *= source.scale;
        const x = spec.x ? row[spec.x] : frame.t;
        if (x !== undefined && x !== null) yield { chart, key: fill(source.key, row), name: fill(source.name, row), x, y };
      }
    }
  }
}

// Min/max per bucket of consecutive points (the mirror of series.downsample), for a trace grown too long live.
function thin(x, y, limit) {
  if (x.length <= limit) return [x, y];
  const size = Math.ceil(x.length / Math.floor(limit / 2));
  const outX = [], outY = [];
  for (let start = 0; start < x.length; start += size) {
    let low = -1, high = -1, gap = false;
    for (let i = start; i < Math.min(start + size, x.length); i++) {
      if (y[i] === null) { gap = true; continue; }
      if (low < 0 || y[i] < y[low]) low = i;
      if (high < 0 || y[i] > y[high]) high = i;
    }
    if (low < 0) { outX.push(x[start]); outY.push(null); continue; }
    const picked = gap ? [Math.min(low, high)] : [...new Set([low, high])].sort((a, b) => a - b);
    for (const i of picked) { outX.push(x[i]); outY.push(y[i]); }
    if (gap) { outX.push(x[Math.max(low, high)]); outY.push(null); }
  }
  return [outX, outY];
}

// -- one chart -------------------------------------------------------------------------------------------------
class Chart {
  constructor(box, spec) {
    this.box = box;
    this.el = box.querySelector("[data-chart]");
    this.empty = box.querySelector("[data-chart-empty]");
    this.spec = spec;
    this.byStep = Boolean(spec.x);
    this.keys = new Map(); // trace key → index in el.data
    this.queue = [];
    this.visible = true;
    this.drawn = false;
    this.labelledAt = 0;
    this.drawnAt = 0;
    const table = box.querySelector("details[data-chart-table]");
    if (table) table.addEventListener("toggle", () => { if (table.open) this.fillTable(table); });
  }

  x(value) {
    return this.byStep ? value : value - TZ_OFFSET_MS;
  }

  traceStyle(index, length) {
    return {
      mode: length < MARKERS_BELOW ? "lines+markers" : "lines",
      marker: { size: 5 },
      connectgaps: false,
      line: { width: 1.5, color: PALETTE[index % PALETTE.length], dash: DASHES[Math.floor(index / PALETTE.length) % DASHES.length] },
    };
  }

  // History: every trace at once, one newPlot. traces: [{key, name, x, y}]
  draw(traces) {
    this.keys = new Map(traces.map((t, i) => [t.key, i]));
    const data = traces.map((t, i) => ({ x: t.x.map((v) => this.x(v)), y: t.y, name: t.name, ...this.traceStyle(i, t.x.length) }));
    const legendRows = Math.ceil(traces.length / 2); // about two legend entries fit a row of a 300 px chart
    const layout = {
      margin: { l: 48, r: 10, t: 8, b: 30 },
      height: 190 + 18 * legendRows,
      showlegend: true,
      legend: { orientation: "h", y: -0.25, font: { size: 10 } },
      xaxis: this.byStep ? { title: { text: "step" } } : { type: "date" },
      yaxis: { title: { text: this.spec.unit }, rangemode: "tozero", range: this.spec.range },
    };
    this.el.dataset.points = String(Number(this.el.dataset.points || 0) + traces.reduce((n, t) => n + t.x.length, 0));
    this.showEmpty(""); // shown before drawing, so Plotly measures its width
    const table = this.box.querySelector("details[data-chart-table]");
    if (table) table.hidden = false;
    Plotly.newPlot(this.el, data, layout, { displayModeBar: false, responsive: true });
    this.drawn = true;
    this.drawnAt = performance.now();
    this.label(true);
  }

  showEmpty(text) {
    // null: keep the waiting text; "": there is data, hide it.
    if (!this.empty) return;
    if (text !== null) this.empty.textContent = text || this.empty.textContent;
    this.empty.hidden = text === "";
    this.el.hidden = text !== "";
  }

  push(point) {
    this.queue.push(point);
    if (this.queue.length > QUEUE_LIMIT) this.queue.splice(0, this.queue.length - QUEUE_LIMIT);
  }

  // Milliseconds between live redraws: an hour on 300 px moves 12 s a pixel, so redrawing every second shows
  // nothing new and costs the whole chart each time. Trainer charts (by step) follow their points.
  redrawEvery() {
    const trace = this.drawn && !this.byStep ? this.el.data[0] : null;
    if (!trace || trace.x.length < 2) return REDRAW_MS[0];
    const size = this.el._fullLayout && this.el._fullLayout._size;
    const span = trace.x[trace.x.length - 1] - trace.x[0];
    return Math.min(REDRAW_MS[1], Math.max(REDRAW_MS[0], span / ((size && size.w) || 300)));
  }

  // When this chart wants a redraw: never (0), or a performance.now() time.
  due() {
    if (!this.queue.length || this.waiting || document.hidden) return 0;
    if (!this.drawn) return this.drawnAt + REDRAW_MS[0]; // a first drawing, shown or not: the page has its charts
    if (!this.visible) return 0;
    return this.drawnAt + this.redrawEvery();
  }

  // Live: the queued points in one extendTraces (each trace once: Plotly refuses repeated indices).
  flush() {
    if (!this.queue.length || this.waiting || document.hidden || (this.drawn && !this.visible)) return;
    this.drawnAt = performance.now();
    const points = this.queue;
    this.queue = [];
    const grouped = new Map();
    for (const p of points) {
      if (this.byStep && p.y === null) continue;
      if (!grouped.has(p.key)) grouped.set(p.key, { name: p.name, x: [], y: [] });
      const g = grouped.get(p.key);
      g.x.push(p.x);
      g.y.push(p.y);
    }
    if (!this.drawn) {
      if (grouped.size) this.draw([...grouped].map(([key, g]) => ({ key, ...g })));
      return;
    }
    for (const g of grouped.values()) g.x = g.x.map((v) => this.x(v));
    const fresh = [...grouped.keys()].filter((k) => !this.keys.has(k));
    if (fresh.length) {
      Plotly.addTraces(this.el, fresh.map((k) => {
        this.keys.set(k, this.keys.size);
        return { x: [], y: [], name: grouped.get(k).name, ...this.traceStyle(this.keys.size - 1, 0) };
      }));
    }
    if (!grouped.size) return;
    const update = { x: [], y: [] }, indexes = [];
    for (const [key, g] of grouped) {
      update.x.push(g.x);
      update.y.push(g.y);
      indexes.push(this.keys.get(key));
    }
    Plotly.extendTraces(this.el, update, indexes);
    this.el.dataset.points = String(Number(this.el.dataset.points || 0) + points.length);
    this.afterGrowth(grouped);
    this.label(false);
  }

  afterGrowth(grouped) {
    const data = this.el.data;
    let restyle = false;
    for (const [key, g] of grouped) {
      const trace = data[this.keys.get(key)];
      if (trace.name !== g.name) { trace.name = g.name; restyle = true; } // a GPU's job changed
      if (trace.mode !== "lines" && trace.x.length >= MARKERS_BELOW) { trace.mode = "lines"; restyle = true; }
      if (trace.x.length > COMPACT_AT) {
        [trace.x, trace.y] = thin(trace.x, trace.y, HISTORY_POINTS);
        restyle = true;
      }
    }
    if (!restyle) return;
    const layout = this.el.layout;
    layout.datarevision = (layout.datarevision || 0) + 1; // the arrays changed in place: tell Plotly.react
    Plotly.react(this.el, data, layout);
  }

  // Charts are images to a screen reader: their name says what they show and the newest values.
  label(force) {
    const now = Date.now();
    if (!force && now - this.labelledAt < 5000) return;
    this.labelledAt = now;
    const data = this.el.data || [];
    const newest = data.map((t) => {
      let i = t.y.length - 1;
      while (i >= 0 && t.y[i] === null) i--;
      return i < 0 ? `${t.name}: no value` : `${t.name}: ${round(t.y[i])} ${this.spec.unit}`;
    });
    const what = `${this.spec.title} (${this.spec.unit}), ${data.length} line${data.length === 1 ? "" : "s"}`;
    this.el.setAttribute("aria-label", newest.length ? `${what}; newest: ${newest.join("; ")}` : `${what}; no data`);
  }

  fillTable(details) {
    const data = this.el.data || [];
    const table = document.createElement("table");
    table.className = "small";
    const head = table.createTHead().insertRow();
    for (const text of [this.byStep ? "step" : "time", ...data.map((t) => `${t.name} (${this.spec.unit})`)]) {
      const th = document.createElement("th");
      th.textContent = text;
      head.append(th);
    }
    const xs = [...new Set(data.flatMap((t) => t.x.map(String)))];
    xs.sort((a, b) => a - b);
    const lookup = data.map((t) => new Map(t.x.map((x, i) => [String(x), t.y[i]])));
    const body = table.createTBody();
    for (const x of xs.slice(-120).reverse()) { // newest first
      const row = body.insertRow();
      row.insertCell().textContent = this.byStep ? x : new Date(Number(x) + TZ_OFFSET_MS).toLocaleString();
      for (const values of lookup) row.insertCell().textContent = values.has(x) ? round(values.get(x)) : "–";
    }
    const holder = details.querySelector("[data-table]");
    holder.replaceChildren(table);
    if (xs.length > 120) {
      const note = document.createElement("p");
      note.className = "small muted";
      note.textContent = `The newest 120 of ${xs.length} points, newest first.`;
      holder.append(note);
    }
  }
}

const round = (v) => (v === null || v === undefined ? "–" : Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3));

// -- a page's charts: drawn from the series message, fed by live frames, once per animation frame -----------------
class ChartGrid {
  constructor(root) {
    this.root = root;
    this.charts = new Map();
    this.table = null;
    this.scheduled = false;
    const observer = "IntersectionObserver" in window
      ? new IntersectionObserver((entries) => {
        for (const e of entries) {
          const chart = this.charts.get(e.target.dataset.chartBox);
          if (chart) chart.visible = e.isIntersecting;
        }
        this.schedule();
      }) : null;
    this.observer = observer;
    document.addEventListener("visibilitychange", () => this.schedule());
  }

  // The first message: the chart table, and each chart's history in one draw.
  series(message) {
    this.table = message.spec;
    const drawing = [];
    for (const box of this.root.querySelectorAll("[data-chart-box]")) {
      const name = box.dataset.chartBox;
      if (!this.table[name]) continue;
      let chart = this.charts.get(name);
      if (!chart) {
        chart = new Chart(box, this.table[name]);
        this.charts.set(name, chart);
        if (this.observer) this.observer.observe(box);
      }
      chart.queue = []; // the history holds every frame up to its newest; frames after it queue from now on
      chart.waiting = true;
      drawing.push([chart, (message.charts[name] || []).filter((t) => t.x.length)]);
    }
    this.drawHistory(drawing, message.recorded);
  }

  // One chart per task, so the page answers between charts instead of blocking for all of them at once.
  async drawHistory(drawing, recorded) {
    for (const [chart, traces] of drawing) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (traces.length) chart.draw(traces);
      else if (recorded) chart.showEmpty(chart.box.dataset.recordedEmpty || "Nothing was recorded for this chart.");
      chart.waiting = false;
    }
    this.schedule();
  }

  frame(frame) {
    if (!this.table) return;
    for (const p of framePoints(this.table, frame)) {
      const chart = this.charts.get(p.chart);
      if (chart) chart.push(p);
    }
    this.schedule();
  }

  // The charts due, oldest drawing first, a few per animation frame; a timer wakes the next one due.
  schedule() {
    if (this.scheduled || document.hidden) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      clearTimeout(this.timer);
      const now = performance.now();
      const waiting = [...this.charts.values()].map((c) => [c.due(), c]).filter(([due]) => due);
      waiting.sort((a, b) => a[0] - b[0]);
      let drawn = 0;
      for (const [due, chart] of waiting) {
        if (due > now || drawn === REDRAWS_PER_FRAME) {
          this.timer = setTimeout(() => this.schedule(), Math.max(0, due - now));
          return;
        }
        chart.flush();
        drawn++;
      }
    });
  }
}

function showNotes(root, frame) {
  const notes = root.querySelector("[data-telemetry-notes]");
  if (!notes) return;
  const lines = [];
  const stale = (frame.hosts || (frame.kind === "node" ? [frame] : [])).filter((h) => h.stale).map((h) => h.node);
  if (stale.length) lines.push(`Stale: no samples from ${stale.join(", ")} for a few seconds; the charts show a gap.`);
  for (const node of frame.no_gpu || []) lines.push(`No GPU on ${node}: nvidia-smi is not there, so no GPU charts.`);
  if (frame.kind === "node" && frame.has_gpu === false) lines.push(`No GPU charts: ${frame.status}.`);
  notes.textContent = lines.join(" ");
  notes.hidden = lines.length === 0;
}

// The hints panel: what the rules found, or that they found nothing (once there are numbers to judge).
function showHints(root, hints) {
  const list = root.querySelector("[data-hints]");
  if (!list) return;
  const codes = hints.map((h) => h.code).join(",");
  if (list.dataset.codes === codes) return;
  list.dataset.codes = codes;
  list.replaceChildren(...hints.map((h) => {
    const item = document.createElement("li");
    const title = document.createElement("strong");
    title.textContent = h.title;
    item.append(title, document.createTextNode(` ${h.advice}`));
    item.dataset.code = h.code;
    return item;
  }));
  const none = root.querySelector("[data-hints-none]");
  if (none) none.hidden = hints.length > 0;
  list.closest("section").hidden = false;
}

// The job log: read from the API once, then appended from the socket; a hole is filled from the API again.
class LiveLog {
  constructor(pre) {
    this.pre = pre;
    this.url = pre.dataset.logUrl;
    this.offset = 0;
    this.fetching = null;
    this.lastMessage = Date.now();
    this.catchUp();
    if (pre.dataset.active === "1") setInterval(() => this.idleCheck(), 5000);
  }

  async catchUp() {
    if (this.fetching) return this.fetching;
    this.fetching = (async () => {
      for (let i = 0; i < 50; i++) {
        const response = await fetch(`${this.url}?offset=${this.offset}`, { credentials: "same-origin" });
        if (!response.ok) {
          // The API says why there is no log (the cluster unreachable, no SSH login for logs): show its words.
          const answer = await response.json().catch(() => ({}));
          const status = document.getElementById("log-status");
          if (status && answer.detail) status.textContent = answer.detail;
          break;
        }
        const chunk = await response.json();
        this.pre.append(chunk.data);
        const moved = chunk.offset !== this.offset;
        this.offset = chunk.offset;
        if (chunk.done) this.finish();
        if (chunk.eof || !moved) break;
      }
    })().finally(() => { this.fetching = null; });
    return this.fetching;
  }

  async receive(message) {
    this.lastMessage = Date.now();
    if (this.fetching) await this.fetching;
    if (message.offset === this.offset) {
      this.pre.append(message.data);
      this.offset = message.next;
    } else if (message.next > this.offset) {
      await this.catchUp();
    }
  }

  idleCheck() {
    // Without a collector no log messages come; the page then reads the API itself every 10 s.
    if (!this.done && Date.now() - this.lastMessage > 10000) this.catchUp();
  }

  finish() {
    this.done = true;
    const status = document.getElementById("log-status");
    if (status) status.textContent = "End of log.";
  }
}

function jobPage(root) {
  const grid = new ChartGrid(root);
  const pre = document.querySelector("pre[data-log-url]");
  const log = pre ? new LiveLog(pre) : null;
  const state = root.querySelector("[data-socket-state]");
  let recorded = root.dataset.recorded === "1";
  new TelemetrySocket(root.dataset.socket, {
    status: (text) => { if (state) state.textContent = recorded ? "recorded" : text; },
    series: (message) => {
      recorded = message.recorded;
      if (state && recorded) state.textContent = "recorded";
      grid.series(message);
      if (message.last) { showNotes(root, message.last); showHints(root, message.last.hints || []); }
    },
    frame: (frame) => {
      grid.frame(frame);
      showNotes(root, frame);
      showHints(root, frame.hints || []);
    },
    log: (message) => log && log.receive(message),
  });
}

function nodePage(root) {
  const grid = new ChartGrid(root);
  const status = root.querySelector("[data-node-status]");
  const show = (frame) => {
    showNotes(root, frame);
    if (status) status.textContent = frame.stale ? `stale (${frame.status})` : frame.status;
  };
  new TelemetrySocket(root.dataset.socket, {
    series: (message) => { grid.series(message); if (message.last) show(message.last); },
    frame: (frame) => { grid.frame(frame); show(frame); },
  });
}

document.addEventListener("DOMContentLoaded", () => {
  if (typeof Plotly === "undefined") return;
  for (const root of document.querySelectorAll("[data-telemetry]")) {
    ({ job: jobPage, node: nodePage })[root.dataset.telemetry](root);
  }
});
