// Job page and launch form: the cancel confirmation, state changes announced once, and the launch form's error
// summary focused (times in the viewer's zone: local_times.js). Every part has a working page without JavaScript
// underneath.
"use strict";

// The state panel's parts are swapped in when they change; a polite live region outside it says each new state once.
let announcedState = null;

function announceStateChange() {
  const badge = document.getElementById("job-state");
  const region = document.getElementById("job-announce");
  if (!badge || !region) return;
  if (announcedState !== null && badge.dataset.state !== announcedState) {
    const error = document.getElementById("job-error");
    region.textContent = `The job is now ${badge.textContent.trim()}.${error ? ` ${error.textContent.trim()}` : ""}`;
    // Cards that depend on the state (the run directory appears when the job starts) load themselves again.
    if (window.htmx) htmx.trigger(document.body, "job-state-changed");
    // Ended while open: what said "live" says what the page now holds (the charts: telemetry.js).
    if (badge.dataset.ended === "1") {
      const logMode = document.getElementById("log-mode");
      if (logMode) logMode.textContent = "as it ended";
      document.dispatchEvent(new CustomEvent("gpulab:job-ended"));
    }
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

// The state panel's poller (jobs/_status_poller.html): a plain fetch every 3 s, so an answer of 204 (nothing changed,
// the usual case) costs the page next to nothing; the parts that did change are swapped in by htmx, by id. No asking
// while the cancel dialog is open (a swap would replace the Cancel link it returns the focus to), none once the
// job has ended (the last answer's poller has no URL), and a failed request is asked again 3 s later. Once the session
// has ended, the whole page goes to sign-in and comes back here.
const STATUS_EVERY_MS = 3000;
const PANEL_PARTS = "#job-status,#job-progress,#job-timeline,#job-status-poller";

async function askStatus() {
  const poller = document.getElementById("job-status-poller");
  if (!poller || !poller.dataset.url) return;
  const dialog = document.getElementById("cancel-dialog");
  if (!(dialog && dialog.open)) {
    try {
      const headers = { "HX-Request": "true", "HX-Current-URL": window.location.href };
      const response = await fetch(poller.dataset.url, { credentials: "same-origin", headers });
      const signIn = response.headers.get("HX-Redirect"); // the session ended (portal/htmx_sign_in.py)
      if (signIn) return window.location.assign(signIn);
      if (response.status === 200) {
        htmx.swap(poller, await response.text(), { swapStyle: "none", ignoreTitle: true }, { selectOOB: PANEL_PARTS });
        for (const part of document.querySelectorAll(PANEL_PARTS)) window.showLocalTimes(part);
      }
    } catch (error) { /* offline for a moment: the next turn asks again */ }
  }
  setTimeout(askStatus, STATUS_EVERY_MS);
}

document.addEventListener("htmx:afterSettle", announceStateChange);

document.addEventListener("DOMContentLoaded", () => {
  if (document.getElementById("job-status-poller") && window.htmx) setTimeout(askStatus, STATUS_EVERY_MS);
  announceStateChange();
  const summary = document.querySelector("[data-focus-on-load]");
  if (summary) summary.focus();
});
