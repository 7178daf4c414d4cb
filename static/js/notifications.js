// Browser notifications (Web Notifications API) while a portal page is open: the page asks the portal every
// 30 s for messages not yet shown, only once this browser has granted permission. Permission is asked only
// when the person presses "Allow browser notifications" on /notifications/, never on its own.
(function () {
  "use strict";
  var FEED = "/notifications/browser/";
  var supported = "Notification" in window;

  function csrf() {
    var headers = document.body.getAttribute("hx-headers");
    try { return JSON.parse(headers)["X-CSRFToken"]; } catch (e) { return ""; }
  }

  function show(item) {
    var note = new Notification(item.title, { body: item.body, tag: "gpulab-" + item.id });
    note.onclick = function () { window.focus(); if (item.url) { window.location.href = item.url; } };
  }

  function poll() {
    if (!supported || Notification.permission !== "granted" || document.hidden) { return; }
    fetch(FEED, { method: "POST", headers: { "X-CSRFToken": csrf() }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : { notifications: [] }; })
      .then(function (data) { data.notifications.forEach(show); })
      .catch(function () {});
  }

  function describe() {
    var state = document.getElementById("browser-state");
    var button = document.getElementById("allow-browser");
    if (!state) { return; }
    var now = supported ? Notification.permission : "unsupported";
    state.textContent = state.dataset[now] || "";
    button.hidden = now !== "default";
  }

  document.addEventListener("DOMContentLoaded", function () {
    describe();
    var button = document.getElementById("allow-browser");
    if (button) {
      button.addEventListener("click", function () {
        Notification.requestPermission().then(function () { describe(); poll(); });
      });
    }
    poll();
    setInterval(poll, 30000);
  });
})();
