// The file browser's buttons: chunked, resumable uploads with a progress bar; new folder, rename, delete.
// Every change goes through the files API (sessions/api.py), which checks each path on the server.
(function () {
  "use strict";
  const tools = document.getElementById("files-tools");
  const table = document.querySelector("table.files");
  const csrf = () => (document.cookie.match(/(?:^|; )csrftoken=([^;]+)/) || [])[1] || "";
  const say = (text, bad) => {
    const box = document.getElementById("files-message");
    if (box) { box.textContent = text; box.className = "small" + (bad ? " error" : ""); }
    else if (bad) { window.alert(text); }
  };

  async function call(url, options) {
    const response = await fetch(url, {
      credentials: "same-origin",
      ...options,
      headers: { "X-CSRFToken": csrf(), ...(options && options.headers) },
    });
    let body = {};
    try { body = await response.json(); } catch (e) { /* 204 */ }
    if (!response.ok) throw new Error(body.detail || ("The portal answered " + response.status + ". Try again."));
    return body;
  }
  const post = (url, data) => call(url, {
    method: "POST", body: JSON.stringify(data), headers: { "Content-Type": "application/json" },
  });

  async function uploadOne(api, folder, file, bar, label) {
    const chunk = Number(tools.dataset.chunk);
    const query = (extra) => new URLSearchParams({ path: folder, name: file.name, ...extra }).toString();
    // Resume where an earlier try stopped: the server says how much of the file arrived.
    let { received } = await call(api + "upload/?" + query({}));
    if (received > file.size) received = 0;
    do {
      const end = Math.min(received + chunk, file.size);
      const state = await call(api + "upload/?" + query({ size: file.size, offset: received }), {
        method: "PUT", body: file.slice(received, end), headers: { "Content-Type": "application/octet-stream" },
      });
      received = state.received;
      bar.value = file.size ? received / file.size : 1;
      label.textContent = file.name + ": " + Math.round(100 * bar.value) + " %";
    } while (received < file.size);
  }

  if (tools) {
    const api = tools.dataset.api, folder = tools.dataset.path;
    document.getElementById("upload-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      const files = Array.from(document.getElementById("upload-input").files);
      if (!files.length) return say("Choose one or more files first.", true);
      if (files.length > Number(tools.dataset.maxCount)) {
        return say("Upload at most " + tools.dataset.maxCount + " files at once; zip a large set first.", true);
      }
      const progress = document.getElementById("upload-progress");
      try {
        for (const file of files) {
          if (file.size > Number(tools.dataset.maxBytes)) throw new Error(file.name + " is larger than the upload limit.");
          const row = document.createElement("div");
          row.className = "upload-row";
          const label = document.createElement("span");
          const bar = document.createElement("progress");
          bar.max = 1; bar.value = 0;
          label.textContent = file.name;
          row.append(label, bar);
          progress.append(row);
          await uploadOne(api, folder, file, bar, label);
        }
        say("Uploaded. Refreshing the list…");
        window.location.reload();
      } catch (error) {
        say(error.message + " Pick the same file again to resume.", true);
      }
    });
    document.getElementById("mkdir-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        await post(api + "mkdir/", { path: folder, name: document.getElementById("mkdir-name").value });
        window.location.reload();
      } catch (error) { say(error.message, true); }
    });
  }

  if (table) {
    const api = table.dataset.api;
    table.addEventListener("click", async (event) => {
      const button = event.target.closest("button[data-action]");
      if (!button) return;
      const row = button.closest("tr");
      try {
        if (button.dataset.action === "rename") {
          const name = window.prompt("New name for " + row.dataset.name, row.dataset.name);
          if (!name || name === row.dataset.name) return;
          await post(api + "rename/", { path: row.dataset.path, name });
        } else {
          if (!window.confirm("Delete " + row.dataset.name + " (and everything in it, if a folder)?")) return;
          await post(api + "delete/", { path: row.dataset.path });
        }
        window.location.reload();
      } catch (error) { say(error.message, true); }
    });
  }
})();
