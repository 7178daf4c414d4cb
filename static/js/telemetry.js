// Live telemetry: one WebSocket per page, frames appended to Plotly charts with extendTraces (bounded windows).
// The server numbers frames per group (seq); a jump means frames were lost, and the page asks for the ring
// from the time of the last frame it holds. Stale samples arrive as null and show as gaps, never as zeros.
"use strict";

const WINDOW_POINTS = 600; // ten minutes at one sample per second

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

// A time-series chart whose traces appear as their keys first arrive.
class LiveChart {
  constructor(element, title, unit, options = {}) {
    this.el = element;
    this.keys = new Map();
    this.xIsStep = Boolean(options.xIsStep);
    const layout = {
      title: { text: title, font: { size: 13 } },
      margin: { l: 48, r: 10, t: 30, b: 30 },
      height: 210,
      showlegend: true,
      legend: { orientation: "h", y: -0.25, font: { size: 10 } },
      xaxis: this.xIsStep ? { title: { text: "step" } } : { type: "date" },
      yaxis: { title: { text: unit }, rangemode: "tozero", range: options.range },
    };
    Plotly.newPlot(this.el, [], layout, { displayModeBar: false, responsive: true });
  }

  // points: [{key, name, x, y}] — one extendTraces call for all of them.
  append(points) {
    const fresh = points.filter((p) => !this.keys.has(p.key));
    if (fresh.length) {
      const traces = [];
      for (const p of fresh) {
        if (this.keys.has(p.key)) continue;
        this.keys.set(p.key, this.keys.size);
        traces.push({ x: [], y: [], name: p.name, mode: "lines", connectgaps: false, line: { width: 1.5 } });
      }
      Plotly.addTraces(this.el, traces);
    }
    if (!points.length) return;
    const update = { x: [], y: [] };
    const indexes = [];
    for (const p of points) {
      update.x.push([p.x]);
      update.y.push([p.y]);
      indexes.push(this.keys.get(p.key));
    }
    Plotly.extendTraces(this.el, update, indexes, WINDOW_POINTS);
    this.el.dataset.points = String(Number(this.el.dataset.points || 0) + points.length);
  }
}

function chartsIn(root) {
  const make = (name, title, unit, options) => {
    const el = root.querySelector(`[data-chart="${name}"]`);
    return el ? new LiveChart(el, title, unit, options) : null;
  };
  return {
    util: make("gpu-util", "GPU utilization", "%", { range: [0, 100] }),
    memory: make("gpu-memory", "GPU memory used", "MiB"),
    power: make("gpu-power", "GPU power", "W"),
    temp: make("gpu-temp", "GPU temperature", "°C"),
    disk: make("disk-util", "Disk busy", "%", { range: [0, 100] }),
    await: make("disk-await", "Disk await", "ms"),
    cpu: make("cpu", "CPU busy", "%", { range: [0, 100] }),
    mem: make("mem", "Memory used", "GiB"),
    loss: make("loss", "Loss", "loss", { xIsStep: true }),
    tokens: make("tokens", "Throughput", "tok/s", { xIsStep: true }),
  };
}

function appendSamples(charts, frame) {
  const x = new Date(frame.t);
  const gpuName = (g) => `${g.node} GPU ${g.i}`;
  const series = (chart, rows) => chart && chart.append(rows);
  const gpus = frame.gpus || [];
  series(charts.util, gpus.map((g) => ({ key: g.key, name: gpuName(g), x, y: g.util })));
  series(charts.memory, gpus.map((g) => ({ key: g.key, name: gpuName(g), x, y: g.mem_used })));
  series(charts.power, gpus.map((g) => ({ key: g.key, name: gpuName(g), x, y: g.power })));
  series(charts.temp, gpus.map((g) => ({ key: g.key, name: gpuName(g), x, y: g.temp })));
  const hosts = frame.hosts || (frame.kind === "node" ? [frame] : []);
  const disks = [], awaits = [], cpu = [], mem = [];
  for (const h of hosts) {
    for (const d of h.disks || []) {
      disks.push({ key: `${h.node}/${d.dev}`, name: `${h.node} ${d.dev}`, x, y: d.util });
      awaits.push({ key: `${h.node}/${d.dev}`, name: `${h.node} ${d.dev}`, x, y: Math.max(d.r_await, d.w_await) });
    }
    cpu.push({ key: h.node, name: h.node, x, y: h.cpu ? h.cpu.busy : null });
    mem.push({ key: h.node, name: h.node, x, y: h.mem ? h.mem.used / 2 ** 30 : null });
  }
  if (frame.pod) {
    cpu.push({ key: "pods", name: "pods (cores × 100)", x, y: frame.pod.cpu_millis / 10 });
    mem.push({ key: "pods", name: "pods", x, y: frame.pod.mem_bytes / 2 ** 30 });
  }
  series(charts.disk, disks);
  series(charts.await, awaits);
  series(charts.cpu, cpu);
  series(charts.mem, mem);
}

function appendTrainer(charts, points, seen) {
  const fresh = points.filter((p) => !seen.has(p.step));
  for (const p of fresh) seen.add(p.step);
  if (!fresh.length) return;
  if (charts.loss) charts.loss.append(fresh.map((p) => ({ key: "loss", name: "loss", x: p.step, y: p.loss })));
  if (charts.tokens) charts.tokens.append(fresh.map((p) => ({ key: "tok", name: "tok/s", x: p.step, y: p.tok_s })));
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
  list.closest("section").hidden = hints.length === 0;
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
        if (!response.ok) break;
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
  const charts = chartsIn(root);
  const seenSteps = new Set();
  const pre = document.querySelector("pre[data-log-url]");
  const log = pre ? new LiveLog(pre) : null;
  const state = root.querySelector("[data-socket-state]");
  new TelemetrySocket(root.dataset.socket, {
    status: (text) => { if (state) state.textContent = text; },
    frame: (frame) => {
      appendSamples(charts, frame);
      appendTrainer(charts, frame.trainer || [], seenSteps);
      showNotes(root, frame);
      showHints(root, frame.hints || []);
    },
    curve: (message) => appendTrainer(charts, message.points, seenSteps),
    log: (message) => log && log.receive(message),
  });
}

function nodePage(root) {
  const charts = chartsIn(root);
  const status = root.querySelector("[data-node-status]");
  new TelemetrySocket(root.dataset.socket, {
    frame: (frame) => {
      appendSamples(charts, frame);
      showNotes(root, frame);
      if (status) status.textContent = frame.stale ? `stale (${frame.status})` : frame.status;
    },
  });
}

document.addEventListener("DOMContentLoaded", () => {
  if (typeof Plotly === "undefined") return;
  for (const root of document.querySelectorAll("[data-telemetry]")) {
    ({ job: jobPage, node: nodePage })[root.dataset.telemetry](root);
  }
});
