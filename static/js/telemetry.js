// Live telemetry: one WebSocket per page. Job and node pages open with a "series" message: every chart's history,
// downsampled on the server and columnar, drawn once per chart (one uPlot canvas each: a redraw costs about a
// millisecond where an SVG chart cost tens). Live frames are queued, appended to each chart's columns and drawn
// when they move its line by about a pixel, a few charts per animation frame; charts off-screen or in a hidden
// tab are not drawn and catch up when shown, their queued points folded into their columns now and then (thinned
// like the others), so a page left open for hours holds the same memory as one just opened. The frames' keys: docs/telemetry-wire.md. Which number of a frame feeds which chart comes with the series message
// (static/js/telemetry-charts.json, read by telemetry/series.py too). The server numbers frames per group (seq);
// a jump means frames were lost, and the page asks for what came after the last frame it holds (the ring's
// frames; on the class dashboard, its heat).
// Stale samples arrive as null and show as gaps, never as zeros.
"use strict";

const HISTORY_POINTS = 600; // the server's series.MAX_POINTS
const GAP_MS = 30000; // the server's series.GAP_MS: frames further apart than this are drawn with a break between
// After this many new x values (2 minutes of frames) every trace is thinned back to at most HISTORY_POINTS: a chart
// holds 400 to 720 x values however long the page stays open, so its memory stays within that band. (600 let the
// columns double between thinnings, and the page's heap followed them up for 10 minutes at a time.)
const COMPACT_EVERY = 120;
const QUEUE_LIMIT = 20000; // points a chart not yet drawn holds before dropping its oldest
const FOLD_AT = 120; // queued points a drawn chart out of view moves into its columns, undrawn (fold)
const REDRAW_MS = [1000, 10000]; // a live chart redraws when new points move its line by about a pixel, within these
const REDRAWS_PER_FRAME = 2; // charts redrawn in one animation frame; the others wait for the next
const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
const DASHES = ["solid", "dash", "dot", "dashdot"];

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
    } else if (message.type === "heat") {
      // The class dashboard's cells up to frame `seq` (on opening, and as a resync's answer). A late answer is drawn
      // but never moves the count back, or the frames after it would look lost again.
      if (message.seq > this.lastSeq || this.lastSeq - message.seq >= 1000) {
        this.lastSeq = message.seq;
        this.lastT = message.t;
      }
      if (this.handlers.heat) this.handlers.heat(message);
    } else if (this.handlers[message.type]) {
      this.handlers[message.type](message);
    }
  }

  // Asks for what came after the last frame held (answered at most once a second, later asks coalesced).
  resync() {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ resync: this.lastT }));
  }

  frame(frame, fromHistory) {
    if (frame.seq <= this.lastSeq) {
      // Already shown (a resync overlaps), unless the counter started again (Redis lost its data).
      if (fromHistory || this.lastSeq - frame.seq < 1000) return;
    } else if (!fromHistory && this.lastSeq && frame.seq > this.lastSeq + 1) {
      this.resync();
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

// The same for a chart's aligned columns, all traces at once: each bucket of consecutive x values keeps two, its
// first and last, and each trace's lowest and highest value there in the order they came (a gap in the bucket
// breaks the line after the first). A chart then holds at most `limit` x values however many lines it draws,
// where thinning each trace on its own kept up to `limit` per line (8 GPUs: 4,800).
function thinColumns(xs, ys, limit) {
  if (xs.length <= limit) return [xs, ys];
  const size = Math.ceil(xs.length / Math.floor(limit / 2));
  const outX = [], outYs = ys.map(() => []);
  for (let start = 0; start < xs.length; start += size) {
    const end = Math.min(start + size, xs.length);
    const pair = end - start > 1;
    outX.push(xs[start]);
    if (pair) outX.push(xs[end - 1]);
    ys.forEach((column, s) => {
      let low = -1, high = -1, seen = false, gap = false;
      for (let i = start; i < end; i++) {
        if (column[i] === undefined) continue;
        seen = true;
        if (column[i] === null) { gap = true; continue; }
        if (low < 0 || column[i] < column[low]) low = i;
        if (high < 0 || column[i] > column[high]) high = i;
      }
      const kept = !seen ? [undefined, undefined] : low < 0 ? [null, null]
        : [column[Math.min(low, high)], gap ? null : column[Math.max(low, high)]];
      outYs[s].push(...kept.slice(0, pair ? 2 : 1));
    });
  }
  return [outX, outYs];
}

// Traces on one x axis (uPlot's aligned columns): where a trace has no point, undefined (the line goes on),
// where it has a gap, null (the line breaks).
function align(traces) {
  if (traces.length === 1) return [traces[0].x.slice(), [traces[0].y.slice()]];
  const xs = [...new Set(traces.flatMap((t) => t.x))].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  const ys = traces.map((t) => {
    const column = new Array(xs.length).fill(undefined);
    t.x.forEach((x, i) => { column[at.get(x)] = t.y[i]; });
    return column;
  });
  return [xs, ys];
}

const DASH_PATTERNS = { solid: [], dash: [6, 4], dot: [2, 3], dashdot: [6, 3, 2, 3] };
const HEIGHT = 200; // the plot; its legend (one entry per line) goes below

// -- one chart: a uPlot canvas, its data kept as aligned columns --------------------------------------------------
// el.data lists the chart's traces ({key, name, x, y, line}) for its table view, its accessible name and tests.
class Chart {
  constructor(box, spec) {
    this.box = box;
    this.el = box.querySelector("[data-chart]");
    this.empty = box.querySelector("[data-chart-empty]");
    this.spec = spec;
    this.byStep = Boolean(spec.x);
    this.keys = []; // trace keys, in series order
    this.names = [];
    this.xs = [];
    this.ys = [];
    this.queue = [];
    this.visible = true;
    this.drawn = false;
    this.labelledAt = 0;
    this.drawnAt = 0;
    this.compactAt = COMPACT_EVERY;
    Object.defineProperty(this.el, "data", { configurable: true, get: () => this.traces() });
    this.el.telemetryChart = this; // its queue and columns, for tests
    const table = box.querySelector("details[data-chart-table]");
    if (table) table.addEventListener("toggle", () => { if (table.open) this.fillTable(table); });
  }

  traces() {
    return this.keys.map((key, s) => {
      const x = [], y = [];
      this.ys[s].forEach((v, i) => { if (v !== undefined) { x.push(this.xs[i]); y.push(v); } });
      return { key, name: this.names[s], x, y, line: this.lineStyle(s) };
    });
  }

  lineStyle(index) {
    return { color: PALETTE[index % PALETTE.length], dash: DASHES[Math.floor(index / PALETTE.length) % DASHES.length] };
  }

  seriesOptions(index) {
    const line = this.lineStyle(index);
    // The legend shows a value (with its unit) only for the point under the cursor.
    const value = (u, v, s, i) => (i === null || v === null || v === undefined ? "" : `${round(v)} ${this.spec.unit}`);
    return { label: this.names[index], stroke: line.color, dash: DASH_PATTERNS[line.dash], width: 1.5, spanGaps: false, value };
  }

  options(width) {
    const range = this.spec.range;
    return {
      width,
      height: HEIGHT,
      ms: 1, // x: epoch milliseconds, shown in the viewer's time zone
      scales: {
        x: { time: !this.byStep },
        y: { range: range ? [range[0], range[1]] : (u, low, high) => uPlot.rangeNum(Math.min(0, low ?? 0), high ?? 1, 0.1, true) },
      },
      axes: [{ label: this.byStep ? "step" : undefined, size: this.byStep ? 44 : 50, space: 70 }, { label: this.spec.unit, size: 64 }],
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
      series: [{ label: this.byStep ? "step" : "time" }, ...this.keys.map((_, i) => this.seriesOptions(i))],
    };
  }

  // History: every trace at once, one uPlot. traces: [{key, name, x, y}]
  draw(traces) {
    this.keys = traces.map((t) => t.key);
    this.names = traces.map((t) => t.name);
    [this.xs, this.ys] = align(traces);
    this.compactAt = this.xs.length + COMPACT_EVERY;
    this.el.dataset.points = String(Number(this.el.dataset.points || 0) + traces.reduce((n, t) => n + t.x.length, 0));
    this.showEmpty(""); // shown before drawing, so the chart takes its width
    const table = this.box.querySelector("details[data-chart-table]");
    if (table) table.hidden = false;
    if (this.plot) this.plot.destroy();
    this.plot = new uPlot(this.options(this.width()), [this.xs, ...this.ys], this.el);
    this.el.chart = this.plot;
    if (!this.resizer && "ResizeObserver" in window) {
      this.resizer = new ResizeObserver(() => {
        const width = this.width();
        if (this.plot && width !== this.plot.width) this.plot.setSize({ width, height: HEIGHT });
      });
      this.resizer.observe(this.box);
    }
    this.drawn = true;
    this.drawnAt = performance.now();
    this.label(true);
  }

  width() {
    return Math.max(200, Math.floor(this.box.clientWidth));
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
    if (this.drawn && !this.waiting && this.queue.length >= FOLD_AT) this.fold();
    else if (this.queue.length > QUEUE_LIMIT) this.queue.splice(0, this.queue.length - QUEUE_LIMIT);
  }

  // Milliseconds between live redraws: an hour on 300 px moves 12 s a pixel, so redrawing every second shows
  // nothing new and costs the whole chart each time. Trainer charts (by step) follow their points.
  redrawEvery() {
    if (!this.drawn || this.byStep || this.xs.length < 2) return REDRAW_MS[0];
    const span = this.xs[this.xs.length - 1] - this.xs[0];
    return Math.min(REDRAW_MS[1], Math.max(REDRAW_MS[0], span / (this.plot.bbox.width / devicePixelRatio || 300)));
  }

  // When this chart wants a redraw: never (0), or a performance.now() time.
  due() {
    if (!(this.queue.length || this.unshown) || this.waiting || document.hidden) return 0;
    if (!this.drawn) return this.drawnAt + REDRAW_MS[0]; // a first drawing, shown or not: the page has its charts
    if (!this.visible) return 0;
    return this.drawnAt + this.redrawEvery();
  }

  // Live: the queued points appended to the columns, then one setData.
  flush() {
    if (!(this.queue.length || this.unshown) || this.waiting || document.hidden || (this.drawn && !this.visible)) return;
    this.drawnAt = performance.now();
    if (!this.drawn) {
      const points = this.queue;
      this.queue = [];
      const grouped = new Map();
      for (const p of points) {
        if (this.byStep && p.y === null) continue;
        if (!grouped.has(p.key)) grouped.set(p.key, { key: p.key, name: p.name, x: [], y: [] });
        grouped.get(p.key).x.push(p.x);
        grouped.get(p.key).y.push(p.y);
      }
      if (grouped.size) this.draw([...grouped.values()]);
      return;
    }
    if (this.queue.length && this.fold()) return;
    this.unshown = false;
    this.plot.setData([this.xs, ...this.ys]);
    this.label(false);
  }

  // The queue into the columns, thinned when they grew past compactAt, without drawing: flush draws them, or the
  // chart is out of view and they wait there (unshown) instead of in a queue that grows as long as the page is open.
  // True when the chart was built anew (its lines changed): it is drawn then.
  fold() {
    const points = this.queue;
    this.queue = [];
    const fresh = this.append(points);
    this.el.dataset.points = String(Number(this.el.dataset.points || 0) + points.length);
    if (fresh) {
      this.compact(true);
      this.unshown = false;
      return true;
    }
    if (this.xs.length > this.compactAt) this.compact(false);
    this.unshown = true;
    return false;
  }

  // Points into the columns: one x per distinct x (a frame's time, or a step). True when the series changed
  // (a trace came, a GPU's holder changed, or an x arrived out of order): the chart is then built anew.
  append(points) {
    let changed = false;
    for (const p of points) {
      if (this.byStep && p.y === null) continue;
      let s = this.keys.indexOf(p.key);
      if (s < 0) {
        s = this.keys.push(p.key) - 1;
        this.names.push(p.name);
        this.ys.push(new Array(this.xs.length).fill(undefined));
        changed = true;
      } else if (this.names[s] !== p.name) {
        if (!this.byStep) {
          // Another job holds the GPU now: its stretch so far keeps its holder's name under its own key (as
          // telemetry/series.py's trace_for does for history), and the GPU's key carries on under the new name.
          const first = this.ys[s].findIndex((v) => v !== undefined && v !== null);
          this.keys[s] = `${p.key}@${first < 0 ? 0 : this.xs[first]}`;
          s = this.keys.push(p.key) - 1;
          this.ys.push(new Array(this.xs.length).fill(undefined));
          this.names.push(p.name);
        } else {
          this.names[s] = p.name;
        }
        changed = true;
      }
      const end = this.xs.length - 1;
      if (end >= 0 && p.x < this.xs[end]) changed = true; // out of order: compact() sorts the traces again
      if (end < 0 || this.xs[end] !== p.x || this.ys[s][end] !== undefined) {
        if (!this.byStep && end >= 0 && p.x - this.xs[end] > GAP_MS) {
          // No frame for a while (the page was away, the collector restarted): a break, not a line across it.
          this.xs.push(this.xs[end] + 1);
          for (const column of this.ys) column.push(null);
        }
        this.xs.push(p.x);
        for (const column of this.ys) column.push(undefined);
      }
      this.ys[s][this.xs.length - 1] = p.y;
    }
    return changed;
  }

  // Thinned back to HISTORY_POINTS x values: memory stays flat. The chart is built anew only when its lines
  // changed or came out of x order (rebuild: each trace sorted and thinned), else its columns are thinned and
  // drawn by the next flush.
  compact(rebuild) {
    if (!rebuild && !this.byStep) { // the routine case: the columns are in x order, thinned as they are
      [this.xs, this.ys] = thinColumns(this.xs, this.ys, HISTORY_POINTS);
      this.compactAt = this.xs.length + COMPACT_EVERY;
      return;
    }
    const traces = this.traces().map((t) => {
      const order = t.x.map((_, i) => i).sort((a, b) => t.x[a] - t.x[b] || a - b);
      let x = order.map((i) => t.x[i]), y = order.map((i) => t.y[i]);
      if (this.byStep) { // the last value for a step wins
        const by = new Map(x.map((v, i) => [v, y[i]]));
        x = [...by.keys()];
        y = [...by.values()];
      }
      [x, y] = thin(x, y, HISTORY_POINTS);
      return { key: t.key, name: t.name, x, y };
    });
    if (!rebuild) {
      [this.xs, this.ys] = align(traces);
      this.compactAt = this.xs.length + COMPACT_EVERY;
      return;
    }
    const points = this.el.dataset.points;
    this.draw(traces);
    this.el.dataset.points = points;
  }

  // Charts are images to a screen reader: their name says what they show and the newest values.
  label(force) {
    const now = Date.now();
    if (!force && now - this.labelledAt < 5000) return;
    this.labelledAt = now;
    const newest = this.keys.map((_, s) => {
      const column = this.ys[s];
      let i = column.length - 1;
      while (i >= 0 && (column[i] === null || column[i] === undefined)) i--;
      return i < 0 ? `${this.names[s]}: no value` : `${this.names[s]}: ${round(column[i])} ${this.spec.unit}`;
    });
    const n = this.keys.length;
    const what = `${this.spec.title} (${this.spec.unit}), ${n} line${n === 1 ? "" : "s"}`;
    this.el.setAttribute("role", "img");
    this.el.setAttribute("aria-label", newest.length ? `${what}; newest: ${newest.join("; ")}` : `${what}; no data`);
  }

  fillTable(details) {
    const data = this.traces();
    const table = document.createElement("table");
    table.className = "small";
    const head = table.createTHead().insertRow();
    for (const text of [this.byStep ? "step" : "time", ...data.map((t) => `${t.name} (${this.spec.unit})`)]) {
      const th = document.createElement("th");
      th.textContent = text;
      head.append(th);
    }
    const xs = [...new Set(data.flatMap((t) => t.x))].sort((a, b) => a - b);
    const lookup = data.map((t) => new Map(t.x.map((x, i) => [x, t.y[i]])));
    const body = table.createTBody();
    for (const x of xs.slice(-120).reverse()) { // newest first
      const row = body.insertRow();
      row.insertCell().textContent = this.byStep ? x : new Date(x).toLocaleString();
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

const SIMULATED_NOTE = "Simulated GPUs: this cluster's nvidia-smi is the demo's stand-in, which replays recorded figures whatever the jobs do; nothing on these GPU charts was measured.";

// Every GPU chart says "simulated" on its caption (and to a screen reader) while its rows come from the stand-in.
function markSimulated(root, simulated) {
  for (const box of root.querySelectorAll("figure[data-chart-box^='gpu-']")) {
    const caption = box.querySelector("[data-chart-simulated]");
    if (caption && caption.hidden !== !simulated) caption.hidden = !simulated;
  }
  const hints = root.querySelector("[data-hints-simulated]"); // the checklist's advice reads the same figures
  if (hints && hints.hidden !== !simulated) hints.hidden = !simulated;
}

function showNotes(root, frame) {
  const notes = root.querySelector("[data-telemetry-notes]");
  if (!notes) return;
  const lines = [];
  const stale = (frame.hosts || (frame.kind === "node" ? [frame] : [])).filter((h) => h.stale).map((h) => h.node);
  if (stale.length) lines.push(`Stale: no samples from ${stale.join(", ")} for a few seconds; the charts show a gap.`);
  for (const node of frame.no_gpu || []) lines.push(`No GPU on ${node}: nvidia-smi is not there, so no GPU charts.`);
  if (frame.kind === "node" && frame.has_gpu === false) lines.push(`No GPU charts: ${frame.status}.`);
  const simulated = (frame.gpus || []).some((g) => g.simulated);
  if (simulated) lines.push(SIMULATED_NOTE);
  markSimulated(root, simulated);
  const text = lines.join(" ");
  if (notes.textContent !== text) notes.textContent = text; // a frame a second: the DOM changes only with the words
  if (notes.hidden !== !text) notes.hidden = !text;
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

// The job log: read from the API once, then appended from the socket; a hole is filled from the API again. Pieces
// are appended as text nodes (nothing already shown is parsed or laid out again), and past LOG_KEPT characters the
// oldest leave the page, so a long run keeps a bounded page; the whole log stays in the run directory.
const LOG_KEPT = 200000; // about 3,000 lines

class LiveLog {
  constructor(pre) {
    this.pre = pre;
    this.kept = 0;
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
        this.show(chunk.data);
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
      this.show(message.data);
      this.offset = message.next;
    } else if (message.next > this.offset) {
      await this.catchUp();
    }
  }

  show(text) {
    if (!text) return;
    this.pre.append(text);
    this.kept += text.length;
    if (this.kept <= LOG_KEPT) return;
    while (this.kept > LOG_KEPT) {
      const oldest = this.pre.firstChild;
      const excess = this.kept - LOG_KEPT;
      if (oldest.length <= excess) {
        this.kept -= oldest.length;
        oldest.remove();
      } else { // cut the oldest piece at a line's end
        const cut = oldest.data.indexOf("\n", excess) + 1 || excess;
        oldest.deleteData(0, cut);
        this.kept -= cut;
      }
    }
    if (!this.trimmedNote) {
      this.trimmedNote = document.createElement("p");
      this.trimmedNote.className = "small muted";
      this.trimmedNote.id = "log-trimmed";
      this.trimmedNote.textContent = "The oldest lines are no longer shown here: the whole log is output.log in the run directory below.";
      this.pre.before(this.trimmedNote);
    }
  }

  idleCheck() {
    // Without a collector no log messages come; the page then reads the API itself every 10 s.
    if (!this.done && Date.now() - this.lastMessage > 10000) this.catchUp();
  }

  finish() {
    if (this.done) return;
    this.done = true;
    const status = document.getElementById("log-status");
    if (status) status.textContent = "End of log.";
    const badge = document.getElementById("job-state");
    if (badge && badge.dataset.state === "failed") this.showFailure();
  }

  // A failed job: its last error lines above the log (the traceback's last lines and its exception, else the log's
  // last lines), and the log scrolled to where the failure starts (the first traceback, else the end).
  showFailure() {
    const text = this.pre.textContent;
    const first = text.indexOf(TRACEBACK);
    const lines = failureLines(text, text.lastIndexOf(TRACEBACK));
    if (lines.length) {
      const box = document.createElement("div");
      box.id = "log-error";
      box.className = "flash error";
      const heading = document.createElement("p");
      heading.textContent = first >= 0 ? "Where it failed (the traceback's last lines):" : "The log's last lines:";
      const quote = document.createElement("pre");
      quote.textContent = lines.join("\n");
      box.append(heading, quote);
      const shown = document.getElementById("log-error");
      if (shown) shown.remove();
      this.pre.before(box);
    }
    this.scrollTo(first >= 0 ? first : text.length);
  }

  scrollTo(index) {
    let left = index;
    for (const node of this.pre.childNodes) {
      if (left < node.length) {
        const range = document.createRange();
        range.setStart(node, left);
        range.setEnd(node, left + 1);
        const top = range.getBoundingClientRect().top - this.pre.getBoundingClientRect().top;
        this.pre.scrollTop += top - LOG_SCROLL_MARGIN;
        return;
      }
      left -= node.length;
    }
    this.pre.scrollTop = this.pre.scrollHeight; // the end
  }
}

const TRACEBACK = "Traceback (most recent call last):";
const FAILURE_LINES = 6;
const LOG_SCROLL_MARGIN = 12; // px above the line scrolled to: the pre's padding

// The traceback's last frame lines and its exception line, the first line after them that is not indented (the log
// may go on after a traceback: torchrun's report, a shell's message); without a traceback, the log's last lines.
function failureLines(text, traceback) {
  if (traceback < 0) {
    return text.split("\n").filter((line) => line.trim()).slice(-FAILURE_LINES);
  }
  const after = text.slice(traceback).split("\n").slice(1);
  let end = after.findIndex((line) => line && !/^\s/.test(line)); // the exception line
  if (end < 0) return after.filter((line) => line.trim()).slice(-FAILURE_LINES);
  return after.slice(0, end + 1).filter((line) => line.trim()).slice(-FAILURE_LINES);
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
  // The job ended while its page was open (jobs.js): the headings and the charts that never got a sample say so.
  document.addEventListener("gpulab:job-ended", () => {
    if (log) log.catchUp(); // the last lines now, with the new state: not at the next idle check, seconds later
    recorded = true;
    if (state) state.textContent = "recorded";
    const heading = root.querySelector("h2");
    if (heading && heading.firstChild && heading.firstChild.nodeType === Node.TEXT_NODE) {
      heading.firstChild.textContent = "Telemetry ";
    }
    for (const box of root.querySelectorAll("[data-chart-box]")) {
      const chart = grid.charts.get(box.dataset.chartBox);
      if (chart && chart.drawn) continue;
      const text = box.dataset.recordedEmpty || "Nothing was recorded for this chart.";
      const empty = box.querySelector("[data-chart-empty]");
      if (chart) chart.showEmpty(text);
      else if (empty) empty.textContent = text;
    }
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
  if (typeof uPlot === "undefined") return;
  for (const root of document.querySelectorAll("[data-telemetry]")) {
    ({ job: jobPage, node: nodePage })[root.dataset.telemetry](root);
  }
});
