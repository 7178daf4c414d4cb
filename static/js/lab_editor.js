// The lab editor's step form (labs/templates/labs/step_form.html): picking another template shows its values at once,
// by pressing the form's own "Show this template's values" button (which saves nothing); without scripts that button
// stays for the instructor to press. The Markdown preview is htmx on the textarea.
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    if (event.target.id !== "id_template") return;
    var button = document.getElementById("show-template-values");
    if (button) button.click();
  });
  document.documentElement.classList.add("lab-editor-js");
})();
