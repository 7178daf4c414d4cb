// A lab page: a copy button on each code block, and, while a step's run is going, the page reads itself again every
// few seconds so its state turns done without a reload (labs/templates/labs/lab_page.html).
(function () {
  "use strict";
  function addCopyButtons(root) {
    root.querySelectorAll(".lab-md pre").forEach(function (pre) {
      if (pre.querySelector("button.copy")) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy small-button";
      button.textContent = "Copy";
      button.addEventListener("click", function () {
        var text = pre.querySelector("code") ? pre.querySelector("code").textContent : pre.textContent;
        navigator.clipboard.writeText(text).then(function () { button.textContent = "Copied"; },
          function () { button.textContent = "Select and copy"; });
      });
      pre.appendChild(button);
    });
  }
  function refresh() {
    var panel = document.getElementById("lab-progress");
    var seconds = panel && Number(panel.dataset.refresh);
    if (!seconds) return;
    setTimeout(function () {
      fetch(window.location.pathname, { credentials: "same-origin" }).then(function (r) { return r.text(); })
        .then(function (html) {
          var fresh = new DOMParser().parseFromString(html, "text/html");
          document.querySelectorAll(".lab-step, #lab-progress").forEach(function (old) {
            var next = fresh.getElementById(old.id);
            if (next && !old.contains(document.activeElement)) old.replaceWith(next);
          });
          addCopyButtons(document);
          refresh();
        }, refresh);
    }, seconds * 1000);
  }
  // The lab session's countdown: "starts in 12 min", then "31 min left", then "ended".
  function countdown() {
    var box = document.getElementById("lab-session");
    var out = box && box.querySelector("[data-countdown]");
    if (!out) return;
    var now = Date.now(), starts = Date.parse(box.dataset.starts), ends = Date.parse(box.dataset.ends);
    var minutes = function (ms) { return Math.max(0, Math.ceil(ms / 60000)) + " min"; };
    out.textContent = now < starts ? "starts in " + minutes(starts - now)
      : now < ends ? minutes(ends - now) + " left" : "ended";
    if (now < ends) setTimeout(countdown, 15000);
  }
  document.addEventListener("DOMContentLoaded", function () { addCopyButtons(document); refresh(); countdown(); });
})();
