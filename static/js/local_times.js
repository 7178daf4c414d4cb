// Every page: <time datetime="…Z" data-local-time="datetime|time|short"> (jobs/templatetags/job_time.py) shown in
// the viewer's own zone, on load and after each htmx swap. The server's text, in the portal's zone and named, stays
// where scripts do not run. Pages that swap parts in by hand call window.showLocalTimes(part).
"use strict";

(function () {
  const FORMATS = {
    datetime: new Intl.DateTimeFormat(undefined, {
      year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit",
      timeZoneName: "short",
    }),
    time: new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" }),
    short: new Intl.DateTimeFormat(undefined, {
      year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
    }),
  };
  const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

  function showLocalTimes(root) {
    for (const element of root.querySelectorAll("time[data-local-time]")) {
      const format = FORMATS[element.dataset.localTime];
      const instant = new Date(element.dateTime || NaN);  // no datetime: new Date(null) would say 1970
      if (!format || Number.isNaN(instant.getTime())) continue;
      // Only where the words change: a neighbour's swap must not touch (and re-render) times already shown.
      const text = format.format(instant);
      if (element.textContent !== text) element.textContent = text;
      if (element.title !== `Your time zone: ${ZONE}`) element.title = `Your time zone: ${ZONE}`;
    }
  }

  window.showLocalTimes = showLocalTimes;
  document.addEventListener("htmx:afterSettle", (event) => {
    showLocalTimes(event.target instanceof Element ? event.target : document);
  });
  document.addEventListener("DOMContentLoaded", () => showLocalTimes(document));
})();
