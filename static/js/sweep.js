// The sweep's page (sweeps/templates/sweeps/detail.html): shows the best run by the metric picked, and draws the parallel-coordinates figure the server built
// (sweeps/outcomes.py) with Plotly; the comparison below it is static/js/compare.js's.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  document.querySelector("[data-metric]")?.addEventListener("change", (event) => event.target.form.submit());
  const box = document.getElementById("sweep-parcoords");
  const data = document.getElementById("sweep-parcoords-figure");
  if (!box || !data || !window.Plotly) return;
  const figure = JSON.parse(data.textContent);
  const config = { responsive: true, displaylogo: false, toImageButtonOptions: { format: "png", filename: "sweep" } };
  window.Plotly.newPlot(box, figure.data, figure.layout, config);
});
