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

  function refresh() {
    if (inFlight || document.hidden) {
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
        if (html !== lastHtml) {
          target.innerHTML = html;
          lastHtml = html;
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
