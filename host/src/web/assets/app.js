// nightjar dashboard: live updates without reloading. One EventSource on
// /api/v2/events; on `changed`, the current page's fragment is fetched
// again and swapped in (one request in flight; a change meanwhile asks for
// one more). Action forms are posted in the background; the state they
// change arrives through the same event. A task page follows its log.
(function () {
  "use strict";
  var frag = document.getElementById("frag");
  var busy = false, again = false;
  function refresh() {
    if (!frag) return;
    if (busy) { again = true; return; }
    busy = true;
    var u = new URL(location.href);
    u.searchParams.set("fragment", "1");
    fetch(u, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) { frag.innerHTML = html; } })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  if (window.EventSource && frag && frag.getAttribute("data-live") === "1") {
    var events = new EventSource("/api/v2/events");
    events.addEventListener("changed", refresh);
  }
  document.addEventListener("submit", function (ev) {
    var f = ev.target;
    if (!f.classList || !f.classList.contains("act")) return;
    ev.preventDefault();
    fetch(f.action, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-Requested-With": "nightjar" },
      body: new URLSearchParams(new FormData(f))
    }).then(function (r) {
      if (!r.ok) { alert("refused (" + r.status + ")"); return; }
      refresh();
    }).catch(function () {});
  });
  var log = document.getElementById("log");
  if (log && window.EventSource) {
    var src = new EventSource(log.getAttribute("data-src"));
    var add = function (ev) {
      var text = ev.data;
      if (log.getAttribute("data-empty") === "1") { log.textContent = ""; log.removeAttribute("data-empty"); }
      var end = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      log.appendChild(document.createTextNode(text.endsWith("\n") ? text : text + "\n"));
      if (end) log.scrollTop = log.scrollHeight;
    };
    src.onmessage = add;
    src.addEventListener("missed", function (ev) { add({ data: "[" + ev.data + "]" }); });
    src.addEventListener("end", function () { src.close(); });
    // The server's own error event (it has data) ends the stream for good;
    // a dropped connection (no data) is retried by the browser.
    src.addEventListener("error", function (ev) {
      if (ev.data) { add({ data: "[" + ev.data + "]" }); src.close(); }
    });
  }
})();
