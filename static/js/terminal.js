// The job terminal: xterm.js relayed over sessions/terminal.py's socket (wire format in its docstring).
(function () {
  "use strict";
  const box = document.getElementById("terminal");
  const status = document.getElementById("terminal-status");
  if (!box) return;

  function say(text, state) {
    status.textContent = text;
    status.dataset.state = state;
    status.className = state === "closed" ? "notice" : "small";
  }

  const term = new Terminal({ cursorBlink: true, fontSize: 14, lineHeight: 1.2, scrollback: 5000, convertEol: false });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(box);
  fit.fit();
  window.gpulabTerminal = term; // for tests and the benchmark: read what the screen shows

  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  let url = `${scheme}${location.host}${box.dataset.socket}?cols=${term.cols}&rows=${term.rows}`;
  if (box.dataset.target) url += `&target=${encodeURIComponent(box.dataset.target)}`; // a pod's container
  const socket = new WebSocket(url);
  socket.binaryType = "arraybuffer";
  let closedWhy = "";

  function send(message) {
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  }

  socket.onopen = () => { say("Connected.", "open"); term.focus(); };
  socket.onmessage = (event) => {
    if (typeof event.data !== "string") { term.write(new Uint8Array(event.data)); return; }
    const message = JSON.parse(event.data);
    if (message.closed) closedWhy = message.closed;
    if (message.notice) { status.textContent = message.notice; status.className = "notice"; }
  };
  socket.onclose = (event) => {
    const why = closedWhy || (event.code === 4404 ? "There is no such job." :
      event.code === 4403 ? "You may not open a terminal in this job." :
      "The connection to the terminal was lost. Reload the page to open a new one.");
    say(why, "closed");
    term.options.disableStdin = true;
    term.options.cursorBlink = false;
  };

  const keys = new TextEncoder();
  term.onData((data) => { if (socket.readyState === WebSocket.OPEN) socket.send(keys.encode(data)); }); // binary frame
  term.onResize(({ cols, rows }) => send({ resize: [cols, rows] }));
  new ResizeObserver(() => fit.fit()).observe(box);

  // Ctrl+Shift+C copies the selection (Ctrl+C stays the shell's interrupt); pasting goes through the browser.
  term.attachCustomKeyEventHandler((event) => {
    if (event.type === "keydown" && event.ctrlKey && event.shiftKey && event.code === "KeyC" && term.hasSelection()) {
      navigator.clipboard.writeText(term.getSelection()).catch(() => {});
      return false;
    }
    return !(event.type === "keydown" && event.ctrlKey && event.shiftKey && event.code === "KeyV");
  });
})();
