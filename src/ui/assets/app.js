// wit ui: renders the sections and events the server pushes over Server-Sent Events.
// No framework: each section is rebuilt as one HTML string when its data changed (at most
// once per animation frame), events are prepended incrementally, countdowns tick in place.
"use strict";

(function () {
  const TOKEN = document.querySelector('meta[name="wit-token"]').content;
  const PERSON = document.querySelector('meta[name="wit-person"]').content;
  const MAX_EVENTS = 2000;   // kept in memory for filtering
  const MAX_ROWS = 400;      // shown in the timeline
  const QUIET_MS = 5 * 60 * 1000;
  const TYPES = ["session.registered", "session.ended", "session.reaped", "lock.acquired",
    "lock.refreshed", "lock.released", "lock.expired", "intent.declared", "intent.updated",
    "contract.proposed", "contract.responded"];

  const data = { sessions: [], locks: [], waits: null, intents: [], contracts: [], violations: [], forecast: null };
  const dirty = new Set();
  let events = [];           // oldest first
  let lastSeq = 0;
  let pendingEvents = [];
  let frameQueued = false;
  let sessionsKey = "";
  let sessionsShape = "";            // the sessions as shown, signs of life left out
  let shownLocksKey = "";            // the locks the table shows, as locksKey() spells them
  const lockRows = new Map();        // symbolPath -> its <tr>
  const names = new Map();   // sessionId -> display name
  const liveness = new Map(); // sessionId -> "live" | "dead" | "quiet"
  // Unowned work (docs/protocol.md 15.3): changes on disk no session made. The server marks
  // its sessions and intents `unowned: true`; they are shown as such, never as an agent.
  const UNOWNED = "nobody (unowned)";
  const UNOWNED_WHY = "changes on disk no session made: a person's editor, a formatter, an unhooked agent";
  const unownedIds = new Set();
  // The work map's open file and its owners (`/api/owners`, work.owners, 15.7):
  // {file, state: "loading" | "ok" | "error", result, message}.
  let opened = null;
  let ownersSeq = 0;
  // Figures the browser test and the benchmark read.
  const metrics = window.witUi = { latencies: [], renders: 0, sections: {}, received: 0,
    longTasks: [], lockLatencies: [], seenLocks: null, renderMs: [],
    // From now on, note how long each new lock took from its acquisition to the table.
    trackLocks() {
      metrics.seenLocks = new Set(data.locks.map((l) => l.symbolPath + "#" + l.token));
      metrics.longTasks = []; metrics.latencies = []; metrics.renderMs = [];
    } };
  if (window.PerformanceObserver && PerformanceObserver.supportedEntryTypes.includes("longtask")) {
    new PerformanceObserver((list) => { for (const e of list.getEntries()) metrics.longTasks.push(e.duration); })
      .observe({ type: "longtask", buffered: true });
  }

  const $ = (id) => document.getElementById(id);
  const esc = (v) => String(v ?? "").replace(/[&<>"']/g, (c) =>
    ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const who = (id) => unownedIds.has(id) ? UNOWNED : names.get(id) || id || "";
  const ago = (ms) => {
    const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    return s < 60 ? s + "s ago" : s < 3600 ? Math.floor(s / 60) + "m ago" : Math.floor(s / 3600) + "h ago";
  };
  const left = (ms) => {
    if (ms <= 0) return "expired";
    const s = Math.floor(ms / 1000);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    return h ? `${h}h ${String(m).padStart(2, "0")}m` : `${m}m ${String(r).padStart(2, "0")}s`;
  };
  const clock = (ms) => new Date(ms).toISOString().slice(11, 23);
  const files = (intent) => String(intent.files || "").split(",").filter(Boolean);
  const symbols = (intent) => {
    if (Array.isArray(intent.symbols)) return intent.symbols;
    try { const v = JSON.parse(intent.symbols || "[]"); return Array.isArray(v) ? v : []; } catch (_) { return []; }
  };

  // Render at the next frame, or within 100 ms where frames are throttled (a busy or
  // hidden page), whichever comes first.
  function schedule() {
    if (frameQueued) return;
    frameQueued = true;
    requestAnimationFrame(render);
    setTimeout(render, 100);
  }

  // ---- live stream ----------------------------------------------------------------------
  function connect() {
    const source = new EventSource("/api/stream");
    for (const name of Object.keys(data)) {
      source.addEventListener(name, (e) => {
        data[name] = JSON.parse(e.data);
        // The lock events already put these rows on the page: rebuild only on a difference.
        if (name === "locks") {
          const key = locksKey(data.locks);
          if (key === shownLocksKey) return;
        }
        metrics.sections[name] = Date.now();
        dirty.add(name);
        // Names and liveness are all the other sections take from sessions: a new sign of
        // life alone must not rebuild a table of 1,000 locks.
        if (name === "sessions") {
          const shape = JSON.stringify(data.sessions.map((s) => ({ ...s, lastSeenAt: 0 })));
          if (shape === sessionsShape) {
            for (const s of data.sessions) {
              const span = document.querySelector(`[data-session-row="${CSS.escape(s.sessionId)}"] [data-ago]`);
              if (span) span.dataset.ago = s.lastSeenAt;
            }
            return;
          }
          sessionsShape = shape;
          const key = data.sessions.map((s) => `${s.sessionId}\u0000${s.name}\u0000${s.live}`).join("\u0001");
          if (key !== sessionsKey) { sessionsKey = key; dirty.add("names"); dirty.add("locks"); dirty.add("workmap"); dirty.add("contracts"); dirty.add("waits"); }
        }
        if (name === "locks") { dirty.add("waits"); dirty.add("workmap"); }
        if (name === "waits") dirty.add("waits");
        if (name === "intents" || name === "forecast") dirty.add("workmap");
        // What an open file's owners are changes with the work: ask again.
        if (name === "intents" && opened) loadOwners(opened.file, false);
        if (name === "violations") dirty.add("contracts");
        schedule();
      });
    }
    const onEvents = (history) => (e) => {
      for (const ev of JSON.parse(e.data)) {
        if (ev.seq > lastSeq) {
          lastSeq = ev.seq; metrics.lastSeq = ev.seq; metrics.received++;
          if (history) ev.history = true;
          pendingEvents.push(ev);
        }
      }
      schedule();
    };
    source.addEventListener("events", onEvents(false));
    source.addEventListener("history", onEvents(true));
    source.addEventListener("gap", (e) => {
      const gap = JSON.parse(e.data);
      pendingEvents.push({ marker: `gap after #${gap.since}: ${gap.reason}` });
      if (gap.reason.includes("afresh")) lastSeq = 0;
      schedule();
    });
    source.addEventListener("lagged", () => {
      pendingEvents.push({ marker: "the page fell behind: some events are not shown" });
      schedule();
    });
    let wasDown = false;
    source.addEventListener("status", (e) => {
      const up = JSON.parse(e.data).daemon === "up";
      const box = $("daemon");
      box.className = "daemon " + (up ? "up" : "down");
      box.querySelector(".label").textContent = up ? "daemon live" : "daemon not answering — retrying";
      if (up && wasDown) { pendingEvents.push({ marker: "daemon back: timeline resumed" }); schedule(); }
      if (!up && !wasDown) { pendingEvents.push({ marker: "daemon not answering" }); schedule(); }
      wasDown = !up;
    });
    source.onerror = () => {
      const box = $("daemon");
      box.className = "daemon down";
      box.querySelector(".label").textContent = "page disconnected — retrying";
    };
  }

  // ---- rendering ------------------------------------------------------------------------
  function render() {
    if (!frameQueued) return;
    frameQueued = false;
    const started = performance.now();
    if (dirty.has("sessions")) renderSessions();
    if (dirty.has("locks")) { if (dirty.has("names")) renderLocks(); else reconcileLocks(); noteNewLocks(); }
    if (dirty.has("waits")) renderWaits();
    if (dirty.has("workmap")) renderWorkMap();
    if (dirty.has("contracts")) renderContracts();
    if (dirty.size) paintAllArmed();
    dirty.clear();
    if (pendingEvents.length) renderEvents();
    renderStats();
    metrics.renders++;
    metrics.renderMs.push(performance.now() - started);
    if (metrics.renderMs.length > 5000) metrics.renderMs.splice(0, 2500);
  }

  function stateOf(s) {
    if (!s.live) return "dead";
    return Date.now() - s.lastSeenAt > QUIET_MS ? "quiet" : "live";
  }

  function renderSessions() {
    names.clear(); liveness.clear(); unownedIds.clear();
    for (const s of data.sessions) {
      names.set(s.sessionId, s.name || s.sessionId);
      liveness.set(s.sessionId, stateOf(s));
      if (s.unowned) unownedIds.add(s.sessionId);
    }
    for (const i of data.intents) if (i.unowned) unownedIds.add(i.sessionId);
    const html = data.sessions.map((s) => {
      if (s.unowned) return unownedRow(s);
      const state = liveness.get(s.sessionId);
      const me = s.sessionId === PERSON;
      const extra = ["harness", "worktree", "branch"].filter((k) => s[k])
        .map((k) => `<span class="chip" title="${k}">${esc(s[k])}</span>`).join("");
      // A live session with a pid ends with its process (the daemon watches it): no button.
      const end = me ? `<span class="chip you">you</span>` : s.live && s.pid != null ? "" :
        `<button class="danger" data-act="end-session" data-session="${esc(s.sessionId)}" title="end this session: release its locks, abandon its intents">end</button>`;
      return `<div class="session ${state}" data-session-row="${esc(s.sessionId)}">
        <span class="dot ${state}" title="${state}"></span>
        <div class="main"><div><span class="name">${esc(s.name || "(unregistered)")}</span>
          <span class="chip ${state === "dead" ? "bad" : state === "quiet" ? "warn" : "ok"}">${state}</span></div>
          <div class="id">${esc(s.sessionId)}${s.pid ? " · pid " + s.pid : ""} · seen <span data-ago="${s.lastSeenAt}">${ago(s.lastSeenAt)}</span></div>
          <div>${extra}<span class="chip">${s.locks} lock${s.locks === 1 ? "" : "s"}</span><span class="chip">${s.intents} intent${s.intents === 1 ? "" : "s"}</span></div>
        </div>${end}</div>`;
    }).join("");
    $("sessions").innerHTML = html || `<div class="empty">no sessions</div>`;
    const agents = data.sessions.filter((s) => !s.unowned);
    const unowned = data.sessions.length - agents.length;
    $("sessions-count").textContent = `${agents.filter((s) => s.live).length} live / ${agents.length}` +
      (unowned ? ` · unowned work` : "");
    refillSessionFilter();
  }

  // A worktree's unowned work: no agent, nothing to end (committing or restoring resolves it).
  function unownedRow(s) {
    const where = s.worktree || String(s.sessionId).slice(String(s.sessionId).indexOf(":") + 1);
    return `<div class="session unowned" data-session-row="${esc(s.sessionId)}" data-unowned="true">
        <span class="dot unowned" title="unowned work"></span>
        <div class="main"><div><span class="name">unowned work</span> <span class="chip warn">unowned</span></div>
          <div class="muted">${esc(UNOWNED_WHY)}</div>
          <div class="id">in ${esc(where)}</div>
          <div><span class="chip">${s.intents} intent${s.intents === 1 ? "" : "s"}</span></div>
        </div></div>`;
  }

  function renderLocks() {
    const filter = $("locks-filter").value.trim().toLowerCase();
    const rows = [];
    for (const l of data.locks) {
      const holder = who(l.sessionId);
      if (filter && !l.symbolPath.toLowerCase().includes(filter) && !holder.toLowerCase().includes(filter)) continue;
      rows.push(lockRow(l));
    }
    $("locks").innerHTML = rows.join("") || `<tr><td colspan="5" class="empty">no locks</td></tr>`;
    lockRows.clear();
    for (const row of $("locks").rows) if (row.dataset.lock) lockRows.set(row.dataset.lock, row);
    shownLocksKey = locksKey(data.locks);
    $("locks-count").textContent = String(data.locks.length);
  }

  function rowKey(l) {
    return `${l.token}#${l.expiresAt}#${l.sessionId}#${liveness.get(l.sessionId) === "dead"}`;
  }

  // A new locks section changes only the rows that differ (a full rebuild of 1,000 rows
  // several times a second is what would make the page stutter).
  function reconcileLocks() {
    const filter = $("locks-filter").value.trim().toLowerCase();
    const body = $("locks");
    if (!lockRows.size) body.innerHTML = "";
    const want = new Set();
    let previous = null;
    for (const l of data.locks) {
      if (filter && !l.symbolPath.toLowerCase().includes(filter) && !who(l.sessionId).toLowerCase().includes(filter)) continue;
      want.add(l.symbolPath);
      let row = lockRows.get(l.symbolPath);
      if (!row || row.dataset.key !== rowKey(l)) {
        const fresh = document.createElement("tbody");
        fresh.innerHTML = lockRow(l);
        const made = fresh.firstElementChild;
        if (row) row.replaceWith(made); else if (previous) previous.after(made); else body.prepend(made);
        lockRows.set(l.symbolPath, made);
        row = made;
      }
      previous = row;
    }
    for (const [path, row] of lockRows) if (!want.has(path)) { row.remove(); lockRows.delete(path); }
    if (!lockRows.size) body.innerHTML = `<tr><td colspan="5" class="empty">no locks</td></tr>`;
    shownLocksKey = locksKey(data.locks);
    $("locks-count").textContent = String(data.locks.length);
  }

  function locksKey(locks) {
    return locks.map((l) => `${l.symbolPath}#${l.token}#${l.expiresAt}`).join("\n");
  }

  function lockRow(l) {
    const dead = liveness.get(l.sessionId) === "dead";
    const exp = Date.parse(l.expiresAt);
    return `<tr data-lock="${esc(l.symbolPath)}" data-key="${esc(rowKey(l))}"><td class="sym">${esc(l.symbolPath)}</td>
        <td>${esc(who(l.sessionId))}${dead ? ' <span class="chip bad">ended</span>' : ""}</td>
        <td class="num" data-exp="${exp}">${left(exp - Date.now())}</td><td class="num mono">${l.token}</td>
        <td>${dead ? `<button class="danger" data-act="release-lock" data-symbol="${esc(l.symbolPath)}" data-session="${esc(l.sessionId)}">release</button>` : ""}</td></tr>`;
  }

  // Lock events change the table row by row, at once; the next locks section confirms them.
  function applyLockEvents(batch) {
    let changed = false;
    const filter = $("locks-filter").value.trim().toLowerCase();
    for (const ev of batch) {
      if (ev.history || !ev.type || !ev.type.startsWith("lock.")) continue;
      const path = ev.subject;
      const at = data.locks.findIndex((l) => l.symbolPath === path);
      if (ev.type === "lock.acquired" || ev.type === "lock.refreshed") {
        const lock = { symbolPath: path, sessionId: ev.sessionId, acquiredAt: ev.data.acquiredAt,
          expiresAt: ev.data.expiresAt, token: ev.data.token };
        if (at >= 0) data.locks[at] = lock; else data.locks.push(lock);
        noteLock(lock, Date.now());
        const old = lockRows.get(path);
        const visible = !filter || path.toLowerCase().includes(filter) || who(lock.sessionId).toLowerCase().includes(filter);
        if (old) { old.outerHTML = lockRow(lock); lockRows.set(path, $("locks").querySelector(`tr[data-lock="${CSS.escape(path)}"]`)); }
        else if (visible) {
          const body = $("locks");
          if (!lockRows.size) body.innerHTML = "";
          body.insertAdjacentHTML("beforeend", lockRow(lock));
          lockRows.set(path, body.lastElementChild);
        }
      } else if (ev.type === "lock.released" || ev.type === "lock.expired") {
        if (at >= 0) data.locks.splice(at, 1);
        const row = lockRows.get(path);
        if (row) { row.remove(); lockRows.delete(path); }
      }
      changed = true;
    }
    if (changed) {
      shownLocksKey = locksKey(data.locks);
      $("locks-count").textContent = String(data.locks.length);
      // The work map and the waits read the locks too: they follow at the next frame.
      dirty.add("workmap"); dirty.add("waits"); schedule();
    }
  }

  function noteNewLocks() {
    if (!metrics.seenLocks) return;
    const now = Date.now();
    for (const l of data.locks) noteLock(l, now);
  }
  function noteLock(l, now) {
    const key = l.symbolPath + "#" + l.token;
    if (metrics.seenLocks && !metrics.seenLocks.has(key)) {
      metrics.seenLocks.add(key); metrics.lockLatencies.push(now - Date.parse(l.acquiredAt));
    }
  }

  // The wait graph, from `lock.waits`: an edge from each waiting session to the holder of the
  // lock it waits for (null while the lock is handed over), oldest first per symbol.
  function renderWaits() {
    if (!Array.isArray(data.waits)) {
      $("waits").innerHTML = '<div class="empty">this daemon does not report waits (no lock.waits)</div>';
      return;
    }
    const edges = data.waits.map((w) => ({ from: w.sessionId, to: w.holder, symbol: w.symbolPath, since: w.since }));
    if (!edges.length) {
      $("waits").innerHTML = '<div class="empty">nobody waits</div>';
      return;
    }
    const next = new Map();
    for (const e of edges) {
      if (e.to === null) continue;
      if (!next.has(e.from)) next.set(e.from, []);
      next.get(e.from).push(e.to);
    }
    const inCycle = new Set();
    for (const start of next.keys()) {
      const seen = new Set([start]); let frontier = [start];
      while (frontier.length) {
        const n = frontier.pop();
        for (const m of next.get(n) || []) {
          if (m === start) inCycle.add(start);
          else if (!seen.has(m)) { seen.add(m); frontier.push(m); }
        }
      }
    }
    $("waits").innerHTML = edges.map((e) => {
      const cycle = e.to !== null && inCycle.has(e.from) && inCycle.has(e.to);
      const holder = e.to === null ? "the lock's hand-over" : who(e.to);
      return `<div class="edge ${cycle ? "cycle" : ""}" data-wait-from="${esc(e.from)}" data-wait-to="${esc(e.to ?? "")}"
        data-wait-symbol="${esc(e.symbol)}"><b>${esc(who(e.from))}</b> waits for <b>${esc(holder)}</b>
        <span class="chip">${esc(e.symbol)}</span> since ${esc(clock(e.since))}${cycle ? '<span class="chip bad">cycle</span>' : ""}</div>`;
    }).join("");
  }

  function linesOverlap(a, b) {
    return a.some((x) => b.some((y) => x.startLine <= y.endLine + 1 && y.startLine <= x.endLine + 1));
  }

  function renderWorkMap() {
    const byFile = new Map();
    const entry = (f) => { if (!byFile.has(f)) byFile.set(f, { work: [], locks: [] }); return byFile.get(f); };
    for (const intent of data.intents) {
      for (const f of files(intent)) entry(f).work.push(intent);
    }
    for (const l of data.locks) {
      const i = l.symbolPath.lastIndexOf(":");
      if (i > 0 && byFile.has(l.symbolPath.slice(0, i))) byFile.get(l.symbolPath.slice(0, i)).locks.push(l);
    }
    const out = [];
    let collisions = 0;
    const sorted = [...byFile.entries()].sort((a, b) => a[0].localeCompare(b[0]));
    for (const [file, { work, locks }] of sorted) {
      const sessions = new Set(work.map((w) => w.sessionId));
      let collide = false;
      for (let i = 0; i < work.length; i++) for (let j = i + 1; j < work.length; j++) {
        const a = work[i], b = work[j];
        // Unowned work never collides with an edit or a lock (the daemon's rule too).
        if (a.sessionId === b.sessionId || a.unowned || b.unowned) continue;
        const sa = symbols(a), sb = symbols(b);
        const ra = Array.isArray(a.regions) ? a.regions : [], rb = Array.isArray(b.regions) ? b.regions : [];
        const wholeA = a.startByte == null && !ra.length, wholeB = b.startByte == null && !rb.length;
        if (wholeA || wholeB || sa.some((s) => sb.includes(s)) || linesOverlap(ra, rb)) collide = true;
      }
      const foreignLock = locks.some((l) => work.some((w) => !w.unowned && w.sessionId !== l.sessionId &&
        (symbols(w).some((s) => l.symbolPath.endsWith(":" + s)) || w.startByte == null)));
      if (foreignLock) collide = true;
      if (collide) collisions++;
      const cls = collide ? "collision" : sessions.size > 1 ? "shared" : "";
      const badge = collide ? '<span class="chip bad">collision</span>' : sessions.size > 1 ? '<span class="chip warn">shared file</span>' : "";
      const rows = work.map((w) => {
        const regions = (Array.isArray(w.regions) ? w.regions : []).map((r) =>
          `<span class="chip region" title="observed lines">L${r.startLine}${r.endLine !== r.startLine ? "–" + r.endLine : ""}</span>`).join("");
        const syms = symbols(w).map((s) => `<span class="chip">${esc(s)}</span>`).join("");
        const related = (Array.isArray(w.related) ? w.related : []).map((r) =>
          `<span class="chip info" title="${esc(r.type)}">${esc(r.type)} ${esc(r.symbolPath || "")}${r.otherSymbol ? " ↔ " + esc(r.otherSymbol) : ""}</span>`).join("");
        const scope = !syms && !regions && w.startByte == null ? '<span class="chip warn">whole file</span>' : "";
        const whose = w.unowned ? `<span class="who unowned" title="${esc(UNOWNED_WHY)}">${UNOWNED}</span>` :
          `<span class="who">${esc(who(w.sessionId))}</span>`;
        const status = w.unowned ? `<span class="chip warn" title="${esc(UNOWNED_WHY)}">unowned work</span>` :
          `<span class="chip ${w.status === "active" ? "ok" : "info"}">${esc(w.status)}</span>`;
        return `<div class="work" ${w.unowned ? 'data-unowned="true"' : ""}>${whose}<span>
          ${status}${syms}${regions}${scope}${related}
          <span class="muted">${esc(w.description)}</span></span></div>`;
      }).join("");
      const lockRows = locks.map((l) => `<div class="work"><span class="who">${esc(who(l.sessionId))}</span>
        <span><span class="chip">locked</span><span class="chip">${esc(l.symbolPath.slice(l.symbolPath.lastIndexOf(":") + 1))}</span></span></div>`).join("");
      const open = opened && opened.file === file;
      out.push(`<div class="file ${cls}${open ? " open" : ""}" data-file="${esc(file)}"><button class="path" data-open-file="${esc(file)}"
        aria-expanded="${open}" title="${open ? "close" : "show who owns its uncommitted lines"}">${open ? "▾" : "▸"} ${esc(file)}</button> ${badge}${rows}${lockRows}${open ? ownersBlock(file) : ""}</div>`);
    }
    // Where worktrees' changes meet (worktree.forecast, when the daemon offers it).
    const pairs = data.forecast && Array.isArray(data.forecast.pairs) ? data.forecast.pairs : [];
    for (const p of pairs) {
      const hits = (p.collisions || []).map((c) => `<div class="work"><span class="who">${esc(c.file)}</span><span>
        ${(c.symbols || []).map((s) => `<span class="chip">${esc(s)}</span>`).join("")}
        <span class="muted">lines ${esc(JSON.stringify(c.linesA))} × ${esc(JSON.stringify(c.linesB))}</span></span></div>`).join("");
      const related = (p.related || []).map((r) => `<span class="chip info">${esc(r.type)} ${esc(r.symbolPath || "")}${r.otherSymbol ? " ↔ " + esc(r.otherSymbol) : ""}</span>`).join("");
      out.push(`<div class="file ${(p.collisions || []).length ? "collision" : "shared"}"><span class="path">worktrees ${esc(p.a)} × ${esc(p.b)}</span>
        ${(p.collisions || []).length ? '<span class="chip bad">merge would conflict</span>' : ""}${hits}${related ? `<div class="work">${related}</div>` : ""}</div>`);
    }
    $("workmap").innerHTML = out.join("") || `<div class="empty">no declared or observed work</div>`;
    $("workmap-count").textContent = `${byFile.size} file${byFile.size === 1 ? "" : "s"}${collisions ? ` · ${collisions} collision${collisions > 1 ? "s" : ""}` : ""}`;
  }

  // Asks the server who owns `file`'s uncommitted lines; only the latest answer is shown.
  async function loadOwners(file, fresh) {
    const seq = ++ownersSeq;
    if (fresh) { opened = { file, state: "loading" }; dirty.add("workmap"); schedule(); }
    let next;
    try {
      const response = await fetch("/api/owners?file=" + encodeURIComponent(file), { credentials: "same-origin" });
      const answer = await response.json().catch(() => ({}));
      next = response.ok ? { file, state: "ok", result: answer.result } :
        { file, state: "error", message: (answer.error && answer.error.message) || `refused (${response.status})` };
    } catch (error) { next = { file, state: "error", message: "the page cannot reach wit ui: " + error }; }
    if (seq !== ownersSeq || !opened || opened.file !== file) return;
    opened = next;
    dirty.add("workmap"); schedule();
  }

  function runOwners(run) {
    const ids = Array.isArray(run.sessionIds) ? run.sessionIds : [];
    return ids.length ? ids.map(who).join(", ") : UNOWNED;
  }

  // The open file's owned line runs (lines a–b: who, since when); a binary file is one
  // file-level run.
  function ownersBlock(file) {
    const head = `<div class="owners-head">who owns the uncommitted lines</div>`;
    let body;
    if (opened.state === "loading") body = `<div class="muted">asking the daemon…</div>`;
    else if (opened.state === "error") body = `<div class="violation">${esc(opened.message)}</div>`;
    else if (!opened.result) body = `<div class="muted">this daemon does not report owners (no work.owners)</div>`;
    else {
      const r = opened.result;
      const runs = Array.isArray(r.lines) ? r.lines : [];
      body = runs.map((run) => {
        const since = Date.parse(run.since);
        const unowned = !(Array.isArray(run.sessionIds) && run.sessionIds.length);
        const lines = r.binary ? "whole file (binary)" :
          run.endLine < run.startLine ? `deleted after line ${run.endLine}` :
          run.startLine === run.endLine ? `line ${run.startLine}` : `lines ${run.startLine}–${run.endLine}`;
        return `<div class="owned${unowned ? " unowned" : ""}" data-run-start="${run.startLine}" data-run-end="${run.endLine}"
          data-run-owners="${esc((run.sessionIds || []).join(","))}" ${r.binary ? 'data-run-binary="true"' : ""}>
          <span class="lines">${esc(lines)}</span><span class="who"${unowned ? ` title="${esc(UNOWNED_WHY)}"` : ""}>${esc(runOwners(run))}</span>
          <span class="muted">since ${Number.isNaN(since) ? esc(run.since) : `${esc(clock(since))} (<span data-ago="${since}">${ago(since)}</span>)`}</span></div>`;
      }).join("") || `<div class="muted">no uncommitted lines</div>`;
    }
    return `<div class="owners" data-owners="${esc(file)}" data-state="${esc(opened.state)}">${head}${body}</div>`;
  }

  function renderContracts() {
    const broken = new Map();
    for (const v of data.violations) broken.set(v.contractId, v);
    const order = { proposed: 0, accepted: 1, rejected: 2 };
    const list = [...data.contracts].sort((a, b) => (order[a.status] - order[b.status]) || (b.proposedAt - a.proposedAt));
    $("contracts").innerHTML = list.map((c) => {
      const v = broken.get(c.contractId);
      const badge = c.status === "accepted" ? "ok" : c.status === "rejected" ? "bad" : "warn";
      const buttons = c.status === "proposed" && c.proposerSessionId !== PERSON ? `<div class="actions">
        <button class="accept" data-act="respond-contract" data-contract="${esc(c.contractId)}" data-accept="true">accept</button>
        <button class="danger" data-act="respond-contract" data-contract="${esc(c.contractId)}" data-accept="false">reject</button></div>` : "";
      return `<div class="contract ${v ? "violated" : ""}" data-contract-row="${esc(c.contractId)}">
        <span class="chip ${badge}">${esc(c.status)}</span> <span class="mono">${esc(c.symbolPath)}</span>
        ${v ? '<span class="chip bad">violated</span>' : ""}
        <div><code class="sig">${esc(c.signature)}</code></div>
        <div class="muted">proposed by ${esc(who(c.proposerSessionId))}${c.responderSessionId ? ` · ${esc(c.status)} by ${esc(who(c.responderSessionId))}` : ""}</div>
        ${v ? `<div class="violation">now: <code>${esc(v.actual)}</code></div>` : ""}${buttons}</div>`;
    }).join("") || `<div class="empty">no contracts</div>`;
    const proposed = data.contracts.filter((c) => c.status === "proposed").length;
    $("contracts-count").textContent = `${data.contracts.length}${proposed ? ` · ${proposed} to answer` : ""}${broken.size ? ` · ${broken.size} violated` : ""}`;
  }

  // ---- timeline -------------------------------------------------------------------------
  function eventFile(ev) {
    return ev.type.startsWith("lock.") || ev.type.startsWith("contract.") ? String(ev.subject) + " " + (ev.data.symbolPath || "") :
      ev.type.startsWith("intent.") ? String(ev.data.files || "") + " " + String(ev.data.symbols || "") : "";
  }
  function passes(ev) {
    if (ev.marker) return true;
    const s = $("f-session").value, t = $("f-type").value, f = $("f-file").value.trim();
    return (!s || ev.sessionId === s) && (!t || ev.type === t) && (!f || eventFile(ev).includes(f));
  }
  function eventRow(ev) {
    if (ev.marker) return `<tr class="marker"><td colspan="5">${esc(ev.marker)}</td></tr>`;
    const ns = ev.type.split(".")[0];
    const details = Object.entries(ev.data || {}).filter(([k]) => k !== "acquiredAt")
      .map(([k, v]) => `${esc(k)}=${esc(typeof v === "string" ? v : JSON.stringify(v))}`).join(" · ");
    return `<tr data-seq="${ev.seq}"><td class="mono muted">${clock(ev.at)}</td><td class="mono muted">#${ev.seq}</td>
      <td><span class="t t-${ns}">${ev.type}</span></td><td class="mono">${esc(ev.subject)}</td>
      <td class="details">${ev.sessionId ? "by <b>" + esc(who(ev.sessionId)) + "</b> " : ""}${details}</td></tr>`;
  }
  function renderEvents() {
    const batch = pendingEvents; pendingEvents = [];
    applyLockEvents(batch);
    events = events.concat(batch);
    if (events.length > MAX_EVENTS) events = events.slice(events.length - MAX_EVENTS);
    const shown = batch.filter(passes).slice(-MAX_ROWS).reverse();
    if (shown.length) {
      const body = $("timeline");
      body.insertAdjacentHTML("afterbegin", shown.map(eventRow).join(""));
      while (body.rows.length > MAX_ROWS) body.deleteRow(-1);
    }
    const now = Date.now();
    for (const ev of batch) if (ev.at && !ev.history) metrics.latencies.push(now - ev.at);
    if (metrics.latencies.length > 5000) metrics.latencies.splice(0, metrics.latencies.length - 5000);
    rate.push(...batch.filter((e) => e.at).map(() => now));
  }
  function refilterEvents() {
    const shown = events.filter(passes).slice(-MAX_ROWS).reverse();
    $("timeline").innerHTML = shown.map(eventRow).join("");
  }
  function refillSessionFilter() {
    const select = $("f-session"), chosen = select.value;
    select.innerHTML = `<option value="">every session</option>` + data.sessions.map((s) =>
      `<option value="${esc(s.sessionId)}">${esc(s.unowned ? "unowned work" : s.name || s.sessionId)}</option>`).join("");
    select.value = chosen;
  }

  let rate = [];
  function renderStats() {
    const now = Date.now();
    rate = rate.filter((t) => now - t < 10000);
    const live = data.sessions.filter((s) => s.live && !s.unowned).length;
    const proposed = data.contracts.filter((c) => c.status === "proposed").length;
    const n = (count, one, many) => `<span><b>${count}</b>${count === 1 ? one : many}</span>`;
    $("stats").innerHTML = n(live, "live session", "live sessions") + n(data.locks.length, "lock", "locks") +
      n(data.intents.length, "intent", "intents") + n(proposed, "contract to answer", "contracts to answer") + `
      <span><b>${(rate.length / 10).toFixed(1)}</b>events/s</span>`;
  }

  // Countdowns and "seen … ago" tick in place once a second; nothing is rebuilt.
  function tick() {
    const now = Date.now();
    for (const cell of document.querySelectorAll("[data-exp]")) {
      const ms = Number(cell.dataset.exp) - now;
      const text = left(ms);
      if (cell.textContent !== text) cell.textContent = text;
      const cls = "num " + (ms <= 0 ? "expired" : ms < 60000 ? "soon" : "");
      if (cell.className !== cls) cell.className = cls;
    }
    for (const span of document.querySelectorAll("[data-ago]")) span.textContent = ago(Number(span.dataset.ago));
    renderStats();
  }

  // ---- actions --------------------------------------------------------------------------
  let armed = null;  // {key, until}: the button clicked once, awaiting its confirmation
  function armKey(button) {
    return `${button.dataset.act}|${button.dataset.session || ""}|${button.dataset.symbol || ""}`;
  }
  function paintArmed(button) {
    const on = !!(armed && armed.key === armKey(button) && Date.now() < armed.until);
    const label = button.dataset.act === "end-session" ? "end" : "release";
    button.classList.toggle("armed", on);
    button.textContent = on ? "confirm " + label : label;
  }
  function paintAllArmed() {
    if (armed) for (const b of document.querySelectorAll("button[data-act]")) if (b.dataset.act !== "respond-contract") paintArmed(b);
  }

  function toast(text, error) {
    const box = $("toast");
    box.textContent = text; box.className = "toast" + (error ? " error" : ""); box.hidden = false;
    clearTimeout(toast.timer); toast.timer = setTimeout(() => { box.hidden = true; }, 4000);
  }
  async function act(body) {
    try {
      const response = await fetch("/api/action", { method: "POST", credentials: "same-origin",
        headers: { "content-type": "application/json", "x-wit-token": TOKEN }, body: JSON.stringify(body) });
      const answer = await response.json().catch(() => ({}));
      if (!response.ok) toast((answer.error && answer.error.message) || `refused (${response.status})`, true);
      else toast("done: " + JSON.stringify(answer.result));
    } catch (error) { toast("the page cannot reach wit ui: " + error, true); }
  }
  document.addEventListener("click", (e) => {
    const opener = e.target.closest("button[data-open-file]");
    if (opener) {
      const file = opener.dataset.openFile;
      if (opened && opened.file === file) { opened = null; ownersSeq++; dirty.add("workmap"); schedule(); }
      else loadOwners(file, true);
      return;
    }
    const button = e.target.closest("button[data-act]");
    if (!button) return;
    const kind = button.dataset.act;
    // Ending a session and releasing a lock take two clicks: the first arms the button (the
    // armed state outlives a re-render of the row).
    if (kind !== "respond-contract") {
      const key = armKey(button);
      if (!(armed && armed.key === key && Date.now() < armed.until)) {
        armed = { key, until: Date.now() + 4000 };
        paintArmed(button);
        setTimeout(() => { for (const b of document.querySelectorAll("button.armed")) paintArmed(b); }, 4100);
        return;
      }
      armed = null;
    }
    if (kind === "end-session") act({ action: "end-session", sessionId: button.dataset.session });
    if (kind === "release-lock") act({ action: "release-lock", symbolPath: button.dataset.symbol, sessionId: button.dataset.session });
    if (kind === "respond-contract") act({ action: "respond-contract", contractId: button.dataset.contract, accept: button.dataset.accept === "true" });
  });

  $("f-type").innerHTML += TYPES.map((t) => `<option>${t}</option>`).join("");
  for (const id of ["f-session", "f-type", "f-file"]) $(id).addEventListener("input", refilterEvents);
  $("locks-filter").addEventListener("input", renderLocks);
  setInterval(tick, 1000);
  connect();
})();
