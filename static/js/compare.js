// The comparison page (experiments/templates/experiments/compare.html): draws the figures the server built
// (experiments/figures.py) with Plotly, smooths loss, tok/s and step time on request (an exponential moving average of the
// points drawn), puts the GPU charts on the clock on request, hides and shows runs from the page's one legend, sorts the
// results table, and, while a run is still going, asks GET /api/v1/compare/ for new figures and the page's ?part=tables
// for new tables every few seconds.
//
// A chart of a class's fifty runs takes a long task to draw (Plotly's cost is per line, hardly per point), so each
// chart is drawn in a task of its own, in page order, and only once it is in view (bench/compare.py: drawing all five
// at once blocked the page for over a second). A chart drawn before a change of settings, figures or runs shown is
// drawn again when it is next in view.
"use strict";

const SMOOTHED = new Set(["loss", "tokens", "step-time"]);
const SEEN = 0.2; // a chart is drawn once this much of it is in view: a strip of one at a screen's bottom waits
let figures = {};
const hidden = new Set(); // runs unticked in the legend: their traces' uid
const due = new Set(); // charts to draw (again) with the figures and settings of now
const near = new Set(); // charts in view
let drawing = false;

function ema(values, alpha) {
  let last = null;
  return values.map((v) => {
    if (v === null) return null;
    last = last === null ? v : alpha * last + (1 - alpha) * v;
    return last;
  });
}

function shown(chart, figure, settings) {
  const data = figure.data.map((trace) => {
    const out = { ...trace, visible: !hidden.has(trace.uid) };
    if (SMOOTHED.has(chart) && settings.smoothing > 0) out.y = ema(trace.y, settings.smoothing);
    if (trace.meta && settings.align === "clock" && trace.meta.start_ms !== null) {
      out.x = trace.x.map((minutes) => new Date(trace.meta.start_ms + minutes * 60000));
    }
    return out;
  });
  const layout = JSON.parse(JSON.stringify(figure.layout));
  if (data.some((t) => t.meta) && settings.align === "clock") layout.xaxis.title.text = "time";
  return { data, layout };
}

function settings() {
  const smoothing = Number(document.querySelector("[data-smoothing]")?.value || 0);
  const align = document.querySelector("[data-align]")?.value || "start";
  return { smoothing, align };
}

// The PNG names the runs: the page's legend is HTML, so the picture gets Plotly's legend below the plot, the figure
// made taller by its rows. It draws what the chart shows: smoothing, the clock, the runs hidden.
function savePng(box) {
  const names = box.data.filter((trace) => trace.visible !== false).map((trace) => trace.name);
  const width = Math.max(box.clientWidth, 640);
  const longest = Math.max(0, ...names.map((name) => name.length));
  const perRow = Math.max(1, Math.floor((width - 60) / (48 + 7 * longest)));
  const height = box.clientHeight + 22 * Math.ceil(names.length / perRow);
  const figure = { data: box.data, layout: { ...box.layout, showlegend: true } };
  const filename = `comparison-${box.dataset.chart}`;
  return window.Plotly.downloadImage(figure, { format: "png", filename, width, height });
}

function config() {
  const png = { name: "png", title: "Download plot as a PNG", icon: window.Plotly.Icons.camera, click: savePng };
  return { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["toImage"], modeBarButtonsToAdd: [png] };
}

function drawChart(box) {
  const figure = figures[box.dataset.chart];
  if (!figure) return; // a chart the new figures no longer have
  const { data, layout } = shown(box.dataset.chart, figure, settings());
  window.Plotly.react(box, data, layout, config());
}

const nextTask = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));

// One chart per task, the first due in page order first, with a frame painted between two.
async function drawDue() {
  if (drawing) return;
  drawing = true;
  try {
    for (;;) {
      const box = [...document.querySelectorAll("[data-chart]")].find((b) => due.has(b) && near.has(b));
      if (!box) return;
      due.delete(box);
      drawChart(box);
      await nextTask();
    }
  } finally {
    drawing = false;
  }
}

function draw() {
  const now = settings();
  const said = document.querySelector("[data-smoothing-value]");
  if (said) said.textContent = now.smoothing > 0 ? now.smoothing.toFixed(2) : "off";
  document.querySelectorAll("[data-chart]").forEach((box) => due.add(box));
  drawDue();
}

function watchCharts() {
  const seen = new IntersectionObserver(
    (entries) => {
      for (const entry of entries) entry.intersectionRatio >= SEEN ? near.add(entry.target) : near.delete(entry.target);
      drawDue();
    },
    { threshold: [0, SEEN] },
  );
  document.querySelectorAll("[data-chart]").forEach((box) => seen.observe(box));
}

// The legend: a run's box hides or shows its lines in every chart; "Show all" and "Hide all" tick or untick them all.
function pickRuns(legend) {
  hidden.clear();
  legend.querySelectorAll("[data-run]:not(:checked)").forEach((box) => hidden.add(box.value));
  draw();
}

function watchLegend(legend) {
  legend.addEventListener("change", (event) => event.target.matches("[data-run]") && pickRuns(legend));
  legend.addEventListener("click", (event) => {
    const all = event.target.closest("[data-runs]")?.dataset.runs;
    if (!all) return;
    legend.querySelectorAll("[data-run]").forEach((box) => (box.checked = all === "all"));
    pickRuns(legend);
  });
}

// Sorting: each cell's data-sort, as a number where both are numbers; empty cells last either way.
function sortBy(table, key, button) {
  const ascending = button.dataset.order !== "asc";
  table.querySelectorAll("[data-sort-key]").forEach((b) => b.removeAttribute("data-order"));
  button.dataset.order = ascending ? "asc" : "desc";
  const body = table.tBodies[0];
  const value = (row) => row.children[key].dataset.sort ?? "";
  const rows = [...body.rows].sort((a, b) => {
    const [x, y] = [value(a), value(b)];
    if (x === "" || y === "") return (x === "") - (y === "");
    const [nx, ny] = [Number(x), Number(y)];
    const order = Number.isNaN(nx) || Number.isNaN(ny) ? x.localeCompare(y) : nx - ny;
    return ascending ? order : -order;
  });
  body.append(...rows);
  table.dataset.sorted = `${key}:${button.dataset.order}`;
}

function restoreSort(previous) {
  if (!previous) return;
  const [key, order] = previous.split(":");
  const table = document.querySelector("[data-sortable]");
  const button = table?.querySelector(`[data-sort-key="${key}"]`);
  if (!button) return;
  button.dataset.order = order === "asc" ? "desc" : "asc"; // sortBy flips it back
  sortBy(table, Number(key), button);
}

function showAll() {
  const box = document.querySelector("[data-show-all]");
  document.getElementById("compare-parameters")?.classList.toggle("show-all", Boolean(box?.checked));
}

async function refresh(root) {
  const [api, tables] = await Promise.all([
    fetch(root.dataset.api, { headers: { Accept: "application/json" } }),
    fetch(root.dataset.tables),
  ]);
  if (!api.ok || !tables.ok) return true; // try again next time
  const answer = await api.json();
  figures = answer.figures;
  draw();
  const box = document.getElementById("compare-tables");
  const sorted = box.querySelector("[data-sortable]")?.dataset.sorted;
  const all = box.querySelector("[data-show-all]")?.checked;
  box.innerHTML = await tables.text();
  if (all) box.querySelector("[data-show-all]").checked = true;
  showAll();
  restoreSort(sorted);
  return answer.live;
}

document.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("comparison");
  const data = document.getElementById("compare-figures");
  if (!root || !data || !window.Plotly) return;
  figures = JSON.parse(data.textContent);
  draw();
  watchCharts();
  const legend = document.getElementById("compare-legend");
  if (legend) watchLegend(legend);
  document.querySelector("[data-smoothing]")?.addEventListener("input", draw);
  document.querySelector("[data-align]")?.addEventListener("change", draw);
  root.addEventListener("change", (event) => {
    if (event.target.matches("[data-show-all]")) showAll();
    if (event.target.matches("[data-baseline]")) event.target.form.submit();
  });
  root.addEventListener("click", (event) => {
    const button = event.target.closest("[data-sort-key]");
    if (button) sortBy(button.closest("table"), Number(button.dataset.sortKey), button);
  });
  if (root.dataset.live) {
    const every = Number(root.dataset.refresh) * 1000;
    const again = async () => {
      let live = true;
      try {
        live = await refresh(root);
      } catch {
        live = true; // the network blinked: ask again next time
      }
      if (live) setTimeout(again, every);
      else document.getElementById("compare-live")?.remove();
    };
    setTimeout(again, every);
  }
});
