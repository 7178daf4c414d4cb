// The class dashboard's last hour (telemetry/class_hour.py): one row per student whose jobs held GPUs in the hour,
// the jobs that ended included, a cell per minute, the least busy first. Drawn once from the page's JSON, then again
// from hour.json once a minute while the tab is shown (the stored figures change no faster): 60 columns of at most
// a class's rows go into a one-pixel-per-cell image that the canvas scales, so a draw is one putImageData, never a
// DOM node per cell. Uses class_dashboard.js's colour scale, element() and clock formats (loaded before it).
"use strict";

const HOUR_REFRESH_MS = 60_000;
const MINUTE = 60_000;

class ClassHour {
  constructor(root) {
    this.root = root;
    this.grid = root.querySelector("[data-hour-grid]");
    this.empty = root.querySelector("[data-hour-empty]");
    this.simulated = root.querySelector("[data-hour-simulated]");
    this.labels = element("div", "heat-labels");
    this.canvas = element("canvas", "heat-cells");
    this.canvas.setAttribute("role", "img");
    this.times = element("div", "heat-times muted");
    this.tip = element("div", "heat-tip small");
    this.tip.hidden = true;
    const right = element("div");
    right.append(this.canvas, this.times);
    this.grid.append(this.labels, right, this.tip);
    this.canvas.addEventListener("mousemove", (event) => this.hover(event));
    this.canvas.addEventListener("mouseleave", () => { this.tip.hidden = true; });
    this.grid.classHour = this; // its rows and cellText(row, column), for tests
    this.draw(JSON.parse(document.getElementById("class-hour").textContent));
    setInterval(() => this.refresh(), HOUR_REFRESH_MS);
  }

  async refresh() {
    if (document.hidden) return;
    try {
      const answer = await fetch(this.root.dataset.url, { headers: { Accept: "application/json" } });
      if (answer.ok) this.draw(await answer.json());
    } catch {
      // offline for a moment: the hour drawn stays, and the next minute tries again
    }
  }

  draw(hour) {
    this.hour = hour;
    const rows = hour.rows;
    this.empty.hidden = rows.length > 0;
    this.grid.hidden = rows.length === 0;
    // Ended jobs' summaries say it from the server; for running ones the live heatmap's frames do (its notice).
    const live = document.querySelector("[data-heatmap-simulated]");
    const simulated = hour.simulated || Boolean(live && !live.hidden);
    if (this.simulated.hidden === simulated) this.simulated.hidden = !simulated;
    if (!rows.length) return;
    const jobs = this.root.dataset.jobsUrl;
    const narrow = this.root.clientWidth < 600; // a phone: no job count in the labels, two times under the cells
    this.labels.replaceChildren(...rows.map((row) => {
      const count = narrow ? "" : ` · ${row.jobs} job${row.jobs === 1 ? "" : "s"}`;
      const link = element("a", "heat-label", `${row.name}${count}${row.running ? "" : " · ended"}`);
      link.href = `${jobs}?student=${encodeURIComponent(row.student)}`;
      return link;
    }));
    const image = new ImageData(hour.minutes, rows.length);
    rows.forEach((row, r) => row.util.forEach((value, c) => {
      image.data.set([...colour(value), 255], (r * hour.minutes + c) * 4);
    }));
    this.canvas.width = hour.minutes;
    this.canvas.height = rows.length;
    this.canvas.getContext("2d").putImageData(image, 0, 0);
    this.grid.style.setProperty("--heat-rows", rows.length);
    this.canvas.setAttribute("aria-label", `GPU utilization of ${rows.length} students each minute of the last hour`);
    const at = (minutes) => CLOCK.minutes.format(new Date(hour.start + minutes * MINUTE));
    const ticks = narrow ? [at(0), at(hour.minutes)] : [at(0), at(hour.minutes / 2), at(hour.minutes)];
    if (this.times.textContent !== ticks.join("")) this.times.replaceChildren(...ticks.map((t) => element("span", "", t)));
    this.grid.dataset.rows = String(rows.length);
  }

  // "Ada Lovelace · 14:05 · 37 %" for the cell of row `r` and column `c`.
  cellText(r, c) {
    const row = this.hour.rows[r];
    const value = row.util[c];
    const when = CLOCK.minutes.format(new Date(this.hour.start + c * MINUTE));
    return `${row.name} · ${when} · ${value === null ? "no GPU in use" : `${value} %`}`;
  }

  hover(event) {
    const box = this.canvas.getBoundingClientRect();
    const c = Math.floor(((event.clientX - box.left) / box.width) * this.hour.minutes);
    const r = Math.floor(((event.clientY - box.top) / box.height) * this.hour.rows.length);
    if (c < 0 || r < 0 || c >= this.hour.minutes || r >= this.hour.rows.length) return;
    this.tip.textContent = this.cellText(r, c);
    const grid = this.grid.getBoundingClientRect();
    this.tip.style.transform = `translate(${event.clientX - grid.left + 12}px, ${event.clientY - grid.top + 12}px)`;
    this.tip.hidden = false;
  }
}

for (const root of document.querySelectorAll("[data-class-hour]")) new ClassHour(root);
