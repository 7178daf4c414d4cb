// The profile's API token: shown masked; "Show" and "Copy" fetch it (POST, CSRF) so it is never in the page's HTML.
// Public keys of the student's cluster accounts are in the page (not secrets); their "Copy" buttons copy them.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  // The password field only when the student chose to log in with a password.
  const method = document.getElementById("id_auth_method");
  const secret = document.getElementById("id_secret");
  if (method && secret) {
    const row = secret.closest("p") || secret;
    const show = () => { row.hidden = method.value !== "password"; };
    method.addEventListener("change", show);
    show();
  }
  for (const box of document.querySelectorAll("[data-copy-box]")) {
    const source = box.querySelector("[data-copy-source]");
    const status = box.querySelector("[data-copy-status]");
    box.querySelector("[data-copy]").addEventListener("click", async () => {
      try {
        if (navigator.clipboard && window.isSecureContext) {
          await navigator.clipboard.writeText(source.textContent.trim());
        } else {
          const range = document.createRange(); // plain HTTP: copy the selected key
          range.selectNodeContents(source);
          getSelection().removeAllRanges();
          getSelection().addRange(range);
          if (!document.execCommand("copy")) throw new Error("copy it by hand: it is selected");
        }
        status.textContent = "Copied.";
      } catch (error) {
        status.textContent = `Could not copy the key: ${error.message}.`;
      }
    });
  }
});

document.addEventListener("DOMContentLoaded", () => {
  const box = document.querySelector("[data-token-box]");
  if (!box) return;
  const form = box.querySelector("#token-reveal");
  const code = box.querySelector("#api-token");
  const status = box.querySelector("[data-token-status]");
  const masked = code.textContent;
  let token = null;

  const fetchToken = async () => {
    if (token) return token;
    const response = await fetch(form.action, { method: "POST", body: new FormData(form), credentials: "same-origin" });
    if (!response.ok) throw new Error(`the portal answered ${response.status}`);
    token = (await response.json()).token;
    return token;
  };

  const copy = async (text) => {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    // Plain HTTP: select the shown token and copy the selection.
    const range = document.createRange();
    range.selectNodeContents(code);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    if (!document.execCommand("copy")) throw new Error("copy it by hand: it is selected");
  };

  box.addEventListener("click", async (event) => {
    const action = event.target.dataset && event.target.dataset.tokenAction;
    if (!action) return;
    try {
      if (action === "show") {
        const shown = event.target.textContent === "Hide";
        code.textContent = shown ? masked : await fetchToken();
        code.setAttribute("aria-label", shown ? "API token, hidden" : "API token");
        event.target.textContent = shown ? "Show" : "Hide";
        status.textContent = "";
      } else {
        const value = await fetchToken();
        if (!(navigator.clipboard && window.isSecureContext)) {
          code.textContent = value;
          box.querySelector("[data-token-action=show]").textContent = "Hide";
        }
        await copy(value);
        status.textContent = "Copied.";
      }
    } catch (error) {
      status.textContent = `Could not ${action} the token: ${error.message}.`;
    }
  });
});
