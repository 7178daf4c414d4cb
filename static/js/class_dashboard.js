// The class dashboard (telemetry/templates/telemetry/course_dashboard.html): a heatmap with one row per student,
// their GPUs averaged every 5 s, the least busy first; a student's row opens into one row per GPU. It reads the
// course group's frames ({gpus: [{key, job, student, util, idle_s, stale}]}) through TelemetrySocket
// (static/js/telemetry.js, loaded before this file; the keys: docs/telemetry-wire.md), and draws at most once a
// second, never per frame.
"use strict";

const BUCKET_MS = 5000;
const COLUMNS = 60; // five minutes
const LIVE_MS = 15000; // a GPU absent from frames this long is no longer in use (frames carry every GPU each second)
const ROW_PX = 22;

// Plotly reads a few HTML tags in its texts: names and labels from the roster are shown as written, never as markup.
// The width of the longest row label in Plotly's 12 px font.
const labelWidth = (labels) => {
  const context = (labelWidth.canvas ||= document.createElement("canvas")).getContext("2d");
  context.font = '12px "Open Sans", verdana, arial, sans-serif';
  return Math.ceil(Math.max(0, ...labels.map((label) => context.measureText(label).width)));
};

const plain = (text) => String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

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
    this.plotted = false;
    this.bindControls();
  }

  bindControls() {
    this.root.querySelector("[data-expand-all]").addEventListener("click", () => {
      for (const gpu of this.gpus.values()) this.expanded.add(gpu.student);
      this.draw(true);
    });
    this.root.querySelector("[data-collapse-all]").addEventListener("click", () => {
      this.expanded.clear();
      this.draw(true);
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

  // Frames only update numbers; the figure is drawn again when a column completes, a row comes, goes or moves,
  // or a row opens (force): a full redraw of 60 rows costs tens of milliseconds, too much for every second.
  draw(force = false) {
    this.dirty = false;
    const wall = this.serverNow();
    const now = Math.floor(wall / BUCKET_MS) * BUCKET_MS;
    for (const [key, gpu] of this.gpus) {
      for (const t of gpu.values.keys()) if (t < now - COLUMNS * BUCKET_MS) gpu.values.delete(t);
      if (wall - gpu.seen > COLUMNS * BUCKET_MS) this.gpus.delete(key);
    }
    const students = this.students(wall);
    this.showIdle(students);
    if (!students.length) {
      this.showEmpty();
      return;
    }
    const narrow = this.el.parentElement.clientWidth < 600; // a phone: shorter labels, the colour scale below
    const shape = [now, narrow, ...students.map((s) => `${s.student}:${this.expanded.has(s.student)}:${s.gpus.length}`)];
    if (!force && shape.join("|") === this.drawnShape) return;
    this.drawnShape = shape.join("|");
    const times = Array.from({ length: COLUMNS }, (_, i) => now - (COLUMNS - 1 - i) * BUCKET_MS);
    const clock = times.map((t) => new Date(t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" }));
    const z = [], text = [], ticks = [];
    this.rows = [];
    for (const s of students) {
      const name = plain(this.name(s.student));
      const jobs = plain([...new Set(s.gpus.map((g) => this.jobLabel(g.job)))].join(", "));
      const open = this.expanded.has(s.student);
      const count = s.gpus.length;
      this.rows.push({ student: s.student });
      ticks.push(`${open ? "▾" : "▸"} ${name}${narrow ? "" : ` · ${count} GPU${count === 1 ? "" : "s"}`}`);
      const means = times.map((t) => {
        const values = s.gpus.map((g) => g.values.get(t)).filter((v) => v !== undefined && v !== null);
        return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
      });
      z.push(means);
      const what = count > 1 ? `mean GPU util of ${count} GPUs` : "GPU util";
      text.push(means.map((v, i) => `${name} · ${jobs} · ${v === null ? "no sample" : `${what} ${Math.round(v)} %`} at ${clock[i]}`));
      if (!open) continue;
      for (const g of s.gpus) {
        const job = plain(this.jobLabel(g.job));
        this.rows.push({ gpu: g });
        ticks.push(narrow ? `    GPU ${plain(g.gpu)}` : `    GPU ${plain(g.gpu)} · ${job}`);
        const values = times.map((t) => (g.values.has(t) ? g.values.get(t) : null));
        z.push(values);
        text.push(values.map((v, i) => `${name} · ${job} · GPU ${plain(g.gpu)} · ${v === null ? "no sample" : `GPU util ${Math.round(v)} %`} at ${clock[i]}`));
      }
    }
    const y = this.rows.map((_, i) => i);
    const trace = {
      type: "heatmap", x: times.map((t) => new Date(t)), y, z, text, zmin: 0, zmax: 100, colorscale: "Viridis",
      hovertemplate: "%{text}<extra></extra>", hoverongaps: true, xgap: narrow ? 0 : 1, ygap: 1,
      showscale: !narrow, // a phone has the page's own scale under the heading instead
      colorbar: { title: { text: "GPU util %" }, thickness: 12 },
    };
    const layout = {
      height: Math.max(160, this.rows.length * ROW_PX + 70),
      margin: { l: labelWidth(ticks) + 14, r: 10, t: 10, b: 40 },
      xaxis: narrow
        ? { type: "date", fixedrange: true, nticks: 3, tickformat: "%H:%M", tickangle: 0 }
        : { type: "date", fixedrange: true },
      yaxis: { tickmode: "array", tickvals: y, ticktext: ticks, autorange: "reversed", fixedrange: true,
        tickfont: { size: 12 } }, // a margin measured here, not automargin: that measures every label on each draw
    };
    this.empty.hidden = true;
    this.el.hidden = false;
    this.tools.hidden = false;
    if (!this.plotted) {
      Plotly.newPlot(this.el, [trace], layout, { displayModeBar: false, responsive: true });
      this.el.on("plotly_click", (event) => this.click(event));
      this.plotted = true;
    } else {
      Plotly.react(this.el, [trace], layout);
    }
    this.el.dataset.rows = String(students.length);
  }

  click(event) {
    const point = event.points && event.points[0];
    const row = point && this.rows[point.y];
    if (!row) return;
    if (row.gpu) {
      location.href = `/jobs/${row.gpu.job}/`;
      return;
    }
    if (this.expanded.has(row.student)) this.expanded.delete(row.student);
    else this.expanded.add(row.student);
    this.draw(true);
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
    for (const cell of document.querySelectorAll("[data-idle-for]")) {
      const seconds = byStudent.get(cell.dataset.idleFor) || 0;
      cell.textContent = seconds ? `GPU idle ${Math.round(seconds / 60)} min` : "";
      cell.classList.toggle("flag", seconds > 0);
    }
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const root = document.querySelector("[data-class-dashboard]");
  if (!root || typeof Plotly === "undefined") return;
  const heatmap = new ClassHeatmap(root);
  new TelemetrySocket(root.dataset.socket, { frame: (frame) => heatmap.receive(frame) });
  // Redraw once a second when frames came, and every 5 s regardless, so GPUs that stopped reporting leave.
  let ticks = 0;
  setInterval(() => {
    ticks += 1;
    if (heatmap.dirty || ticks % 5 === 0) heatmap.draw();
  }, 1000);
});
