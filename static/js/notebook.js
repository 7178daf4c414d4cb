// The JupyterLab session page: say what is happening while the session comes up, with the time it has taken, and
// load JupyterLab into the frame once its server answers (the phases: sessions/notebook_ready.py). No reload.
(function () {
  "use strict";
  // The status card (htmx, every 10 s) says when the session has ended: the charts then say "recorded" instead of
  // "live" (telemetry.js), for whoever has the page open.
  let endedSeen = false;
  document.body.addEventListener("htmx:afterSwap", () => {
    if (endedSeen || !document.getElementById("session-ended")) return;
    endedSeen = true;
    document.dispatchEvent(new CustomEvent("gpulab:job-ended"));
    if (box) end();
  });

  const box = document.getElementById("notebook-attach");
  if (!box) return;
  const line = document.getElementById("notebook-waiting");
  const phaseText = document.getElementById("notebook-phase");
  const elapsedText = document.getElementById("notebook-elapsed");
  const frame = document.getElementById("notebook-frame");
  const ASK_EVERY_MS = 2000;
  const KEEP_ASKING = new Set(["waiting", "starting", "unreachable"]);
  let elapsed = null; // seconds since the phase began, as the server counted them, ticked here between answers
  let tick = null;
  let ended = false;

  // The status card above says how the session ended; this line and the sign-in note then have nothing left to
  // say, and the frame, whose server is gone with the allocation, would only show JupyterLab's connection errors.
  function end() {
    ended = true;
    clearInterval(tick);
    line.dataset.phase = "ended";
    line.hidden = true;
    document.getElementById("notebook-signin").hidden = true;
    frame.hidden = true;
    frame.removeAttribute("src");
  }

  function clock(seconds) {
    const m = Math.floor(seconds / 60), s = seconds % 60;
    return `${m}:${String(s).padStart(2, "0")}`;
  }

  function show(answer) {
    line.dataset.phase = answer.phase;
    phaseText.textContent = answer.message;
    line.classList.toggle("notice", answer.phase === "refused" || answer.phase === "unreachable");
    elapsed = KEEP_ASKING.has(answer.phase) ? answer.elapsed_s : null;
    elapsedText.textContent = elapsed === null ? "" : clock(elapsed);
  }

  function attach(answer) {
    clearInterval(tick);
    line.dataset.phase = "ready";
    phaseText.textContent = answer.message;
    elapsedText.textContent = "";
    line.querySelector(".spinner")?.remove();
    frame.src = answer.lab_url;
    frame.hidden = false;
    document.body.dispatchEvent(new Event("notebook-ready")); // the status card shows the clock and the new-tab button
  }

  async function ask() {
    if (ended) return;
    let answer;
    try {
      const response = await fetch(box.dataset.readyUrl, { headers: { Accept: "application/json" }, cache: "no-store" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      answer = await response.json();
    } catch (error) {
      show({ phase: "unreachable", message: "The portal is not answering; still trying…", elapsed_s: elapsed ?? 0 });
      setTimeout(ask, ASK_EVERY_MS * 2);
      return;
    }
    if (answer.phase === "ready") { attach(answer); return; }
    if (answer.phase === "ended") { end(); return; }
    show(answer);
    if (KEEP_ASKING.has(answer.phase)) setTimeout(ask, ASK_EVERY_MS);
    else { clearInterval(tick); line.querySelector(".spinner")?.remove(); }
  }

  tick = setInterval(() => {
    if (elapsed === null) return;
    elapsed += 1;
    elapsedText.textContent = clock(elapsed);
  }, 1000);
  ask();
})();
