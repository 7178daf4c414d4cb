// The class dashboard (telemetry/templates/telemetry/course_dashboard.html): a canvas heatmap with one row per student,
// their GPUs averaged every 5 s, the least busy first; a student's row opens into one row per GPU. It reads the
// course group's frames ({gpus: [{key, job, student, util, idle_s, stale}]}) through TelemetrySocket
// (static/js/telemetry.js, loaded before this file; the keys: docs/telemetry-wire.md), and draws at most once a
// second, never per frame.
"use strict";

const BUCKET_MS = 5000;
const COLUMNS = 60; // five minutes
const LIVE_MS = 15000; // a GPU absent from frames this long is no longer in use (frames carry every GPU each second)
const ROW_PX = 22; // a row's height: its label and its cells
const NO_SAMPLE = "#e4e7ee";
// Viridis, the colour of 0, 10, … 100 % (the page's colour scale shows the same)
const VIRIDIS = ["#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c", "#22a884", "#44bf70", "#7ad151",
  "#bddf26", "#fde725"].map((hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)));

// The colour of each whole percent, worked out once.
const COLOURS = Array.from({ length: 101 }, (_, percent) => {
  const low = Math.min(9, Math.floor(percent / 10)), f = percent / 10 - low;
  const [a, b] = [VIRIDIS[low], VIRIDIS[low + 1]];
  return `rgb(${a.map((v, i) => Math.round(v + (b[i] - v) * f)).join(",")})`;
});
const colour = (value) => COLOURS[Math.round(Math.min(100, Math.max(0, value)))];

const element = (tag, className, text) => {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
};

class ClassHeatmap {
  constructor(root) {
    this.root = root;
    this.el = root.querySelector("[data-chart=heatmap]");
    this.empty = root.querySelector("[data-heatmap-empty]");
    this.tools = root.querySelector("[data-heatmap-tools]");
    this.idleList = root.querySelector("[data-idle-now]");
    this.idleLimit = Number(root.dataset.idleSeconds || 300);
    const labels = JSON.parse(document.getElementById("heatmap-labels").textContent);
    this.names = labels.names; // username → name
    this.jobLabels = labels.jobs; // job id → "tiny-lm-single 3f2a1b9c"
    this.gpus = new Map(); // key → {key, job, student, gpu, idle, seen, values: Map(bucket → util)}
    this.expanded = new Set(); // students shown one row per GPU
    this.rows = []; // what each heatmap row is, top to bottom: {student} or {gpu}
    this.dirty = false;
    this.offset = Infinity; // browser clock minus server clock, plus the fastest frame's delay
    this.openedAt = Date.now();
    this.el.heatmap = this; // its rows and cellText(row, column), for tests
    this.bindControls();
  }

  bindControls() {
    this.root.querySelector("[data-expand-all]").addEventListener("click", () => {
      for (const gpu of this.gpus.values()) this.expanded.add(gpu.student);
      this.draw();
    });
    this.root.querySelector("[data-collapse-all]").addEventListener("click", () => {
      this.expanded.clear();
      this.draw();
    });
  }

  name(student) {
    return this.names[student] || student;
  }

  jobLabel(job) {
    return this.jobLabels[job] || `job ${job.slice(0, 8)}`;
  }

  // The server's time now: frames are stamped by its clock, and a GPU's liveness is judged against it.
  serverNow() {
    return Date.now() - (Number.isFinite(this.offset) ? this.offset : 0);
  }

  receive(frame) {
    this.offset = Math.min(this.offset, Date.now() - frame.t);
    const bucket = Math.floor(frame.t / BUCKET_MS) * BUCKET_MS;
    for (const g of frame.gpus || []) {
      let gpu = this.gpus.get(g.key);
      if (!gpu) {
        // key: student/job8/node/index
        gpu = { key: g.key, job: g.job, student: g.student, gpu: g.key.split("/").slice(2).join("/"), values: new Map() };
        this.gpus.set(g.key, gpu);
      }
      gpu.values.set(bucket, g.util);
      gpu.idle = g.idle_s || 0;
      gpu.seen = frame.t;
    }
    this.dirty = true;
    this.el.dataset.frames = String(Number(this.el.dataset.frames || 0) + 1);
  }

  // The GPUs in use now, by student; the idlest student first, then the least busy over the last minute.
  // Ordered on whole buckets and whole idle minutes, so rows move when a column completes, not with every sample.
  students(now) {
    const bucket = Math.floor(now / BUCKET_MS) * BUCKET_MS;
    const live = new Map();
    for (const gpu of this.gpus.values()) {
      if (now - gpu.seen > LIVE_MS) continue;
      if (!live.has(gpu.student)) live.set(gpu.student, []);
      live.get(gpu.student).push(gpu);
    }
    const recent = (gpus) => {
      const values = [];
      for (const gpu of gpus) {
        for (const [t, v] of gpu.values) if (v !== null && t >= bucket - 60000 && t < bucket) values.push(v);
      }
      return values.length ? values.reduce((a, b) => a + b, 0) / values.length : -1; // no numbers: first
    };
    return [...live.entries()]
      .map(([student, gpus]) => ({
        student,
        gpus: gpus.sort((a, b) => a.key.localeCompare(b.key)),
        idle: Math.max(...gpus.map((g) => g.idle)),
        recent: recent(gpus),
      }))
      .sort((a, b) => Math.floor(b.idle / 60) - Math.floor(a.idle / 60) || Math.sign(b.idle) - Math.sign(a.idle) ||
        a.recent - b.recent || this.name(a.student).localeCompare(this.name(b.student)));
  }

  // The heatmap is a canvas (a repaint of 60 rows costs well under a millisecond, so the newest column fills each
  // second) beside one label per row: a button opens a student's row, a link opens a GPU's job. The labels are
  // built again only when a row comes, goes, moves or opens.
  draw() {
    this.dirty = false;
    const wall = this.serverNow();
    const now = Math.floor(wall / BUCKET_MS) * BUCKET_MS;
    for (const [key, gpu] of this.gpus) {
      for (const t of gpu.values.keys()) if (t < now - COLUMNS * BUCKET_MS) gpu.values.delete(t);
      if (wall - gpu.seen > COLUMNS * BUCKET_MS) this.gpus.delete(key);
    }
    const students = this.students(wall);
    // Widths are read before anything is written, so a draw never makes the browser lay the page out twice.
    const width = this.el.hidden ? this.el.parentElement.clientWidth : this.el.clientWidth;
    const cellsWidth = this.canvas && !this.el.hidden ? this.canvas.clientWidth : 0;
    this.showIdle(students);
    if (!students.length) {
      this.showEmpty();
      return;
    }
    this.times = Array.from({ length: COLUMNS }, (_, i) => now - (COLUMNS - 1 - i) * BUCKET_MS);
    this.rows = [];
    for (const s of students) {
      const means = this.times.map((t) => {
        const values = s.gpus.map((g) => g.values.get(t)).filter((v) => v !== undefined && v !== null);
        return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
      });
      this.rows.push({ student: s.student, gpus: s.gpus, values: means });
      if (!this.expanded.has(s.student)) continue;
      for (const g of s.gpus) {
        this.rows.push({ student: s.student, gpu: g, values: this.times.map((t) => g.values.get(t) ?? null) });
      }
    }
    this.empty.hidden = true;
    this.el.hidden = false;
    this.tools.hidden = false;
    const narrow = width < 600; // a phone: shorter labels, three times under the cells
    const shape = [narrow, ...this.rows.map((r) => `${r.student}:${r.gpu ? r.gpu.key : this.expanded.has(r.student)}:${r.gpus ? r.gpus.length : ""}`)].join("|");
    if (shape !== this.drawnShape) {
      this.drawnShape = shape;
      this.build(narrow);
    }
    this.paint(narrow, shape === this.paintedShape ? cellsWidth : this.canvas.clientWidth);
    this.paintedShape = shape;
    this.showTimes(narrow);
    this.el.dataset.rows = String(students.length);
  }

  // A row's label: "▸ Ada Lovelace · 2 GPUs" (a button), or under an open student "GPU node/0 · job" (a link).
  label(row, narrow) {
    if (row.gpu) {
      const text = narrow ? `GPU ${row.gpu.gpu}` : `GPU ${row.gpu.gpu} · ${this.jobLabel(row.gpu.job)}`;
      const link = element("a", "heat-label heat-gpu", text);
      link.href = `/jobs/${row.gpu.job}/`;
      return link;
    }
    const open = this.expanded.has(row.student);
    const count = row.gpus.length;
    const text = `${open ? "▾" : "▸"} ${this.name(row.student)}${narrow ? "" : ` · ${count} GPU${count === 1 ? "" : "s"}`}`;
    const button = element("button", "heat-label", text);
    button.type = "button";
    button.setAttribute("aria-expanded", String(open));
    button.addEventListener("click", () => this.toggle(row.student));
    return button;
  }

  build(narrow) {
    if (!this.canvas) {
      this.labels = element("div", "heat-labels");
      this.canvas = element("canvas", "heat-cells");
      this.canvas.setAttribute("aria-hidden", "true");
      this.timeAxis = element("div", "heat-times small muted");
      this.tip = element("div", "heat-tip small");
      this.tip.setAttribute("role", "tooltip");
      this.tip.hidden = true;
      this.el.replaceChildren(this.labels, this.canvas, element("div"), this.timeAxis, this.tip);
      this.canvas.addEventListener("mousemove", (event) => this.hover(event));
      this.canvas.addEventListener("mouseleave", () => { this.tip.hidden = true; });
      this.canvas.addEventListener("click", (event) => this.clickCell(event));
    }
    this.labels.replaceChildren(...this.rows.map((row) => this.label(row, narrow)));
    this.el.style.setProperty("--heat-rows", String(this.rows.length));
  }

  paint(narrow, width) {
    const ratio = window.devicePixelRatio || 1;
    const height = this.rows.length * ROW_PX;
    if (this.canvas.width !== Math.round(width * ratio) || this.canvas.height !== Math.round(height * ratio)) {
      this.canvas.width = Math.round(width * ratio);
      this.canvas.height = Math.round(height * ratio);
    }
    const context = this.canvas.getContext("2d");
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, width, height);
    // Cells on whole pixels (no seams between them), a pixel apart where there is room.
    const edges = Array.from({ length: COLUMNS + 1 }, (_, c) => Math.round((c * width) / COLUMNS));
    const gap = narrow ? 0 : 1;
    this.rows.forEach((row, r) => {
      row.values.forEach((v, c) => {
        context.fillStyle = v === null ? NO_SAMPLE : colour(v);
        context.fillRect(edges[c], r * ROW_PX, edges[c + 1] - edges[c] - gap, ROW_PX - 1);
      });
    });
  }

  showTimes(narrow) {
    const picks = narrow ? [0, 30, 59] : [0, 12, 24, 36, 48, 59];
    const texts = picks.map((i) => new Date(this.times[i]).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", ...(narrow ? {} : { second: "2-digit" }) }));
    if (this.timeAxis.dataset.texts === texts.join()) return;
    this.timeAxis.dataset.texts = texts.join();
    this.timeAxis.replaceChildren(...texts.map((t) => element("span", "", t)));
  }

  // What a cell says on hover: the student, their jobs, the value with its unit, and when.
  cellText(r, c) {
    const row = this.rows[r];
    const v = row.values[c];
    const at = new Date(this.times[c]).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
    if (row.gpu) {
      return `${this.name(row.student)} · ${this.jobLabel(row.gpu.job)} · GPU ${row.gpu.gpu} · ` +
        `${v === null ? "no sample" : `GPU util ${Math.round(v)} %`} at ${at}`;
    }
    const jobs = [...new Set(row.gpus.map((g) => this.jobLabel(g.job)))].join(", ");
    const what = row.gpus.length > 1 ? `mean GPU util of ${row.gpus.length} GPUs` : "GPU util";
    return `${this.name(row.student)} · ${jobs} · ${v === null ? "no sample" : `${what} ${Math.round(v)} %`} at ${at}`;
  }

  cellAt(event) {
    const box = this.canvas.getBoundingClientRect();
    const r = Math.floor((event.clientY - box.top) / ROW_PX);
    const c = Math.floor(((event.clientX - box.left) / box.width) * COLUMNS);
    return r >= 0 && r < this.rows.length && c >= 0 && c < COLUMNS ? [r, c] : null;
  }

  hover(event) {
    const at = this.cellAt(event);
    if (!at) { this.tip.hidden = true; return; }
    this.tip.textContent = this.cellText(...at);
    this.tip.hidden = false;
    const box = this.el.getBoundingClientRect();
    const x = Math.min(event.clientX - box.left + 12, box.width - this.tip.offsetWidth);
    this.tip.style.transform = `translate(${Math.max(0, x)}px, ${event.clientY - box.top + 14}px)`;
  }

  clickCell(event) {
    const at = this.cellAt(event);
    const row = at && this.rows[at[0]];
    if (!row) return;
    if (row.gpu) location.href = `/jobs/${row.gpu.job}/`;
    else this.toggle(row.student);
  }

  toggle(student) {
    if (this.expanded.has(student)) this.expanded.delete(student);
    else this.expanded.add(student);
    this.draw();
  }

  showEmpty() {
    // History arrives right after the socket opens: until then an empty page may just be loading.
    const waiting = Number(this.root.dataset.running) > 0 && Date.now() - this.openedAt < 5000;
    this.empty.textContent = waiting
      ? "Waiting for the first samples…"
      : "No GPUs in use right now. Students' GPUs appear here as soon as their jobs start.";
    this.empty.hidden = false;
    this.el.hidden = true;
    this.tools.hidden = true;
    this.el.dataset.rows = "0";
    this.drawnShape = "";
  }

  showIdle(students) {
    const idle = students.filter((s) => s.idle >= this.idleLimit);
    const items = idle.map((s) => {
      const item = document.createElement("li");
      const link = document.createElement("a");
      const gpu = s.gpus.reduce((a, b) => (b.idle > a.idle ? b : a));
      link.href = `/jobs/${gpu.job}/`;
      link.textContent = this.name(s.student);
      const idleGpus = s.gpus.filter((g) => g.idle >= this.idleLimit).length;
      item.append(link, ` · ${idleGpus} of ${s.gpus.length} GPU${s.gpus.length === 1 ? "" : "s"} idle for ` +
        `${Math.round(s.idle / 60)} min · ${this.jobLabel(gpu.job)}`);
      return item;
    });
    if (!items.length) {
      const none = document.createElement("li");
      none.className = "muted";
      none.textContent = `No GPU has been idle for ${Math.round(this.idleLimit / 60)} minutes.`;
      items.push(none);
    }
    const signature = idle.map((s) => `${s.student}:${Math.round(s.idle / 60)}`).join(",");
    if (this.idleList.dataset.signature !== signature) {
      this.idleList.dataset.signature = signature;
      this.idleList.replaceChildren(...items);
    }
    const byStudent = new Map(idle.map((s) => [s.student, s.idle]));
    this.idleCells ||= [...document.querySelectorAll("[data-idle-for]")];
    for (const cell of this.idleCells) {
      const seconds = byStudent.get(cell.dataset.idleFor) || 0;
      const text = seconds ? `GPU idle ${Math.round(seconds / 60)} min` : "";
      if (cell.textContent !== text) cell.textContent = text; // unchanged cells are left alone: no layout each second
      cell.classList.toggle("flag", seconds > 0);
    }
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const root = document.querySelector("[data-class-dashboard]");
  if (!root) return;
  const heatmap = new ClassHeatmap(root);
  new TelemetrySocket(root.dataset.socket, { frame: (frame) => heatmap.receive(frame) });
  // Redraw once a second when frames came, and every 5 s regardless, so GPUs that stopped reporting leave.
  let ticks = 0;
  setInterval(() => {
    ticks += 1;
    if (heatmap.dirty || ticks % 5 === 0) heatmap.draw();
  }, 1000);
});
