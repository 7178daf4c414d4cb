// The class's progress grid: each student's row arrives over the lab's socket (labs/live.py) when one of their runs
// moves or they answer; only that row's cells change, no reload.
(function () {
  "use strict";
  function badge(text) {
    var span = document.createElement("span");
    span.className = "badge flag-stuck";
    span.textContent = text;
    return span;
  }
  function applyRow(table, row) {
    var tr = table.querySelector('tr[data-student="' + row.student + '"]');
    if (!tr) return;
    tr.querySelector("td.done").textContent = row.done;
    var name = tr.querySelector("th");
    name.querySelectorAll(".badge").forEach(function (b) { b.remove(); });
    row.flags.forEach(function (f) { name.append(" ", badge(f)); });
    row.cells.forEach(function (cell) {
      var td = tr.querySelector('td[data-step="' + cell.step + '"]');
      if (!td) return;
      td.className = "cell state-" + cell.state;
      td.textContent = "";
      var label = document.createTextNode(cell.label);
      if (cell.job) {
        var a = document.createElement("a");
        a.href = cell.job;
        a.append(label);
        td.append(a);
      } else {
        td.append(label);
      }
      cell.flags.forEach(function (f) { td.append(" ", badge(f)); });
    });
    tr.dataset.updated = String(Date.now());
  }
  function connect(table, status, delay) {
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    var socket = new WebSocket(scheme + window.location.host + table.dataset.socket);
    socket.onopen = function () { status.textContent = "live"; delay = 1000; };
    socket.onmessage = function (event) {
      var message = JSON.parse(event.data);
      if (message.type === "row") applyRow(table, message);
    };
    socket.onclose = function () {
      status.textContent = "reconnecting…";
      setTimeout(function () { connect(table, status, Math.min(delay * 2, 30000)); }, delay);
    };
  }
  document.addEventListener("DOMContentLoaded", function () {
    var table = document.getElementById("lab-grid");
    if (table) connect(table, document.getElementById("grid-live"), 1000);
  });
})();
