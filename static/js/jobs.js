// Job page and launch form: times in the viewer's own zone, the cancel confirmation, state changes announced once,
// and the launch form's error summary focused. Every part has a working page without JavaScript underneath.
"use strict";

// <time datetime="…Z" data-local-time="datetime|time"> written by jobs/templatetags/job_time.py.
const TIME_FORMATS = {
  datetime: new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit",
    timeZoneName: "short",
  }),
  time: new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" }),
};
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

function showLocalTimes(root) {
  for (const element of root.querySelectorAll("time[data-local-time]")) {
    const format = TIME_FORMATS[element.dataset.localTime];
    const instant = new Date(element.getAttribute("datetime"));
    if (!format || Number.isNaN(instant.getTime())) continue;
    element.textContent = format.format(instant);
    element.title = `Your time zone: ${ZONE}`;
  }
}

// The state panel's parts are swapped in when they change; a polite live region outside it says each new state once.
let announcedState = null;

function announceStateChange() {
  const badge = document.getElementById("job-state");
  const region = document.getElementById("job-announce");
  if (!badge || !region) return;
  if (announcedState !== null && badge.dataset.state !== announcedState) {
    const error = document.getElementById("job-error");
    region.textContent = `The job is now ${badge.textContent.trim()}.${error ? ` ${error.textContent.trim()}` : ""}`;
  }
  announcedState = badge.dataset.state;
}

// Cancel: the link opens the dialog with the panel's current question ("Stop training? It has run 12 min …"), which
// the progress part holds: it changes with the time run and the step, the link does not.
document.addEventListener("click", (event) => {
  const dialog = document.getElementById("cancel-dialog");
  const link = event.target.closest("a[data-cancel]");
  const progress = document.getElementById("job-progress");
  if (link && dialog && dialog.showModal && progress) {
    event.preventDefault();
    dialog.querySelector("[data-question]").textContent = progress.dataset.cancelQuestion;
    dialog.showModal();
  } else if (event.target.closest("[data-close-dialog]")) {
    event.target.closest("dialog").close();
  }
  // An error summary's link moves the focus into its field, not only the view.
  const toField = event.target.closest(".error-summary a[href^='#']");
  const field = toField && document.getElementById(toField.getAttribute("href").slice(1));
  if (field) {
    event.preventDefault();
    field.scrollIntoView({ block: "center" });
    field.focus();
  }
});

// The panel's refresh would replace the Cancel link under an open dialog (and the focus it returns to).
document.addEventListener("htmx:beforeRequest", (event) => {
  const dialog = document.getElementById("cancel-dialog");
  if (dialog && dialog.open && event.detail.elt.id === "job-status-poller") event.preventDefault();
});

document.addEventListener("htmx:afterSettle", () => {
  showLocalTimes(document);
  announceStateChange();
});

document.addEventListener("DOMContentLoaded", () => {
  showLocalTimes(document);
  announceStateChange();
  const summary = document.querySelector("[data-focus-on-load]");
  if (summary) summary.focus();
});
