// Long actions show that they are under way: a form marked data-busy="Launching…" disables its buttons on submit.
document.addEventListener("submit", (event) => {
  const form = event.target;
  const label = form.dataset && form.dataset.busy;
  if (!label) return;
  for (const button of form.querySelectorAll("button[type=submit], button:not([type])")) {
    button.disabled = true;
    button.textContent = label;
  }
});
