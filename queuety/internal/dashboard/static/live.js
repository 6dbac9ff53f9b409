// Live refresh for the dashboard (GPL-2.0-or-later).
//
// Every few seconds, while the tab is visible, the page is fetched again
// and <main> is replaced by the new one: the server renders everything,
// this script only swaps it in. It waits while the operator is busy (a
// field has the focus or a box is ticked), stops while the tab is hidden
// (document.visibilityState) and when the session has ended, and can be
// paused from the header (remembered in localStorage).
(function () {
  "use strict";
  var main = document.querySelector("main[data-live]");
  var toggle = document.getElementById("live");
  if (!main || !toggle) return;
  var every = (Number(main.getAttribute("data-live")) || 5) * 1000;
  var state = { fetches: 0, timer: null, paused: localStorage.getItem("queuety-live") === "off", ended: false };
  window.queuetyLive = state;

  // The flash message belongs to the action that led here: not repeated.
  function target() {
    var u = new URL(location.href);
    u.searchParams.delete("flash");
    u.searchParams.delete("flash_sig");
    return u.toString();
  }

  function busy() {
    var a = document.activeElement;
    if (a && main.contains(a) && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName)) return true;
    return main.querySelector("input[type=checkbox]:checked") !== null;
  }

  function show() {
    toggle.textContent = state.ended ? "live: logged out" : state.paused ? "paused" : "live";
    toggle.className = state.paused || state.ended ? "live off" : "live on";
    toggle.setAttribute("aria-pressed", state.paused ? "false" : "true");
  }

  function schedule() {
    if (state.timer || state.paused || state.ended || document.visibilityState !== "visible") return;
    state.timer = setTimeout(refresh, every);
  }

  function stop() {
    clearTimeout(state.timer);
    state.timer = null;
  }

  function refresh() {
    state.timer = null;
    if (state.paused || state.ended || document.visibilityState !== "visible") return;
    if (busy()) return schedule();
    state.fetches++;
    fetch(target(), { headers: { Accept: "text/html" }, credentials: "same-origin", redirect: "manual" })
      .then(function (res) {
        if (res.type === "opaqueredirect" || res.status === 401) {
          state.ended = true; // the session ended: the next click logs in
          return null;
        }
        return res.ok ? res.text() : null;
      })
      .then(function (html) {
        if (html && !busy()) {
          var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
          if (next) {
            var open = Array.prototype.map.call(main.querySelectorAll("details"), function (d) { return d.open; });
            next.querySelectorAll("#flash").forEach(function (f) { f.remove(); });
            main.innerHTML = next.innerHTML;
            main.querySelectorAll("details").forEach(function (d, i) { if (open[i]) d.open = true; });
            main.setAttribute("data-refreshed", String(state.fetches));
          }
        }
      })
      .catch(function () { /* a network blip: try again next time */ })
      .then(function () { show(); schedule(); });
  }

  toggle.addEventListener("click", function () {
    state.paused = !state.paused;
    localStorage.setItem("queuety-live", state.paused ? "off" : "on");
    show();
    if (state.paused) stop(); else refresh();
  });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") refresh(); else stop();
  });
  show();
  schedule();
})();
