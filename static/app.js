// Keyboard shortcuts for the play page. Each key clicks a real link of the page, so what a key
// does is exactly what the link does (an HTMX swap, or a plain navigation without htmx).
(function () {
  "use strict";
  var KEYS = { ArrowLeft: "step-prev", ArrowRight: "step-next", Home: "step-first", End: "step-last", " ": "play-toggle", n: "step-event" };

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    var target = event.target;
    // Keys typed into a field, or pressed on a link or button, keep their usual meaning.
    if (target.closest && target.closest("input, select, textarea, button, [contenteditable], summary")) return;
    if (event.key === " " && target.closest && target.closest("a")) return;
    var id = KEYS[event.key];
    var link = id && document.getElementById(id);
    if (!link) return;
    event.preventDefault();
    link.click();
  });
})();

// hx-boost turns the page's HTML links into htmx requests, but not the SVG links of the well
// (htmx boosts HTMLAnchorElement only): a click on one (or Enter on it) goes through htmx the
// same way, with the link's target and swap. A modified click still opens a new tab.
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    if (event.defaultPrevented || event.button !== 0 || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    var link = event.target.closest && event.target.closest("svg a[href]");
    var boosted = link && link.closest("[hx-boost]");
    if (!boosted || boosted.getAttribute("hx-boost") !== "true" || !window.htmx) return;
    event.preventDefault();
    window.htmx.ajax("GET", link.getAttribute("href"), { source: link });
  });
})();

// The play page's links to itself are only a query (`?call=5`), resolved against the page's
// address, whose path holds the settings (webapp/web/state.py). Once htmx shows another address
// (a step, a form sent, the back button), a <base> the server wrote for the first one would
// resolve them against a page that is no longer shown: it follows the address.
(function () {
  "use strict";
  function follow() {
    var base = document.querySelector("base");
    if (base) base.setAttribute("href", window.location.href);
  }
  ["htmx:pushedIntoHistory", "htmx:replacedInHistory", "htmx:historyRestore"].forEach(function (name) {
    document.addEventListener(name, follow);
  });
  window.addEventListener("popstate", follow);
})();
