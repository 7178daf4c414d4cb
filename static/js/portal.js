// Long actions show that they are under way: a form marked data-busy="Launching…" disables its buttons on submit.
document.addEventListener("submit", (event) => {
  const form = event.target;
  const label = form.dataset && form.dataset.busy;
  if (!label) return;
  for (const button of form.querySelectorAll("button[type=submit], button:not([type])")) {
    button.dataset.label = button.textContent;
    button.disabled = true;
    button.textContent = label;
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
