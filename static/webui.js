/* OpenEnv web page behaviour: list rows, union variants, optional "none" boxes, Ctrl+Enter,
   per-tab session close. Everything else is htmx attributes in the templates. */
(function () {
  "use strict";

  function rowsOf(list) { return list.querySelector(":scope > [data-rows]"); }

  function refreshList(list) {
    var rows = rowsOf(list);
    if (!rows) { return; }
    var count = rows.children.length;
    var min = Number(list.dataset.min || 0);
    var max = list.dataset.max ? Number(list.dataset.max) : Infinity;
    var add = list.querySelector(":scope > [data-add-row]");
    if (add) { add.disabled = count >= max; }
    rows.querySelectorAll(":scope > li > [data-remove-row]").forEach(function (b) { b.disabled = count <= min; });
  }

  function nextIndex(list) {
    var next = 0;
    rowsOf(list).querySelectorAll(":scope > li > input[name$='.~row']").forEach(function (input) {
      var m = /\.(\d+)\.~row$/.exec(input.name);
      if (m) { next = Math.max(next, Number(m[1]) + 1); }
    });
    return Math.max(next, Number(list.dataset.next || 0));
  }

  function addRow(list) {
    var tpl = list.querySelector(":scope > template[data-row-template]");
    var rows = rowsOf(list);
    if (!tpl || !rows) { return; }
    var index = nextIndex(list);
    rows.insertAdjacentHTML("beforeend", tpl.innerHTML.split(tpl.dataset.placeholder).join(String(index)));
    list.dataset.next = String(index + 1);
    var row = rows.lastElementChild;
    if (window.htmx) { window.htmx.process(row); }
    row.querySelectorAll("[data-list]").forEach(refreshList);
    refreshList(list);
    var first = row.querySelector("input:not([type=hidden]), select, textarea");
    if (first) { first.focus(); }
  }

  function showVariant(select) {
    var chosen = select.value;
    select.parentElement.querySelectorAll(":scope > fieldset.variant").forEach(function (fs) {
      var on = fs.dataset.variant === chosen;
      fs.hidden = !on;
      fs.disabled = !on;
    });
  }

  function clearNone(target) {
    if (target.matches("[data-null-toggle]")) { return; }
    var box = target.closest(".field.optional");
    while (box) {
      var toggle = box.querySelector("[data-null-toggle]");
      if (toggle && toggle.checked) { toggle.checked = false; }
      box = box.parentElement ? box.parentElement.closest(".field.optional") : null;
    }
  }

  document.addEventListener("click", function (ev) {
    var add = ev.target.closest("[data-add-row]");
    if (add) { addRow(add.closest("[data-list]")); return; }
    var remove = ev.target.closest("[data-remove-row]");
    if (remove) {
      var list = remove.closest("[data-list]");
      remove.closest("li").remove();
      refreshList(list);
    }
  });

  document.addEventListener("change", function (ev) {
    if (ev.target.matches("[data-variant-select]")) { showVariant(ev.target); }
    clearNone(ev.target);
  });
  document.addEventListener("input", function (ev) { clearNone(ev.target); });

  /* Code editors (a field with "format": "code"): Tab indents, Shift+Tab dedents (the selected
     lines, or the caret's line); Escape and then Tab leaves the field as usual. */
  var INDENT = "    ";
  var tabLeaves = null;
  function indent(area, out) {
    var v = area.value, start = area.selectionStart, end = area.selectionEnd;
    if (!out && start === end) {
      area.setRangeText(INDENT, start, end, "end");
    } else {
      var from = v.lastIndexOf("\n", start - 1) + 1;
      var to = end > start && v.charAt(end - 1) === "\n" ? end - 1 : end;
      var removedFirst = 0;
      var lines = v.slice(from, to).split("\n").map(function (line, i) {
        if (!out) { return INDENT + line; }
        var n = 0;
        while (n < INDENT.length && line.charAt(n) === " ") { n += 1; }
        if (n === 0 && line.charAt(0) === "\t") { n = 1; }
        if (i === 0) { removedFirst = n; }
        return line.slice(n);
      });
      var text = lines.join("\n");
      area.setRangeText(text, from, to, start === end ? "preserve" : "select");
      if (start === end) {
        var caret = Math.max(from, start - removedFirst);
        area.setSelectionRange(caret, caret);
      }
    }
    area.dispatchEvent(new Event("input", { bubbles: true }));
  }
  document.addEventListener("keydown", function (ev) {
    var area = ev.target;
    if (area && area.matches && area.matches("textarea[data-code-editor]")) {
      if (ev.key === "Escape") { tabLeaves = area; return; }
      if (ev.key === "Tab" && !ev.ctrlKey && !ev.altKey && !ev.metaKey) {
        if (tabLeaves === area) { tabLeaves = null; return; }
        ev.preventDefault();
        indent(area, ev.shiftKey);
        return;
      }
      if (ev.key !== "Shift") { tabLeaves = null; }
    }
  });

  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "Enter" || !(ev.ctrlKey || ev.metaKey)) { return; }
    var inReset = document.activeElement && document.activeElement.closest("#reset-form");
    var form = document.getElementById(inReset ? "reset-form" : "step-form");
    if (form) { ev.preventDefault(); form.requestSubmit(); }
  });

  document.addEventListener("htmx:afterRequest", function (ev) {
    var elt = ev.detail.elt;
    var status = ev.detail.xhr ? ev.detail.xhr.status : 0;
    if (!elt || status < 200 || status >= 300) { return; }
    if (elt.id === "step-form" || elt.id === "reset-form") {
      elt.querySelectorAll(".field-errors").forEach(function (e) { e.remove(); });
      elt.querySelectorAll("[aria-invalid]").forEach(function (e) { e.removeAttribute("aria-invalid"); });
    }
    if (elt.classList && elt.classList.contains("history-row")) {
      document.querySelectorAll(".history-row.current").forEach(function (r) { r.classList.remove("current"); });
      elt.classList.add("current");
    }
  });

  /* One error contract for fragments (webui/fragment_errors.py): an answer marked
     X-Fragment-Error goes into the error slot of the part that asked (its [data-error-scope],
     form or panel), never over the request's target; the slot empties on that part's next success. */
  function errorScope(elt) {
    var scope = elt && elt.closest ? elt.closest("[data-error-scope], form, .panel, section") : null;
    return scope || document.getElementById("main") || document.body;
  }
  function errorSlot(elt, create) {
    var scope = errorScope(elt);
    var slot = scope.querySelector(":scope > .error-slot");
    if (!slot && create) {
      slot = document.createElement("div");
      slot.className = "error-slot";
      var head = scope.querySelector(":scope > .panel-head");
      if (head) { head.after(slot); } else { scope.prepend(slot); }
    }
    return slot;
  }
  document.addEventListener("htmx:beforeSwap", function (ev) {
    var xhr = ev.detail.xhr;
    if (!xhr || !xhr.getResponseHeader("X-Fragment-Error")) { return; }
    ev.detail.target = errorSlot(ev.detail.requestConfig ? ev.detail.requestConfig.elt : ev.detail.elt, true);
    ev.detail.swapOverride = "innerHTML";
    ev.detail.selectOverride = null;
    ev.detail.shouldSwap = true;
  });
  document.addEventListener("htmx:afterRequest", function (ev) {
    var status = ev.detail.xhr ? ev.detail.xhr.status : 0;
    if (status < 200 || status >= 300 || !ev.detail.elt) { return; }
    var slot = errorSlot(ev.detail.elt, false);
    if (slot) { slot.remove(); }
  });

  function init(root) {
    root.querySelectorAll("[data-list]").forEach(refreshList);
  }
  document.addEventListener("htmx:afterSettle", function (ev) { init(ev.detail.elt || document); });
  document.addEventListener("DOMContentLoaded", function () { init(document); });

  window.addEventListener("pagehide", function () {
    var page = document.getElementById("env-page");
    if (page && page.dataset.closeUrl && navigator.sendBeacon) { navigator.sendBeacon(page.dataset.closeUrl); }
  });
  window.addEventListener("pageshow", function (ev) {
    if (ev.persisted && document.getElementById("env-page")) { window.location.reload(); }
  });
}());
