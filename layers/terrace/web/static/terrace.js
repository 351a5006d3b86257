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

// The live run header (#run-live) is swapped every few seconds: which resource groups a reader opened or closed
// (<details id=...>) is carried over to the new copy.
(function () {
  "use strict";
  var opened = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (!event.detail.target || event.detail.target.id !== "run-live") return;
    opened = {};
    event.detail.target.querySelectorAll("details[id]").forEach(function (details) {
      opened[details.id] = details.open;
    });
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (!opened) return;
    var live = document.getElementById("run-live");
    if (live) {
      live.querySelectorAll("details[id]").forEach(function (details) {
        if (Object.prototype.hasOwnProperty.call(opened, details.id)) details.open = opened[details.id];
      });
    }
    opened = null;
  });
})();

// A risky action (deleting a variable, revoking a token, discarding a run) asks first: a form (or its submit
// button) with data-confirm submits only once the person confirms its question.
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var submitter = event.submitter;  // a button of a shared form may ask its own question (the run's Discard)
    var form = submitter && submitter.dataset && submitter.dataset.confirm ? submitter : event.target;
    if (form && form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  }, true);
})();

// The run page's one live region (#run-status-line, role=status) is never swapped: after each swap of the polled
// header (#run-live) it takes the header's status line, and only when it changed, so it is announced once.
(function () {
  "use strict";
  document.addEventListener("htmx:afterSettle", function () {
    var live = document.getElementById("run-live");
    var line = document.getElementById("run-status-line");
    if (!live || !line || !live.dataset.statusLine) return;
    if (line.textContent !== live.dataset.statusLine) line.textContent = live.dataset.statusLine;
  });
})();

// Workspace settings: the version field offers the versions of the tool chosen beside it (<datalist id=versions-*>).
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var tool = document.getElementById("iac_platform");
    var version = document.getElementById("terraform_version");
    if (!tool || !version || !version.getAttribute("list")) return;
    tool.addEventListener("change", function () {
      if (tool.value && document.getElementById("versions-" + tool.value)) {
        version.setAttribute("list", "versions-" + tool.value);
      }
    });
  });
})();
