/* OpenEnv Studio: arrow keys move through an episode's steps; the Play page mirrors the server's
   state machine (#play-status, webui/studio/play_state.py) onto its buttons and its address.
   Everything else is htmx attributes. */
(function () {
  "use strict";
  document.addEventListener("keydown", function (ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey || (ev.key !== "ArrowLeft" && ev.key !== "ArrowRight")) { return; }
    var active = document.activeElement;
    if (active && active.matches("input, textarea, select, [contenteditable]")) { return; }
    var link = document.getElementById(ev.key === "ArrowLeft" ? "prev-step" : "next-step");
    if (link && link.getAttribute("aria-disabled") !== "true") { ev.preventDefault(); link.click(); }
  });

  /* Which buttons each flag of #play-status enables. */
  var CONTROLS = {
    step: "#step-button, #mcp-panel button[type=submit], #web-view button",
    reset: "#reset-button",
    model: "#takeover-go",
    takeBack: "#take-back"
  };

  function applyPhase() {
    var status = document.getElementById("play-status");
    if (!status) { return; }
    var page = document.getElementById("env-page");
    if (page) { page.dataset.phase = status.dataset.phase; }
    Object.keys(CONTROLS).forEach(function (flag) {
      var on = status.dataset[flag] === "true";
      document.querySelectorAll(CONTROLS[flag]).forEach(function (button) {
        button.disabled = !on;
        button.classList.toggle("phase-off", !on);
      });
    });
    /* another tab (or the model) moved the session on: show its latest step, unless this tab
       is looking at an older one on purpose ("back to latest" is offered then) */
    var obs = document.getElementById("observation");
    if (obs && window.htmx && status.dataset.latestUrl && obs.dataset.shown !== status.dataset.latest &&
        !obs.querySelector("button.link") && !document.querySelector(".htmx-request")) {
      window.htmx.ajax("GET", status.dataset.latestUrl, { target: "#observation", swap: "outerHTML" });
    }
    if (page && page.dataset.playUrl && window.history.replaceState) {
      /* a reload or Back comes back to this session (or, once it is gone, offers its episode) */
      var query = "?session=" + encodeURIComponent(status.dataset.session);
      if (status.dataset.episode) { query += "&episode=" + encodeURIComponent(status.dataset.episode); }
      if (window.location.search !== query) {
        window.history.replaceState(window.history.state, "", page.dataset.playUrl + query);
      }
    }
  }

  /* A step while the state machine says no (Ctrl+Enter submits a form whatever its button says). */
  document.addEventListener("submit", function (ev) {
    var status = document.getElementById("play-status");
    var form = ev.target;
    if (!status || !form || !form.closest) { return; }
    var flag = form.id === "reset-form" ? "reset" : (form.id === "step-form" || form.closest("#mcp-panel")) ? "step" : null;
    if (flag && status.dataset[flag] !== "true") { ev.preventDefault(); ev.stopPropagation(); }
  }, true);

  /* Play without a session: the page's form opens one (a POST), at once when the studio asked for it. */
  document.addEventListener("DOMContentLoaded", function () {
    var start = document.getElementById("play-start-form");
    if (start && start.dataset.autostart === "true") { start.submit(); }
  });

  /* The episode list's multi-select: select all on the page, the count, a confirm before Delete. */
  document.addEventListener("change", function (ev) {
    var box = ev.target;
    var form = box && box.closest ? box.closest("#episode-selection") : null;
    if (!form) { return; }
    if (box.classList.contains("pick-all")) {
      form.querySelectorAll("input.pick").forEach(function (b) { b.checked = box.checked; });
    }
    var n = form.querySelectorAll("input.pick:checked").length;
    var label = document.getElementById("selected-count");
    if (label) { label.textContent = n ? n + " selected:" : "Select episodes:"; }
  });
  /* the list's own refresh waits while rows are selected (it would drop the selection) */
  document.addEventListener("htmx:beforeRequest", function (ev) {
    var list = ev.detail && ev.detail.elt;
    if (list && list.id === "episode-list" && list.querySelector("input.pick:checked")) { ev.preventDefault(); }
  });
  document.addEventListener("click", function (ev) {
    var button = ev.target && ev.target.closest ? ev.target.closest("button[data-confirm]") : null;
    if (button && !window.confirm(button.dataset.confirm)) { ev.preventDefault(); }
  });

  document.addEventListener("htmx:afterSettle", applyPhase);
  document.addEventListener("htmx:afterRequest", function () { window.setTimeout(applyPhase, 0); });
  document.addEventListener("DOMContentLoaded", applyPhase);
}());
