// The class dashboard's heatmap (telemetry/templates/telemetry/course_dashboard.html). It reads the course group's
// frames through TelemetrySocket (static/js/telemetry.js, loaded before this file).
"use strict";

// The class heatmap: one row per GPU (grouped by student), one column per 5 s; redrawn at most once a second.
function coursePage(root) {
  const el = root.querySelector("[data-chart=heatmap]");
  const bucketMs = 5000, columns = 60;
  const idleLimit = Number(root.dataset.idleSeconds || 300);
  const rows = new Map(); // key → {job, student, idle, seen, values: Map(bucket → util)}
  let dirty = false;
  Plotly.newPlot(el, [{ type: "heatmap", z: [], x: [], y: [], zmin: 0, zmax: 100, colorscale: "Viridis",
    colorbar: { title: { text: "util %" } }, hoverongaps: false }],
  { margin: { l: 210, r: 10, t: 10, b: 40 }, height: 420, xaxis: { type: "date" }, yaxis: { automargin: true } },
  { displayModeBar: false, responsive: true });
  el.on("plotly_click", (event) => {
    const key = event.points && event.points[0] && event.points[0].y;
    const row = rows.get(key);
    if (row) location.href = `/jobs/${row.job}/`;
  });
  new TelemetrySocket(root.dataset.socket, {
    frame: (frame) => {
      const bucket = Math.floor(frame.t / bucketMs) * bucketMs;
      for (const g of frame.gpus || []) {
        if (!rows.has(g.key)) rows.set(g.key, { job: g.job, student: g.student, values: new Map() });
        const row = rows.get(g.key);
        row.values.set(bucket, g.util);
        row.idle = g.idle_s || 0;
        row.seen = frame.t;
      }
      dirty = true;
      el.dataset.frames = String(Number(el.dataset.frames || 0) + 1);
    },
  });
  setInterval(() => {
    if (!dirty) return;
    dirty = false;
    const now = Math.floor(Date.now() / bucketMs) * bucketMs;
    const x = Array.from({ length: columns }, (_, i) => new Date(now - (columns - 1 - i) * bucketMs));
    const keys = [...rows.keys()].sort();
    const z = keys.map((k) => x.map((t) => { const v = rows.get(k).values.get(t.getTime()); return v === undefined ? null : v; }));
    for (const row of rows.values()) for (const t of row.values.keys()) if (t < now - columns * bucketMs) row.values.delete(t);
    Plotly.react(el, [{ ...el.data[0], x, y: keys, z }], el.layout);
    const idle = new Map(); // student → the longest idle time among their GPUs seen in the last 10 s
    for (const row of rows.values()) {
      if (Date.now() - row.seen < 10000) idle.set(row.student, Math.max(idle.get(row.student) || 0, row.idle));
    }
    for (const cell of root.querySelectorAll("[data-idle-for]")) {
      const seconds = idle.get(cell.dataset.idleFor) || 0;
      cell.textContent = seconds >= idleLimit ? `GPU idle ${Math.round(seconds / 60)} min` : "";
      cell.classList.toggle("flag", seconds >= idleLimit);
    }
  }, 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  const root = document.querySelector("[data-class-dashboard]");
  if (root && typeof Plotly !== "undefined") coursePage(root);
});
