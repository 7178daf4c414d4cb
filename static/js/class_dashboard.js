// The class dashboard (telemetry/templates/telemetry/course_dashboard.html): a canvas heatmap with one row per student,
// their GPUs averaged every 5 s, the least busy first; a student's row opens into one row per GPU. It opens with the
// server's cells of the last five minutes (a "heat" message, telemetry/heat.py) and then reads the course group's
// frames, every GPU once a second in columns ({roster, util: […], idle_s: […]}), through TelemetrySocket
// (static/js/telemetry.js, loaded before this file; the keys: docs/telemetry-wire.md), and draws at most once a
// second, never per frame, from a one-second timer (nothing while the tab is hidden or the heatmap is off-screen).
// A draw does only what changed: the cells are painted when their colours changed (from a one-pixel-per-cell image),
// labels are kept per row and moved or retitled rather than built again, the time axis and the idle list are
// rewritten only when their text changes, and every size is read before anything is written. Within a 5-second
// column the rows keep their order unless a student's idle minutes change, so most draws touch only the newest
// column: its means, its pixels and its strip of the canvas (bench/browser_pages.py measures a draw per frame).
"use strict";

const BUCKET_MS = 5000;
const COLUMNS = 60; // five minutes
const NEWEST = COLUMNS - 1;
const LIVE_MS = 15000; // a GPU absent from frames this long is no longer in use (frames carry every GPU each second)
const KEPT_MS = COLUMNS * BUCKET_MS; // a GPU whose job ended keeps its row, marked ended, while its cells are shown
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
const colour = (value) => (value === null ? NO_SAMPLE : COLOURS[Math.round(Math.min(100, Math.max(0, value)))]);
const CSS_COLOURS = new Map([...COLOURS, NO_SAMPLE].map((rgb) => [rgb, `rgb(${rgb.join(", ")})`])); // by colour()
const cssColour = (value) => CSS_COLOURS.get(colour(value));
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
    this.simulatedNote = root.querySelector("[data-heatmap-simulated]"); // shown once a stand-in GPU's row comes
    this.tools = root.querySelector("[data-heatmap-tools]");
    this.idleList = root.querySelector("[data-idle-now]");
    this.idleLimit = Number(root.dataset.idleSeconds || 300);
    const labels = JSON.parse(document.getElementById("heatmap-labels").textContent);
    this.names = labels.names; // username → name
    this.jobLabels = labels.jobs; // job id → "tiny-lm-single 3f2a1b9c"
    this.gpus = new Map(); // key → {key, job, student, gpu, idle, seen, util and at: its buckets (gpuRing)}
    this.roster = null; // the roster the frames' columns follow, and its GPUs, one per column
    this.columns = [];
    this.expanded = new Set(); // students shown one row per GPU
    this.rows = []; // what each heatmap row is, top to bottom: {student} or {gpu}
    this.dirty = false;
    this.offset = Infinity; // browser clock minus server clock, plus the fastest frame's delay
    this.openedAt = Date.now();
    this.el.heatmap = this; // its rows and cellText(row, column), for tests
    this.labelFor = new Map(); // row id (a student, or a GPU's key) → its label element, kept between draws
    this.pixels = new Uint8ClampedArray(0); // the cells' colours as last painted, one pixel per cell (paint)
    this.paintedGeometry = "";
    this.layout = ""; // the rows as last drawn: their ids, GPUs and open state, and the column and width
    this.frames = 0;
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

  // A frame holds every GPU in columns (docs/telemetry-wire.md): `util` and `idle_s` carry one number per GPU, in the
  // order of the roster it names; a frame with `gpus` brings a new roster. A frame whose roster this page never got
  // (the one that brought it was lost) cannot be read: the page asks for the heat, which names the roster.
  receive(frame) {
    if (!Array.isArray(frame.util)) return; // a frame of another version of the portal, while it is being deployed
    this.offset = Math.min(this.offset, Date.now() - frame.t);
    if (frame.gpus) this.useRoster(frame.roster, frame.gpus.map((g) => this.track(g)));
    if (frame.roster !== this.roster || frame.util.length !== this.columns.length) {
      if (this.askHeat) this.askHeat();
      return;
    }
    const bucket = Math.floor(frame.t / BUCKET_MS) * BUCKET_MS;
    this.columns.forEach((gpu, i) => {
      setCell(gpu, bucket, frame.util[i] ?? NaN); // a bucket holds its newest sample
      gpu.idle = frame.idle_s[i] || 0;
      gpu.seen = frame.t;
    });
    this.readSeq = frame.seq;
    this.dirty = true;
    this.el.dataset.frames = String(++this.frames);
  }

  // The server's cells of the last five minutes ({type: "heat", first, bucket_ms, gpus: [{…, seen, util: [60]}],
  // roster, live}), what the page opens with and what a resync brings: each cell is its column's newest sample, as
  // frames leave it, and `live` names the columns of the frames that follow.
  // A resync's answer may come after frames newer than it (read before they were sent): it then only fills the cells
  // the page lacks, and leaves the roster, idle times and last-seen times those frames brought. The page's clock is
  // set by frames alone: a heat may be minutes old (a class whose jobs ended), and its GPUs then show as ended.
  load(heat) {
    if (!heat.gpus.length && !heat.roster) return; // before the class's first frame
    const older = this.readSeq !== undefined && heat.seq < this.readSeq && this.readSeq - heat.seq < 1000;
    for (const g of heat.gpus) {
      const gpu = this.track(g);
      g.util.forEach((value, i) => {
        const t = heat.first + i * heat.bucket_ms;
        if (value !== null && !(older && holds(gpu, t))) setCell(gpu, t, value);
      });
      if (older && gpu.seen !== undefined) continue;
      gpu.seen = Math.max(gpu.seen || 0, g.seen);
      gpu.idle = g.idle_s || 0;
    }
    if (heat.roster && !older) this.useRoster(heat.roster, heat.live.map((key) => this.gpus.get(key)));
    this.layout = ""; // its cells reach back five minutes: the next draw reads every column, not just the newest
    this.dirty = true;
  }

  useRoster(roster, gpus) {
    this.roster = roster;
    this.columns = gpus;
  }

  // A GPU's record (key: student/job8/node/index), made when it first appears.
  track(g) {
    let gpu = this.gpus.get(g.key);
    if (!gpu) {
      gpu = { key: g.key, job: g.job, student: g.student, gpu: g.key.split("/").slice(2).join("/"), ...gpuRing() };
      this.gpus.set(g.key, gpu);
    }
    if (g.simulated && this.simulatedNote && this.simulatedNote.hidden) this.simulatedNote.hidden = false;
    return gpu;
  }

  // The GPUs shown, by student: in use now, or (marked ended) used by a job that ended within the five minutes, so a
  // job that ended or failed does not vanish from the picture as it happens. The idlest student in use first, then
  // the least busy over the last minute; students whose GPUs all ended last.
  // Ordered on whole buckets, whole idle minutes and 5 % bands of the last minute's mean, so rows move when a column
  // completes and a student's use really changed, not with every sample (a row that jumps cannot be clicked).
  students(now) {
    const bucket = Math.floor(now / BUCKET_MS) * BUCKET_MS;
    const live = new Map();
    for (const gpu of this.gpus.values()) {
      if (now - gpu.seen > KEPT_MS) continue;
      gpu.ended = now - gpu.seen > LIVE_MS;
      if (!live.has(gpu.student)) live.set(gpu.student, []);
      live.get(gpu.student).push(gpu);
    }
    const recent = (gpus) => {
      let sum = 0, count = 0;
      for (const gpu of gpus) {
        if (gpu.recentAt !== bucket) { // the last minute's completed columns: once per column, not per draw
          gpu.recentAt = bucket;
          gpu.recentSum = gpu.recentCount = 0;
          for (let t = bucket - 60000; t < bucket; t += BUCKET_MS) {
            const v = valueAt(gpu, t);
            if (v !== null) { gpu.recentSum += v; gpu.recentCount++; }
          }
        }
        sum += gpu.recentSum;
        count += gpu.recentCount;
      }
      return count ? sum / count : -1; // no numbers: first
    };
    return [...live.entries()]
      .map(([student, gpus]) => ({
        student,
        gpus: gpus.sort((a, b) => a.key.localeCompare(b.key)),
        idle: Math.max(...gpus.map((g) => (g.ended ? 0 : g.idle))),
        ended: gpus.every((g) => g.ended),
        recent: recent(gpus),
      }))
      .sort((a, b) => a.ended - b.ended ||
        Math.floor(b.idle / 60) - Math.floor(a.idle / 60) || Math.sign(b.idle) - Math.sign(a.idle) ||
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
      for (const [key, gpu] of this.gpus) if (wall - gpu.seen > COLUMNS * BUCKET_MS) this.gpus.delete(key);
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
    if (now !== this.times?.[NEWEST]) this.times = Array.from({ length: COLUMNS }, (_, i) => now - (NEWEST - i) * BUCKET_MS);
    const narrow = width < 600; // a phone: shorter labels, two times under the cells
    let layout = `${now}:${width}:${window.devicePixelRatio}:${this.el.hidden}`;
    for (const s of students) {
      const open = this.expanded.has(s.student);
      layout += `,${s.student}${open ? "+" : ""}`;
      for (const g of s.gpus) layout += `|${g.key}${g.ended ? "-" : ""}`;
    }
    if (layout === this.layout) { // the same rows in the same column: only the newest column moved
      for (const row of this.rows) row.values[NEWEST] = row.gpu ? valueAt(row.gpu, now) : mean(row.gpus, now);
      this.paintNewest();
      return;
    }
    this.layout = layout;
    this.rows = [];
    for (const s of students) {
      this.rows.push({ id: s.student, student: s.student, gpus: s.gpus, ended: s.ended,
        values: this.times.map((t) => mean(s.gpus, t)) });
      if (!this.expanded.has(s.student)) continue;
      for (const g of s.gpus) {
        this.rows.push({ id: g.key, student: s.student, gpu: g, values: this.times.map((t) => valueAt(g, t)) });
      }
    }
    const wasHidden = this.el.hidden;
    this.empty.hidden = true;
    this.el.hidden = false;
    this.tools.hidden = false;
    this.showLabels(narrow);
    this.paint(narrow, wasHidden || !cellsWidth ? this.canvas.clientWidth : cellsWidth);
    this.showTimes(narrow);
    if (this.el.dataset.rows !== String(students.length)) this.el.dataset.rows = String(students.length);
  }

  // A row's label: "▸ Ada Lovelace · 2 GPUs" (a button), or under an open student "GPU node/0 · job" (a link).
  labelText(row, narrow) {
    if (row.gpu) {
      const ended = row.gpu.ended ? " · ended" : "";
      return narrow ? `GPU ${row.gpu.gpu}${ended}` : `GPU ${row.gpu.gpu} · ${this.jobLabel(row.gpu.job)}${ended}`;
    }
    const open = this.expanded.has(row.student);
    const count = row.gpus.length;
    const gpus = narrow ? "" : ` · ${count} GPU${count === 1 ? "" : "s"}`;
    return `${open ? "▾" : "▸"} ${this.name(row.student)}${gpus}${row.ended ? " · ended" : ""}`;
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
    const rows = this.rows.length;
    const old = this.pixels;
    const pixels = old.length === COLUMNS * rows * 4 ? old : new Uint8ClampedArray(COLUMNS * rows * 4);
    let changed = pixels !== old;
    for (let r = 0; r < rows; r++) {
      const values = this.rows[r].values;
      for (let c = 0; c < COLUMNS; c++) changed = setPixel(pixels, (r * COLUMNS + c) * 4, values[c]) || changed;
    }
    const ratio = window.devicePixelRatio || 1;
    const height = rows * ROW_PX;
    const geometry = `${width}x${height}@${ratio}:${narrow}`;
    if (geometry === this.paintedGeometry && !changed) return;
    this.pixels = pixels;
    this.image = rows ? new ImageData(pixels, COLUMNS) : null; // a view of the same bytes
    const context = this.canvas.getContext("2d");
    if (geometry !== this.paintedGeometry) {
      this.paintedGeometry = geometry;
      this.canvas.width = Math.round(width * ratio);
      this.canvas.height = Math.round(height * ratio);
    }
    this.cells ||= document.createElement("canvas");
    if (this.cells.height !== rows || this.cells.width !== COLUMNS) {
      [this.cells.width, this.cells.height] = [COLUMNS, Math.max(1, rows)];
    }
    if (rows) this.cells.getContext("2d").putImageData(this.image, 0, 0);
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.imageSmoothingEnabled = false;
    context.clearRect(0, 0, width, height);
    this.cellWidth = width;
    this.gap = narrow ? 0 : 1;
    for (let c = 0; c < COLUMNS; c++) this.paintColumn(context, c);
    this.clearBetweenRows(context, 0, width);
  }

  // Cells on whole pixels (no seams between them), a pixel apart where there is room.
  paintColumn(context, c) {
    const width = this.cellWidth, rows = this.rows.length;
    const left = Math.round((c * width) / COLUMNS), right = Math.round(((c + 1) * width) / COLUMNS);
    context.drawImage(this.cells, c, 0, 1, rows, left, 0, right - left - this.gap, rows * ROW_PX);
  }

  // A pixel's line between rows, across the given span.
  clearBetweenRows(context, left, width) {
    for (let r = 1; r <= this.rows.length; r++) context.clearRect(left, r * ROW_PX - 1, width, 1);
  }

  // The newest column only, when its colours changed: its pixels into the image, its strip onto the canvas.
  // The newest column only: a rectangle per cell whose colour changed, and its pixel into the image the next whole
  // paint draws from (drawing a column of that image after changing it cost more than the rectangles).
  paintNewest() {
    if (!this.image) return;
    const width = this.cellWidth;
    const left = Math.round((NEWEST * width) / COLUMNS), right = Math.round(((NEWEST + 1) * width) / COLUMNS);
    let context = null;
    for (let r = 0; r < this.rows.length; r++) {
      const value = this.rows[r].values[NEWEST];
      if (!setPixel(this.pixels, (r * COLUMNS + NEWEST) * 4, value)) continue;
      context ||= this.canvas.getContext("2d");
      context.fillStyle = cssColour(value);
      context.fillRect(left, r * ROW_PX, right - left - this.gap, ROW_PX - 1);
    }
  }

  showTimes(narrow) {
    const picks = narrow ? [0, 59] : [0, 12, 24, 36, 48, 59]; // a phone's column holds two clock times, not three
    const key = `${this.times[0]}:${narrow}`;
    if (this.timeAxis.dataset.key === key) return;
    this.timeAxis.dataset.key = key;
    const format = narrow ? CLOCK.minutes : CLOCK.seconds;
    if (this.timeAxis.children.length !== picks.length) {
      this.timeAxis.replaceChildren(...picks.map(() => element("span")));
    }
    picks.forEach((column, i) => { // the same spans retitled: a phone's minutes change once in twelve columns
      const text = format.format(this.times[column]);
      if (this.timeAxis.children[i].textContent !== text) this.timeAxis.children[i].textContent = text;
    });
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
    this.paintedGeometry = this.layout = ""; // shown again: painted whole
  }

  showIdle(students) {
    const idle = students.filter((s) => s.idle >= this.idleLimit);
    const signature = idle.map((s) => `${s.student}:${Math.round(s.idle / 60)}`).join(",");
    if (this.idleList.dataset.signature === signature && this.idleCells) return; // the cells say the same
    if (this.idleList.dataset.signature !== signature) {
      this.idleList.dataset.signature = signature;
      this.idleList.replaceChildren(...this.idleItems(idle));
    }
    const byStudent = new Map(idle.map((s) => [s.student, s.idle]));
    this.idleCells ||= [...document.querySelectorAll("[data-idle-for]")];
    let flagged = false;
    for (const cell of this.idleCells) {
      const seconds = byStudent.get(cell.dataset.idleFor) || 0;
      const text = seconds ? `GPU idle ${Math.round(seconds / 60)} min` : "";
      if (cell.textContent !== text) { // unchanged cells are left alone: no layout each second
        cell.textContent = text;
        cell.dataset.value = String(Math.round(seconds / 60)); // what the student table sorts the flag by
      }
      if (cell.classList.contains("flag") !== seconds > 0) {
        cell.classList.toggle("flag", seconds > 0);
        flagged = true;
      }
    }
    // The student table (static/js/student_table.js) filters on the flags: it looks again when one came or went.
    if (flagged) document.dispatchEvent(new CustomEvent("idle-flags-changed"));
  }

  idleItems(idle) {
    const items = idle.map((s) => {
      const item = document.createElement("li");
      const link = document.createElement("a");
      const gpu = s.gpus.reduce((a, b) => (b.idle > a.idle ? b : a));
      link.href = `/jobs/${gpu.job}/`;
      link.textContent = this.name(s.student);
      const idleGpus = s.gpus.filter((g) => !g.ended && g.idle >= this.idleLimit).length;
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

// Each GPU's last COLUMNS buckets in a ring: util (NaN: no sample) and the bucket each slot holds now.
const gpuRing = () => ({ util: new Float32Array(COLUMNS).fill(NaN), at: new Float64Array(COLUMNS).fill(-1) });

// A GPU's cell for bucket t: its slot of the ring now holds that bucket.
function setCell(gpu, t, value) {
  const slot = (t / BUCKET_MS) % COLUMNS;
  gpu.util[slot] = value;
  gpu.at[slot] = t;
}

// Whether a GPU's ring holds bucket t now.
const holds = (gpu, t) => gpu.at[(t / BUCKET_MS) % COLUMNS] === t;

// A GPU's value in bucket t, or null where it has no sample.
function valueAt(gpu, t) {
  const slot = (t / BUCKET_MS) % COLUMNS;
  const v = gpu.at[slot] === t ? gpu.util[slot] : NaN;
  return Number.isNaN(v) ? null : v;
}

// A student's cell: the mean of their GPUs in bucket t (null where none has a sample).
function mean(gpus, t) {
  let sum = 0, count = 0;
  for (const g of gpus) {
    const v = valueAt(g, t);
    if (v !== null) { sum += v; count++; }
  }
  return count ? sum / count : null;
}

// One cell's colour into the image's bytes; true when it changed.
function setPixel(pixels, at, value) {
  const [r, g, b] = colour(value);
  if (pixels[at] === r && pixels[at + 1] === g && pixels[at + 2] === b && pixels[at + 3] === 255) return false;
  pixels[at] = r;
  pixels[at + 1] = g;
  pixels[at + 2] = b;
  pixels[at + 3] = 255;
  return true;
}

document.addEventListener("DOMContentLoaded", () => {
  const root = document.querySelector("[data-class-dashboard]");
  if (!root) return;
  const heatmap = new ClassHeatmap(root);
  const socket = new TelemetrySocket(root.dataset.socket, {
    heat: (heat) => heatmap.load(heat),
    frame: (frame) => heatmap.receive(frame),
  });
  heatmap.askHeat = () => socket.resync();
  // Redraw once a second when frames came, and every 5 s regardless, so GPUs that stopped reporting leave. A hidden
  // tab does no drawing at all and catches up when shown. Drawn in the timer itself: asking for an animation frame
  // each second cost more than a draw of the newest column.
  let ticks = 0;
  setInterval(() => {
    ticks += 1;
    if (!document.hidden && (heatmap.dirty || ticks % 5 === 0)) heatmap.draw();
  }, 1000);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) heatmap.draw(); });
});
