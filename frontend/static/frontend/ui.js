/* Keeps pages current without reloading them, and draws their charts. No dependencies but
 * Chart.js (vendored, for the charts).
 *
 * Refresh: every 2 s, each region marked [data-refresh] fetches its page again (the same URL
 * with ?partial=1, or its data-refresh-url) and is MORPHED into the new HTML: nodes that did
 * not change are left alone, so focus, text selection, scroll position, open <details> and
 * charts survive. Any page whose fragment sits in a [data-refresh] region gets this for free.
 * A region holding a control with an unsubmitted value (a filter being typed) is not touched.
 *
 * Charts: a <canvas data-chart="ID"> is drawn from the JSON in the element #ID (Django's
 * json_script: {kind, title, labels, series: [{label, data, color}]}); after a refresh the same
 * chart is updated in place, without animation: no flicker.
 *
 * Confirmations: an input[data-confirm-expected] keeps its form's submit button disabled
 * until the expected text is typed (the server checks it again).
 */
(function () {
  "use strict";

  var INTERVAL_MS = 2000;
  var indicator = document.getElementById("ui-updated");
  var regions = Array.prototype.slice.call(document.querySelectorAll("[data-refresh]"));
  var state = new Map(); // region -> {inFlight, lastHtml}

  // --- status, in UTC like every time on the pages ------------------------------------------
  function pad(n) {
    return (n < 10 ? "0" : "") + n;
  }

  function utcClock(date) {
    return pad(date.getUTCHours()) + ":" + pad(date.getUTCMinutes()) + ":" +
      pad(date.getUTCSeconds()) + " UTC";
  }

  function showStatus(date, failed) {
    if (!indicator) {
      return;
    }
    indicator.textContent = (failed ? "update failed " : "updated ") + utcClock(date) +
      (failed ? ", retrying" : "");
    indicator.setAttribute("datetime", date.toISOString());
    indicator.classList.toggle("stale", failed);
    indicator.classList.remove("paused");
  }

  // A refresh held back by a filter's unsubmitted text says so: the page is not live then.
  function showPaused() {
    if (!indicator || indicator.classList.contains("paused")) {
      return;
    }
    indicator.textContent = "paused while a filter holds unsubmitted text (press Enter to " +
      "apply it, or clear it); last updated " + utcClock(new Date(indicator.getAttribute("datetime")));
    indicator.classList.add("paused");
  }

  // --- morphing: update only what changed -------------------------------------------------
  function keyOf(node) {
    if (node.nodeType !== 1) {
      return null;
    }
    return node.id || node.getAttribute("data-key") || null;
  }

  function sameKind(a, b) {
    return a.nodeType === b.nodeType && a.nodeName === b.nodeName;
  }

  function isEditing(element) {
    return element === document.activeElement &&
      (element.tagName === "INPUT" || element.tagName === "TEXTAREA" || element.tagName === "SELECT");
  }

  // Chart.js sizes a canvas's bitmap with its width and height attributes, which the server's
  // HTML never has: removing them resets the bitmap to 300 x 150, and the chart draws blurred
  // and cut at the next refresh.
  function ownedByChartJs(live, name) {
    return live.tagName === "CANVAS" && (name === "width" || name === "height");
  }

  function morphAttributes(live, next) {
    var i;
    var name;
    for (i = live.attributes.length - 1; i >= 0; i--) {
      name = live.attributes[i].name;
      if (!next.hasAttribute(name) && name !== "open" && name !== "style" &&
          !ownedByChartJs(live, name)) {
        live.removeAttribute(name);
      }
    }
    for (i = 0; i < next.attributes.length; i++) {
      name = next.attributes[i].name;
      if (name === "open") {
        continue; // a <details> stays as the operator left it
      }
      if (name === "value" && isEditing(live)) {
        continue;
      }
      if (live.getAttribute(name) !== next.attributes[i].value) {
        live.setAttribute(name, next.attributes[i].value);
      }
    }
  }

  function morphNode(live, next) {
    if (live.nodeType === 3 || live.nodeType === 8) {
      if (live.nodeValue !== next.nodeValue) {
        live.nodeValue = next.nodeValue; // only a text that changed loses a selection in it
      }
      return;
    }
    morphAttributes(live, next);
    if (live.tagName === "CANVAS") {
      return; // Chart.js owns it; its data comes from the JSON beside it
    }
    if (live.tagName === "SCRIPT") {
      if (live.textContent !== next.textContent) {
        live.textContent = next.textContent;
      }
      return;
    }
    morphChildren(live, next);
  }

  var LOOKAHEAD = 12;

  function similar(a, b) {
    if (a.nodeType !== 1) {
      return a.nodeValue === b.nodeValue;
    }
    return a.className === b.className &&
      a.getAttribute("data-testid") === b.getAttribute("data-testid");
  }

  // The live node an unkeyed new node updates. A text node: the one at the cursor, if it is
  // one (never found further on: that would skip elements). An element: the cursor when it
  // looks the same (tag, class, test id); else one that does among the next few (the live
  // nodes before it are gone from the page); else the cursor if it is the same tag.
  function unkeyedMatch(cursor, wanted) {
    if (!cursor) {
      return null;
    }
    if (wanted.nodeType !== 1) {
      return !keyOf(cursor) && sameKind(cursor, wanted) ? cursor : null;
    }
    var here = !keyOf(cursor) && sameKind(cursor, wanted);
    if (here && similar(cursor, wanted)) {
      return cursor;
    }
    for (var node = cursor.nextSibling, steps = 1; node && steps < LOOKAHEAD;
      node = node.nextSibling, steps++) {
      if (!keyOf(node) && sameKind(node, wanted) && similar(node, wanted)) {
        return node;
      }
    }
    return here ? cursor : null;
  }

  // Update `live`'s children to `next`'s. Keyed nodes (an id, or data-key) are found wherever
  // they are; unkeyed ones by position, looking a little ahead, so a node added or gone does
  // not shift everything after it. A matched node is updated in place, never re-created: the
  // unkeyed live nodes skipped over are the stale ones, and go. (Moving a node would blur what
  // has focus in it: only a keyed node that changed places moves.)
  function morphChildren(live, next) {
    var keyed = {};
    var child;
    for (child = live.firstChild; child; child = child.nextSibling) {
      var key = keyOf(child);
      if (key) {
        keyed[key] = child;
      }
    }
    var cursor = live.firstChild;
    var incoming = Array.prototype.slice.call(next.childNodes);
    for (var i = 0; i < incoming.length; i++) {
      var wanted = incoming[i];
      var wantedKey = keyOf(wanted);
      var match = null;
      if (wantedKey) {
        if (keyed[wantedKey] && sameKind(keyed[wantedKey], wanted)) {
          match = keyed[wantedKey];
          delete keyed[wantedKey];
        }
      } else {
        match = unkeyedMatch(cursor, wanted);
        while (match && cursor !== match) {
          var skipped = cursor;
          cursor = cursor.nextSibling;
          if (!keyOf(skipped)) {
            live.removeChild(skipped);
          }
        }
      }
      if (match) {
        if (match === cursor) {
          cursor = cursor.nextSibling;
        } else {
          live.insertBefore(match, cursor);
        }
        morphNode(match, wanted);
      } else {
        live.insertBefore(document.importNode(wanted, true), cursor);
      }
    }
    while (cursor) {
      var gone = cursor;
      cursor = cursor.nextSibling;
      if (!keyOf(gone) || keyed[keyOf(gone)] === gone) {
        live.removeChild(gone);
      }
    }
    // Keyed nodes skipped over and not wanted any more.
    Object.keys(keyed).forEach(function (stale) {
      if (keyed[stale].parentNode === live) {
        live.removeChild(keyed[stale]);
      }
    });
  }

  function morphInto(region, html) {
    var next = document.createElement(region.tagName);
    next.innerHTML = html;
    morphChildren(region, next);
  }

  // --- refreshing ---------------------------------------------------------------------------
  function regionUrl(region) {
    var url = new URL(region.getAttribute("data-refresh-url") || window.location.href,
      window.location.href);
    url.searchParams.set("partial", "1");
    url.hash = "";
    return url.toString();
  }

  // A filter being edited keeps what was typed: while any control of the region holds an
  // unsubmitted value, the region is not refreshed.
  function dirty(region) {
    var controls = region.querySelectorAll("input, select, textarea");
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

  function refresh(region) {
    var own = state.get(region);
    if (own.inFlight || document.hidden) {
      return;
    }
    if (dirty(region)) {
      showPaused();
      return;
    }
    own.inFlight = true;
    fetch(regionUrl(region), {
      credentials: "same-origin",
      cache: "no-store",
      headers: { "Accept": "text/html", "X-Requested-With": "fetch" }
    })
      .then(function (response) {
        if (response.status === 401) {
          window.location.reload(); // the session ended: a full load goes to the login page
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
        if (html !== own.lastHtml && !dirty(region)) {
          morphInto(region, html);
          own.lastHtml = html;
          drawCharts(region);
          wireConfirmations(region);
        }
        showStatus(new Date(), false);
      })
      .catch(function () {
        showStatus(new Date(), true);
      })
      .then(function () {
        own.inFlight = false;
      });
  }

  function refreshAll() {
    regions.forEach(refresh);
  }

  // "/" focuses the search box, as on GitHub and Grafana (never while typing in a field).
  function searchShortcut() {
    var search = document.getElementById("global-search");
    if (!search) {
      return;
    }
    document.addEventListener("keydown", function (event) {
      var target = event.target;
      var typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" ||
        target.tagName === "SELECT" || target.isContentEditable);
      if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
        event.preventDefault();
        search.focus();
      }
    });
  }

  // --- charts -----------------------------------------------------------------------------
  // The scheme's colours (ui.css's --chart-grid and --chart-ticks, dark under
  // prefers-color-scheme: dark): a canvas cannot use var(), so they are read once here.
  function cssColour(name, fallback) {
    var value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }
  var GRID = cssColour("--chart-grid", "#d9dee4");
  var TICKS = cssColour("--chart-ticks", "#4b5563"); // 7.6:1 on white, 9.9:1 on dark cards

  function chartConfig(spec) {
    var sparkline = spec.kind === "sparkline";
    var bars = spec.kind === "bars";
    var datasets = spec.series.map(function (s) {
      return {
        label: s.label,
        data: s.data.slice(),
        borderColor: s.color,
        backgroundColor: bars ? s.color : s.color + "22",
        borderWidth: sparkline ? 1.5 : 2,
        pointRadius: 0,
        fill: sparkline,
        tension: 0,
        stepped: bars ? false : "after"
      };
    });
    return {
      type: bars ? "bar" : "line",
      data: { labels: spec.labels.slice(), datasets: datasets },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        interaction: { mode: "index", intersect: false },
        plugins: {
          legend: { display: !sparkline, labels: { color: TICKS } },
          tooltip: { enabled: true }
        },
        scales: {
          x: { display: !sparkline, ticks: { color: TICKS, maxTicksLimit: 12 }, grid: { color: GRID } },
          y: {
            display: !sparkline,
            beginAtZero: true,
            ticks: { color: TICKS, precision: 0 },
            grid: { color: GRID }
          }
        }
      }
    };
  }

  function drawCharts(root) {
    if (typeof window.Chart === "undefined") {
      return;
    }
    var canvases = (root || document).querySelectorAll("canvas[data-chart]");
    for (var i = 0; i < canvases.length; i++) {
      var canvas = canvases[i];
      var source = document.getElementById(canvas.getAttribute("data-chart"));
      if (!source) {
        continue;
      }
      var text = source.textContent;
      if (canvas.getAttribute("data-drawn") === text) {
        continue; // nothing new to draw
      }
      var spec;
      try {
        spec = JSON.parse(text);
      } catch (e) {
        continue;
      }
      var chart = window.Chart.getChart(canvas);
      if (chart) {
        // The same chart, its data replaced in place: no new canvas, no animation.
        chart.data.labels = spec.labels.slice();
        spec.series.forEach(function (s, index) {
          if (chart.data.datasets[index]) {
            chart.data.datasets[index].data = s.data.slice();
            chart.data.datasets[index].label = s.label;
          }
        });
        chart.update("none");
      } else {
        new window.Chart(canvas, chartConfig(spec));
      }
      canvas.setAttribute("data-drawn", text);
    }
  }

  // --- confirmations ------------------------------------------------------------------------
  function wireConfirmations(root) {
    var inputs = (root || document).querySelectorAll("input[data-confirm-expected]");
    for (var i = 0; i < inputs.length; i++) {
      var input = inputs[i];
      if (input.getAttribute("data-wired")) {
        continue;
      }
      input.setAttribute("data-wired", "1");
      var button = input.form && input.form.querySelector("button[type=submit]");
      if (!button) {
        continue;
      }
      var check = (function (field, submit) {
        return function () {
          var ok = field.value === field.getAttribute("data-confirm-expected");
          submit.disabled = !ok;
          submit.setAttribute("aria-disabled", ok ? "false" : "true");
        };
      })(input, button);
      input.addEventListener("input", check);
      check();
    }
  }

  // --- copy buttons (a new token's HMAC and id) ----------------------------------------------
  function wireCopyButtons(root) {
    var buttons = (root || document).querySelectorAll("button[data-copy]");
    Array.prototype.forEach.call(buttons, function (button) {
      if (button.getAttribute("data-wired")) {
        return;
      }
      button.setAttribute("data-wired", "1");
      var label = button.textContent;
      button.addEventListener("click", function () {
        var source = document.getElementById(button.getAttribute("data-copy"));
        var text = source ? source.textContent.trim() : "";
        var done = function (ok) {
          button.textContent = ok ? "Copied" : "Copy failed: select and copy";
          button.setAttribute("data-copied", ok ? "1" : "0");
          window.setTimeout(function () { button.textContent = label; }, 2000);
        };
        if (navigator.clipboard && navigator.clipboard.writeText) {
          navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(false); });
        } else {
          done(false);
        }
      });
    });
  }

  // --- an audit report: progress while Spark makes it, then the report itself ----------------
  function loadReport() {
    var box = document.querySelector("[data-report-src]");
    if (!box) {
      return;
    }
    var src = box.getAttribute("data-report-src");
    var elapsed = box.querySelector("[data-report-elapsed]");
    var began = Date.now();
    var tick = window.setInterval(function () {
      elapsed.textContent = Math.round((Date.now() - began) / 1000) + " s";
    }, 1000);
    fetch(src + (src.indexOf("?") < 0 ? "?" : "&") + "partial=1", { credentials: "same-origin" })
      .then(function (response) {
        if (response.ok) {
          window.location.replace(src); // made now: served from the kept file at once
          return null;
        }
        return response.text().then(function (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          var said = doc.querySelector("[data-testid=report-problem]");
          throw new Error(said ? said.textContent : "The report could not be made (HTTP " + response.status + ").");
        });
      })
      .catch(function (error) {
        window.clearInterval(tick);
        var problem = box.querySelector("[data-report-problem]");
        problem.textContent = error.message || "The report could not be fetched.";
        problem.hidden = false;
        var bar = box.querySelector("progress");
        if (bar) { bar.hidden = true; }
      });
  }

  // --- start --------------------------------------------------------------------------------
  function start() {
    if (indicator && indicator.getAttribute("datetime")) {
      var rendered = new Date(indicator.getAttribute("datetime"));
      if (!isNaN(rendered.getTime())) {
        showStatus(rendered, false);
      }
    }
    drawCharts(document);
    searchShortcut();
    wireConfirmations(document);
    wireCopyButtons(document);
    loadReport();
    if (!regions.length) {
      return;
    }
    regions.forEach(function (region) {
      state.set(region, { inFlight: false, lastHtml: null });
    });
    window.setInterval(refreshAll, INTERVAL_MS);
    document.addEventListener("visibilitychange", function () {
      if (!document.hidden) {
        refreshAll();
      }
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
