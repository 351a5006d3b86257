// Terrace's own script (the CSP allows scripts of this origin only, no inline code).
// A live log (<pre class="log" data-follow>) follows its tail: it opens scrolled to its end, and each chunk htmx
// appends keeps it there while the reader is at the end; a reader who scrolled up is left where they are.
(function () {
  "use strict";
  var SLACK = 24; // pixels from the end that still count as "at the end"

  function atEnd(log) {
    return log.scrollHeight - log.scrollTop - log.clientHeight <= SLACK;
  }

  function follow(log) {
    log.scrollTop = log.scrollHeight;
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("pre.log[data-follow]").forEach(function (log) {
      log.dataset.atEnd = "1";
      follow(log);
      log.addEventListener("scroll", function () {
        log.dataset.atEnd = atEnd(log) ? "1" : "";
      });
    });
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    var log = event.target && event.target.closest ? event.target.closest("pre.log[data-follow]") : null;
    if (!log) {
      document.querySelectorAll("pre.log[data-follow]").forEach(function (each) {
        if (each.dataset.atEnd) follow(each);
      });
      return;
    }
    if (log.dataset.atEnd) follow(log);
  });
})();
