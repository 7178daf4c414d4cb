// The class dashboard (telemetry/templates/telemetry/course_dashboard.html): a canvas heatmap with one row per student,
// their GPUs averaged every 5 s, the least busy first; a student's row opens into one row per GPU. It reads the
// course group's frames ({gpus: [{key, job, student, util, idle_s, stale}]}) through TelemetrySocket
// (static/js/telemetry.js, loaded before this file; the keys: docs/telemetry-wire.md), and draws at most once a
// second, never per frame, in an animation frame (none while the tab is hidden or the heatmap is off-screen).
// A draw does only what changed: the cells are painted when their colours changed (from a one-pixel-per-cell image),
// labels are kept per row and moved or retitled rather than built again, the time axis and the idle list are
// rewritten only when their text changes, and every size is read before anything is written.
"use strict";

const BUCKET_MS = 5000;
const COLUMNS = 60; // five minutes
const LIVE_MS = 15000; // a GPU absent from frames this long is no longer in use (frames carry every GPU each second)
const ROW_PX = 22; // a row's height: its label and its cells
const NO_SAMPLE = [0xe4, 0xe7, 0xee];
// Viridis, the colour of 0, 10, … 100 % (the page's colour scale shows the same)
const VIRIDIS = ["#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c", "#22a884", "#44bf70", "#7ad151",
  "#bddf26", "#fde725"].map((hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)));

// The colour of each whole percent, worked out once, as [r, g, b].
const COLOURS = Array.from({ length: 101 }, (_, percent) => {
  const low = Math.min(9, Math.floor(percent / 10)), f = percent / 10 - low;
  const [a, b] = [VIRIDIS[low], VIRIDIS[low + 1]];
  return a.map((v, i) => Math.round(v + (b[i] - v) * f));
});
const band = (mean) => (mean < 0 ? -1 : Math.round(mean / 5)); // a mean of -1: no numbers yet
const sameBytes = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);
const colour = (value) => (value === null ? NO_SAMPLE : COLOURS[Math.round(Math.min(100, Math.max(0, value)))]);
// Made once: toLocaleTimeString(…, options) builds a formatter on every call, a fraction of a millisecond each.
const CLOCK = {
  seconds: new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit", second: "2-digit" }),
  minutes: new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit" }),
};
const COLLATOR = new Intl.Collator();

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
    this.labelFor = new Map(); // row id (a student, or a GPU's key) → its label element, kept between draws
    this.painted = new Uint8ClampedArray(0); // the cells' colours as last painted (paint)
    this.paintedGeometry = "";
    this.onScreen = true;
    this.bindControls();
    if ("IntersectionObserver" in window) {
      // Scrolled away, the heatmap is not painted; it catches up as it comes back into view.
      new IntersectionObserver((entries) => {
        this.onScreen = entries[entries.length - 1].isIntersecting;
        if (this.onScreen) this.dirty = true;
      }).observe(this.root);
    }
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
  // Ordered on whole buckets, whole idle minutes and 5 % bands of the last minute's mean, so rows move when a column
  // completes and a student's use really changed, not with every sample (a row that jumps cannot be clicked).
  students(now) {
    const bucket = Math.floor(now / BUCKET_MS) * BUCKET_MS;
    const live = new Map();
    for (const gpu of this.gpus.values()) {
      if (now - gpu.seen > LIVE_MS) continue;
      if (!live.has(gpu.student)) live.set(gpu.student, []);
      live.get(gpu.student).push(gpu);
    }
    const recent = (gpus) => {
      let sum = 0, count = 0;
      for (const gpu of gpus) {
        for (const [t, v] of gpu.values) if (v !== null && t >= bucket - 60000 && t < bucket) { sum += v; count++; }
      }
      return count ? sum / count : -1; // no numbers: first
    };
    return [...live.entries()]
      .map(([student, gpus]) => ({
        student,
        gpus: gpus.sort((a, b) => a.key.localeCompare(b.key)),
        idle: Math.max(...gpus.map((g) => g.idle)),
        recent: recent(gpus),
      }))
      .sort((a, b) => Math.floor(b.idle / 60) - Math.floor(a.idle / 60) || Math.sign(b.idle) - Math.sign(a.idle) ||
        band(a.recent) - band(b.recent) || COLLATOR.compare(this.name(a.student), this.name(b.student)));
  }

  // The heatmap is a canvas beside one label per row: a button opens a student's row, a link opens a GPU's job.
  // Reads first (sizes), then writes, and each write only where something changed.
  draw() {
    this.dirty = false;
    const wall = this.serverNow();
    const now = Math.floor(wall / BUCKET_MS) * BUCKET_MS;
    if (now !== this.prunedAt) {
      this.prunedAt = now;
      for (const [key, gpu] of this.gpus) {
        for (const t of gpu.values.keys()) if (t < now - COLUMNS * BUCKET_MS) gpu.values.delete(t);
        if (wall - gpu.seen > COLUMNS * BUCKET_MS) this.gpus.delete(key);
      }
    }
    const students = this.students(wall);
    const width = this.el.hidden ? this.el.parentElement.clientWidth : this.el.clientWidth;
    const cellsWidth = this.canvas && !this.el.hidden ? this.canvas.clientWidth : 0;
    this.showIdle(students);
    if (!students.length) {
      this.showEmpty();
      return;
    }
    if (!this.onScreen && !this.el.hidden) {
      this.dirty = true; // painted when scrolled back into view
      return;
    }
    if (now !== this.times?.[COLUMNS - 1]) this.times = Array.from({ length: COLUMNS }, (_, i) => now - (COLUMNS - 1 - i) * BUCKET_MS);
    this.rows = [];
    for (const s of students) {
      this.rows.push({ id: s.student, student: s.student, gpus: s.gpus, values: this.means(s.gpus) });
      if (!this.expanded.has(s.student)) continue;
      for (const g of s.gpus) {
        this.rows.push({ id: g.key, student: s.student, gpu: g, values: this.times.map((t) => g.values.get(t) ?? null) });
      }
    }
    const wasHidden = this.el.hidden;
    this.empty.hidden = true;
    this.el.hidden = false;
    this.tools.hidden = false;
    const narrow = width < 600; // a phone: shorter labels, three times under the cells
    this.showLabels(narrow);
    this.paint(narrow, wasHidden || !cellsWidth ? this.canvas.clientWidth : cellsWidth);
    this.showTimes(narrow);
    if (this.el.dataset.rows !== String(students.length)) this.el.dataset.rows = String(students.length);
  }

  // A student's row: the mean of their GPUs in each column (null where none has a sample).
  means(gpus) {
    return this.times.map((t) => {
      let sum = 0, count = 0;
      for (const g of gpus) {
        const v = g.values.get(t);
        if (v !== undefined && v !== null) { sum += v; count++; }
      }
      return count ? sum / count : null;
    });
  }

  // A row's label: "▸ Ada Lovelace · 2 GPUs" (a button), or under an open student "GPU node/0 · job" (a link).
  labelText(row, narrow) {
    if (row.gpu) return narrow ? `GPU ${row.gpu.gpu}` : `GPU ${row.gpu.gpu} · ${this.jobLabel(row.gpu.job)}`;
    const open = this.expanded.has(row.student);
    const count = row.gpus.length;
    return `${open ? "▾" : "▸"} ${this.name(row.student)}${narrow ? "" : ` · ${count} GPU${count === 1 ? "" : "s"}`}`;
  }

  newLabel(row) {
    if (row.gpu) {
      const link = element("a", "heat-label heat-gpu");
      link.href = `/jobs/${row.gpu.job}/`;
      return link;
    }
    const button = element("button", "heat-label");
    button.type = "button";
    button.addEventListener("click", () => this.toggle(row.student));
    return button;
  }

  // One label element per row id, kept between draws: a new row gets one, a row that moved is moved, a label whose
  // words changed is retitled, and rows that stayed in place are not touched.
  showLabels(narrow) {
    if (!this.canvas) this.build();
    const wanted = new Set(this.rows.map((row) => row.id));
    for (const [id, label] of this.labelFor) {
      if (!wanted.has(id)) { label.remove(); this.labelFor.delete(id); }
    }
    let at = this.labels.firstElementChild;
    for (const row of this.rows) {
      let label = this.labelFor.get(row.id);
      if (!label) this.labelFor.set(row.id, (label = this.newLabel(row)));
      const text = this.labelText(row, narrow);
      if (label.textContent !== text) label.textContent = text;
      if (!row.gpu) {
        const open = String(this.expanded.has(row.student));
        if (label.getAttribute("aria-expanded") !== open) label.setAttribute("aria-expanded", open);
      }
      if (label === at) at = at.nextElementSibling;
      else this.labels.insertBefore(label, at);
    }
    if (this.shownRows !== this.rows.length) {
      this.shownRows = this.rows.length;
      this.el.style.setProperty("--heat-rows", String(this.rows.length));
    }
  }

  build() {
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

  // The cells as an image of one pixel per cell (a few kilobytes, written whole), stretched onto the canvas one
  // column at a time without smoothing: 60 drawImage calls where a fillRect per cell made 3,600. Nothing is drawn
  // when neither the cells nor the size changed.
  paint(narrow, width) {
    const pixels = new Uint8ClampedArray(COLUMNS * this.rows.length * 4);
    this.rows.forEach((row, r) => {
      row.values.forEach((v, c) => {
        const at = (r * COLUMNS + c) * 4;
        pixels.set(colour(v), at);
        pixels[at + 3] = 255;
      });
    });
    const ratio = window.devicePixelRatio || 1;
    const height = this.rows.length * ROW_PX;
    const geometry = `${width}x${height}@${ratio}:${narrow}`;
    if (geometry === this.paintedGeometry && sameBytes(pixels, this.painted)) return;
    this.painted = pixels;
    const context = this.canvas.getContext("2d");
    if (geometry !== this.paintedGeometry) {
      this.paintedGeometry = geometry;
      this.canvas.width = Math.round(width * ratio);
      this.canvas.height = Math.round(height * ratio);
    }
    this.cells ||= document.createElement("canvas");
    if (this.cells.height !== this.rows.length || this.cells.width !== COLUMNS) {
      [this.cells.width, this.cells.height] = [COLUMNS, Math.max(1, this.rows.length)];
    }
    if (this.rows.length) this.cells.getContext("2d").putImageData(new ImageData(pixels, COLUMNS), 0, 0);
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.imageSmoothingEnabled = false;
    context.clearRect(0, 0, width, height);
    // Cells on whole pixels (no seams between them), a pixel apart where there is room.
    const gap = narrow ? 0 : 1;
    for (let c = 0; c < COLUMNS; c++) {
      const left = Math.round((c * width) / COLUMNS), right = Math.round(((c + 1) * width) / COLUMNS);
      context.drawImage(this.cells, c, 0, 1, this.rows.length, left, 0, right - left - gap, height);
    }
    for (let r = 1; r <= this.rows.length; r++) context.clearRect(0, r * ROW_PX - 1, width, 1);
  }

  showTimes(narrow) {
    const picks = narrow ? [0, 30, 59] : [0, 12, 24, 36, 48, 59];
    const key = `${this.times[0]}:${narrow}`;
    if (this.timeAxis.dataset.key === key) return;
    this.timeAxis.dataset.key = key;
    const format = narrow ? CLOCK.minutes : CLOCK.seconds;
    this.timeAxis.replaceChildren(...picks.map((i) => element("span", "", format.format(this.times[i]))));
  }
  // What a cell says on hover: the student, their jobs, the value with its unit, and when.
  cellText(r, c) {
    const row = this.rows[r];
    const v = row.values[c];
    const at = CLOCK.seconds.format(this.times[c]);
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
    this.paintedGeometry = ""; // shown again: painted whole
  }

  showIdle(students) {
    const idle = students.filter((s) => s.idle >= this.idleLimit);
    const signature = idle.map((s) => `${s.student}:${Math.round(s.idle / 60)}`).join(",");
    if (this.idleList.dataset.signature !== signature) {
      this.idleList.dataset.signature = signature;
      this.idleList.replaceChildren(...this.idleItems(idle));
    }
    const byStudent = new Map(idle.map((s) => [s.student, s.idle]));
    this.idleCells ||= [...document.querySelectorAll("[data-idle-for]")];
    for (const cell of this.idleCells) {
      const seconds = byStudent.get(cell.dataset.idleFor) || 0;
      const text = seconds ? `GPU idle ${Math.round(seconds / 60)} min` : "";
      if (cell.textContent !== text) cell.textContent = text; // unchanged cells are left alone: no layout each second
      if (cell.classList.contains("flag") !== seconds > 0) cell.classList.toggle("flag", seconds > 0);
    }
  }

  idleItems(idle) {
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
    return items;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const root = document.querySelector("[data-class-dashboard]");
  if (!root) return;
  const heatmap = new ClassHeatmap(root);
  new TelemetrySocket(root.dataset.socket, { frame: (frame) => heatmap.receive(frame) });
  // Redraw once a second when frames came, and every 5 s regardless, so GPUs that stopped reporting leave; in an
  // animation frame, so a hidden tab does no drawing at all and catches up when shown.
  let ticks = 0;
  setInterval(() => {
    ticks += 1;
    if (heatmap.dirty || ticks % 5 === 0) requestAnimationFrame(() => heatmap.draw());
  }, 1000);
});
