// The top navigation folds behind a Menu button on a phone (static/css/portal.css hides it only where scripts run).
document.documentElement.classList.add("js");
document.addEventListener("click", (event) => {
  const toggle = event.target.closest(".menu-toggle");
  if (!toggle) return;
  const open = toggle.closest(".topbar").classList.toggle("open");
  toggle.setAttribute("aria-expanded", open ? "true" : "false");
});

// Long actions show that they are under way: a form marked data-busy="Launching…" disables its buttons on submit.
// A disabled button is left out of what the form sends, so the one pressed is carried in a hidden field: a form with
// two actions ("Check" beside "Launch sweep") must still say which one was asked for.
document.addEventListener("submit", (event) => {
  const form = event.target;
  const label = form.dataset && form.dataset.busy;
  if (!label) return;
  const pressed = event.submitter;
  if (pressed && pressed.name) {
    const carried = document.createElement("input");
    Object.assign(carried, { type: "hidden", name: pressed.name, value: pressed.value });
    form.append(carried);
  }
  for (const button of form.querySelectorAll("button[type=submit], button:not([type])")) {
    button.dataset.label = button.textContent;
    button.disabled = true;
    if (!pressed || button === pressed) button.textContent = label;
  }
});

// Try it: a form marked data-stream-to="#answer" posts with fetch and appends the streamed answer as it arrives.
document.addEventListener("submit", async (event) => {
  const form = event.target;
  const target = form.dataset && form.dataset.streamTo && document.querySelector(form.dataset.streamTo);
  if (!target) return;
  event.preventDefault();
  target.textContent = "";
  target.classList.remove("error");
  const buttons = form.querySelectorAll("button");
  try {
    const response = await fetch(form.action, { method: "POST", body: new FormData(form), credentials: "same-origin" });
    if (!response.ok) target.classList.add("error");
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      target.textContent += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    target.classList.add("error");
    target.textContent += `\nThe request failed: ${error}`;
  } finally {
    target.dataset.done = "1";
    for (const button of buttons) {
      button.disabled = false;
      button.textContent = button.dataset.label || "Send";
    }
  }
});

// Countdowns (a lab session's end or start): an element marked data-countdown-to="<ISO time>" shows the time left,
// every second, from the browser's clock; at zero it shows data-countdown-done.
function countdownText(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  const pad = (n) => String(n).padStart(2, "0");
  return h ? `${h} h ${pad(m)} min ${pad(sec)} s` : `${m} min ${pad(sec)} s`;
}
function tickCountdowns() {
  for (const el of document.querySelectorAll("[data-countdown-to]")) {
    const left = Date.parse(el.dataset.countdownTo) - Date.now();
    if (Number.isNaN(left)) continue;
    el.textContent = left > 0 ? `${el.dataset.countdownPrefix || ""}${countdownText(left)}${el.dataset.countdownPrefix ? "" : " left"}` : el.dataset.countdownDone || "";
  }
}
document.addEventListener("DOMContentLoaded", () => {
  if (!document.querySelector("[data-countdown-to]")) return;
  tickCountdowns();
  setInterval(tickCountdowns, 1000);
});
