/* Keeps a page current without reloading it: every 2 s, fetch the page's fragment
 * (the same URL with ?partial=1) and swap it into [data-refresh]. No dependencies. */
(function () {
  "use strict";

  var INTERVAL_MS = 2000;
  var target = document.querySelector("[data-refresh]");
  var indicator = document.getElementById("ui-updated");
  if (!target) {
    return;
  }

  var inFlight = false;
  var lastHtml = null;

  function pad(n) {
    return (n < 10 ? "0" : "") + n;
  }

  function clock(date) {
    return pad(date.getHours()) + ":" + pad(date.getMinutes()) + ":" + pad(date.getSeconds());
  }

  function showStatus(date, failed) {
    if (!indicator) {
      return;
    }
    indicator.textContent = (failed ? "update failed " : "updated ") + clock(date) +
      (failed ? ", retrying" : "");
    indicator.setAttribute("datetime", date.toISOString());
    indicator.classList.toggle("stale", failed);
  }

  function partialUrl() {
    var url = new URL(window.location.href);
    url.searchParams.set("partial", "1");
    url.hash = "";
    return url.toString();
  }

  // A filter being edited inside the fragment keeps what was typed: while any control holds
  // an unsubmitted value the fragment is not swapped, and a focused control keeps its focus.
  function dirty() {
    var controls = target.querySelectorAll("input, select, textarea");
    for (var i = 0; i < controls.length; i++) {
      var control = controls[i];
      if (control.tagName === "SELECT") {
        var initial = 0; // with no `selected` option a select shows its first one
        for (var j = 0; j < control.options.length; j++) {
          if (control.options[j].defaultSelected) {
            initial = j;
            break;
          }
        }
        if (control.selectedIndex !== initial) {
          return true;
        }
      } else if (control.type === "checkbox" || control.type === "radio") {
        if (control.checked !== control.defaultChecked) {
          return true;
        }
      } else if (control.type !== "hidden" && control.value !== control.defaultValue) {
        return true;
      }
    }
    return false;
  }

  function focusedId() {
    var active = document.activeElement;
    return active && active.id && target.contains(active) ? active.id : null;
  }

  function refresh() {
    if (inFlight || document.hidden || dirty()) {
      return;
    }
    inFlight = true;
    fetch(partialUrl(), {
      credentials: "same-origin",
      cache: "no-store",
      headers: { "Accept": "text/html", "X-Requested-With": "fetch" }
    })
      .then(function (response) {
        if (response.status === 401) {
          // The session ended: a full load takes us to the login page.
          window.location.reload();
          return null;
        }
        if (!response.headers.get("X-UI-Fragment")) {
          throw new Error("unexpected response " + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        if (html === null) {
          return;
        }
        if (html !== lastHtml && !dirty()) {
          var focused = focusedId();
          target.innerHTML = html;
          lastHtml = html;
          var again = focused && document.getElementById(focused);
          if (again) {
            again.focus();
          }
        }
        showStatus(new Date(), false);
      })
      .catch(function () {
        showStatus(new Date(), true);
      })
      .then(function () {
        inFlight = false;
      });
  }

  // Show the server's render time in the browser's clock, like later updates.
  if (indicator && indicator.getAttribute("datetime")) {
    var rendered = new Date(indicator.getAttribute("datetime"));
    if (!isNaN(rendered.getTime())) {
      showStatus(rendered, false);
    }
  }
  window.setInterval(refresh, INTERVAL_MS);
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) {
      refresh();
    }
  });
})();
