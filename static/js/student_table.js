// The class dashboard's student table (telemetry/templates/telemetry/course_dashboard.html), sorted and filtered in the
// page: no reload, so the live heatmap and its socket stay as they are. Each cell carries the value it sorts by
// (data-value) and each row its flags (data-flags: stuck, waiting, failed); "idle" is live, read from the flag cell
// that static/js/class_dashboard.js fills, which says "idle-flags-changed" when one comes or goes. Column headers
// are buttons with aria-sort; on a phone, where the table is a card per student and has no header, the "Sort by"
// list does the same.
"use strict";

const COLLATE = new Intl.Collator([], { numeric: true, sensitivity: "base" });

class StudentTable {
  constructor(root) {
    this.root = root;
    this.table = root.querySelector("table");
    this.body = this.table.tBodies[0];
    this.rows = [...this.body.rows].filter((row) => row.dataset.flags !== undefined);
    this.select = root.querySelector("[data-sort-select]");
    this.shown = root.querySelector("[data-shown]");
    this.noMatch = root.querySelector("[data-no-match]");
    this.idleCount = root.querySelector("[data-idle-count]");
    this.filter = "";
    this.sort = { column: 0, descending: false };
    this.headers = [...this.table.tHead.rows[0].cells].map((th, column) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "sort-button";
      button.textContent = th.textContent;
      button.addEventListener("click", () => this.sortBy(column, this.sort.column === column ? !this.sort.descending
        : this.defaultDescending(column)));
      th.replaceChildren(button);
      th.setAttribute("aria-sort", "none");
      return th;
    });
    this.select.addEventListener("change", () => {
      const [column, direction] = this.select.value.split(":");
      this.sortBy(Number(column), direction === "desc");
    });
    for (const button of root.querySelectorAll("[data-filter]")) {
      button.addEventListener("click", () => this.filterBy(button.dataset.filter));
    }
    document.addEventListener("idle-flags-changed", () => this.apply());
    root.querySelector("[data-table-tools]").hidden = false;
    this.sortBy(0, false);
  }

  // The direction a column sorts in first: the one that puts the students to look at on top.
  defaultDescending(column) {
    const option = [...this.select.options].find((o) => o.value.startsWith(`${column}:`));
    return option ? option.value.endsWith(":desc") : false;
  }

  sortBy(column, descending) {
    this.sort = { column, descending };
    const value = (row) => row.cells[column]?.dataset.value ?? "";
    const name = (row) => row.cells[0].dataset.value;
    const sign = descending ? -1 : 1;
    this.rows.sort((a, b) => {
      const [x, y] = [value(a), value(b)];
      if (x === "" || y === "") return (x === "") - (y === "") || COLLATE.compare(name(a), name(b)); // blanks last
      const [nx, ny] = [Number(x), Number(y)];
      const order = Number.isNaN(nx) || Number.isNaN(ny) ? COLLATE.compare(x, y) : nx - ny;
      return sign * order || COLLATE.compare(name(a), name(b));
    });
    this.body.append(...this.rows); // moves the rows; nothing is built again
    this.headers.forEach((th, i) => th.setAttribute("aria-sort", i !== column ? "none"
      : descending ? "descending" : "ascending"));
    const wanted = `${column}:${descending ? "desc" : "asc"}`;
    if ([...this.select.options].some((o) => o.value === wanted)) this.select.value = wanted;
    this.apply();
  }

  filterBy(flag) {
    this.filter = flag;
    for (const button of this.root.querySelectorAll("[data-filter]")) {
      if (button.hasAttribute("aria-pressed")) button.setAttribute("aria-pressed", String(button.dataset.filter === flag));
    }
    this.apply();
  }

  flags(row) {
    const flags = row.dataset.flags.split(" ").filter(Boolean);
    if (row.querySelector("td.idle.flag")) flags.push("idle");
    return flags;
  }

  apply() {
    let shown = 0, idle = 0;
    for (const row of this.rows) {
      const flags = this.flags(row);
      if (flags.includes("idle")) idle++;
      const show = !this.filter || flags.includes(this.filter);
      if (row.hidden === show) row.hidden = !show;
      if (show) shown++;
    }
    if (this.idleCount) this.idleCount.textContent = `(${idle})`;
    this.noMatch.hidden = shown > 0 || !this.rows.length;
    const text = this.filter ? `Showing ${shown} of ${this.rows.length} students: ${this.filter}.` : "";
    if (this.shown.textContent !== text) this.shown.textContent = text;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const root = document.querySelector("[data-student-table]");
  if (root) root.studentTable = new StudentTable(root);
});
