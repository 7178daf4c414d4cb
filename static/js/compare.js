// The comparison page (experiments/templates/experiments/compare.html): draws the figures the server built
// (experiments/figures.py) with Plotly, smooths loss, tok/s and step time on request (an exponential moving average of the
// points drawn), puts the GPU charts on the clock on request, sorts the results table, and, while a run is still
// going, asks GET /api/v1/compare/ for new figures and the page's ?part=tables for new tables every few seconds.
"use strict";

const SMOOTHED = new Set(["loss", "tokens", "step-time"]);
const CONFIG = { responsive: true, displaylogo: false, toImageButtonOptions: { format: "png", filename: "comparison" } };
let figures = {};

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
    const out = { ...trace };
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

function draw() {
  const now = settings();
  const said = document.querySelector("[data-smoothing-value]");
  if (said) said.textContent = now.smoothing > 0 ? now.smoothing.toFixed(2) : "off";
  for (const [chart, figure] of Object.entries(figures)) {
    const box = document.querySelector(`[data-chart="${chart}"]`);
    if (!box) continue;
    const { data, layout } = shown(chart, figure, now);
    window.Plotly.react(box, data, layout, CONFIG);
  }
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
