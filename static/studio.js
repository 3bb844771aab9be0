/* OpenEnv Studio: arrow keys move through an episode's steps. Everything else is htmx attributes. */
(function () {
  "use strict";
  document.addEventListener("keydown", function (ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey || (ev.key !== "ArrowLeft" && ev.key !== "ArrowRight")) { return; }
    var active = document.activeElement;
    if (active && active.matches("input, textarea, select, [contenteditable]")) { return; }
    var link = document.getElementById(ev.key === "ArrowLeft" ? "prev-step" : "next-step");
    if (link && link.getAttribute("aria-disabled") !== "true") { ev.preventDefault(); link.click(); }
  });
}());
