// The job tables (My jobs, a course's jobs: jobs/_job_table.html): a row's Cancel and the instructor's "Cancel
// selected" ask in the page's own dialog, as the job page does (jobs/_cancel_dialog.html), not in the browser's
// confirm(). Forms are found by delegation, so rows the 5-second refresh swaps in need nothing; the refresh waits
// while the dialog is open. Without JavaScript the forms post as they are.
"use strict";

let asking = null; // the form the dialog asks about

function ask(form, title, question, items) {
  const dialog = document.getElementById("table-cancel-dialog");
  if (!dialog || !dialog.showModal) return false; // no dialog: the form posts without asking
  dialog.querySelector("[data-title]").textContent = title;
  dialog.querySelector("[data-question]").textContent = question;
  const list = dialog.querySelector("[data-list]");
  list.replaceChildren(...items.map((text) => Object.assign(document.createElement("li"), { textContent: text })));
  list.hidden = !items.length;
  const count = items.length || 1;
  dialog.querySelector("[data-stop]").textContent = count === 1 ? "Stop the job" : `Stop ${count} jobs`;
  dialog.querySelector("[data-keep]").textContent = count === 1 ? "Keep it running" : "Keep them running";
  asking = form;
  dialog.returnValue = "";
  dialog.showModal();
  return true;
}

// What a ticked row says in the list: "3f2a1b9c · alice · Tiny LM — single GPU".
function describe(box) {
  const row = box.closest("tr");
  const cell = (label) => row.querySelector(`td[data-label="${label}"]`)?.textContent.trim();
  return [cell("Job"), cell("Student"), cell("Template")].filter(Boolean).join(" · ");
}

// "Compare selected": two to MAX_COMPARED ticked runs, said in words before the page is asked.
const MAX_COMPARED = 60; // experiments/selection.py MAX_RUNS

function checkCompare(form, event) {
  const ticked = document.querySelectorAll("#job-rows input[name=jobs]:checked").length;
  const note = form.querySelector("[data-compare-note]");
  note.dataset.said ||= note.textContent;
  let problem = "";
  if (ticked < 2) problem = "Tick two or more runs in the Compare column, then press “Compare selected”.";
  if (ticked > MAX_COMPARED) problem = `You ticked ${ticked} runs; a comparison shows at most ${MAX_COMPARED}. Untick some.`;
  note.classList.toggle("error", Boolean(problem));
  note.textContent = problem || note.dataset.said;
  if (problem) event.preventDefault();
}

document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form.matches("[data-compare]")) {
    checkCompare(form, event);
  } else if (form.matches("[data-confirm-cancel]")) {
    if (ask(form, form.dataset.confirmCancel, "Running work stops and is not resumed.", [])) event.preventDefault();
  } else if (form.matches("[data-confirm-bulk]")) {
    const ticked = [...document.querySelectorAll("#job-rows input[name=job]:checked")];
    const note = form.querySelector("[data-bulk-note]");
    note.dataset.said ||= note.textContent;
    note.classList.toggle("error", !ticked.length);
    note.textContent = ticked.length ? note.dataset.said : "Tick the jobs to cancel first, then press “Cancel selected”.";
    if (!ticked.length) {
      event.preventDefault();
      return;
    }
    const n = ticked.length;
    const title = `Cancel ${n} job${n === 1 ? "" : "s"}?`;
    if (ask(form, title, "Running work stops and is not resumed.", ticked.map(describe))) event.preventDefault();
  }
});

document.addEventListener("DOMContentLoaded", () => {
  const dialog = document.getElementById("table-cancel-dialog");
  if (!dialog) return;
  dialog.addEventListener("close", () => {
    const form = asking;
    asking = null;
    if (form && dialog.returnValue === "stop") form.submit(); // submit() fires no submit event: asked once
  });
});
