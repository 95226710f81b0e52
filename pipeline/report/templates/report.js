// Method tabs and sortable tables; without script every panel shows and tables keep their order.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  document.querySelectorAll(".tabs").forEach(function (tabs) {
    var buttons = tabs.querySelectorAll("button[data-panel]");
    buttons.forEach(function (button) {
      button.addEventListener("click", function () {
        buttons.forEach(function (b) {
          var on = b === button;
          b.classList.toggle("active", on);
          b.setAttribute("aria-selected", on ? "true" : "false");
          var panel = document.getElementById(b.dataset.panel);
          if (panel) panel.classList.toggle("active", on);
        });
      });
    });
  });

  // A cell sorts by its data-v, else by its text; empty cells go last either way. Only a numeric
  // column (its header's class "num") compares numbers: elsewhere "1e3" or "-0" is a name, not 1000 or 0.
  function key(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) return null;
    var value = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent.trim();
    if (value === "") return null;
    var n = numeric ? Number(value) : NaN;
    return isNaN(n) ? value.toLowerCase() : n;
  }

  function compare(a, b) {
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b));
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    var headers = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(headers, function (th, index) {
      th.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        var numeric = th.classList.contains("num");
        Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r, s) {
          var a = key(r, index, numeric), b = key(s, index, numeric);
          if (a === null || b === null) return a === b ? 0 : (a === null ? 1 : -1);
          return ascending ? compare(a, b) : compare(b, a);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
