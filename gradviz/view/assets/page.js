// gradviz view: the state of a recorded backward pass at any step, from the data embedded above
// (gradviz/view/page.py says what each part is). Plain JS, no library, no network.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("gradviz-data").textContent);
  const $ = (id) => document.getElementById(id);
  const STATES = D.states;
  const RANK = new Map(D.precedence.map((s, i) => [s, i]));
  const total = D.total;
  let step = 0;
  let pinned = null; // a task chosen by #task=K or a click: shown whatever the step
  let shownTask; // the task whose graph is in the page now
  let selected = null; // node id (or "g<id>" for a box)
  let table = null; // the nodes, as columns (page.py's _node_table)
  let row = null; // node id -> its row in the table (-1: none)
  let T = null; // transitions: {all: (node, step, state code, extra) int32 quadruples in step order, n, maxId}
  let cur = null; // the state shown: per node, index of its last applied transition (-1: none)
  let curStep = -1;
  const texts = new Map(); // chunk -> array of event texts (or a promise while inflating)

  function blobText(name) {
    const el = document.getElementById("blob-" + name);
    return el ? el.textContent : null;
  }
  async function inflate(name) {
    const b64 = blobText(name);
    if (b64 === null) return null;
    if (name === "trans" || name === "nodes") document.getElementById("blob-" + name).remove(); // read once: free it
    // The browser decodes base64 itself (a data: URL): a byte at a time in script took seconds.
    const body = (await fetch("data:application/octet-stream;base64," + b64)).body;
    const stream = body.pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  async function inflateJSON(name) {
    const bytes = await inflate(name);
    return bytes === null ? null : JSON.parse(new TextDecoder().decode(bytes));
  }

  // --- the state at a step ---------------------------------------------------------------------
  function indexTransitions(bytes) {
    // (node, step, state code, extra) int32 quadruples, read in place: no copies of 1M+ rows.
    const all = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2);
    const n = all.length >> 2;
    let maxId = 0;
    for (let i = 0; i < n; i++) if (all[4 * i] > maxId) maxId = all[4 * i];
    T = { all, n, maxId };
    cur = new Int32Array(maxId + 1).fill(-1);
  }
  function firstAfter(s) { // first transition with step > s (transitions are in step order)
    let lo = 0, hi = T.n;
    while (lo < hi) { const m = (lo + hi) >> 1; if (T.all[4 * m + 1] <= s) lo = m + 1; else hi = m; }
    return lo;
  }
  function moveTo(s) {
    if (T === null) return;
    if (s >= curStep && curStep >= 0) {
      const a = firstAfter(curStep), b = firstAfter(s);
      for (let i = a; i < b; i++) cur[T.all[4 * i]] = i;
    } else {
      cur.fill(-1);
      const b = firstAfter(s);
      for (let i = 0; i < b; i++) cur[T.all[4 * i]] = i;
    }
    curStep = s;
  }
  function stateOf(id) {
    if (T === null || id > T.maxId || cur[id] < 0) return "unreached"; // not created yet: as render says
    return STATES[T.all[4 * cur[id] + 2]];
  }
  function extraOf(id) { return cur[id] < 0 ? -1 : T.all[4 * cur[id] + 3]; }

  // --- which task ------------------------------------------------------------------------------
  function taskAt(s) { // the innermost running task, else the last begun, else the first (docs/view.md)
    let best = null, bestBegin = -1, last = null, lastBegin = -1;
    for (const [tid, b, e] of D.tasks) {
      if (b <= s && (e < 0 || e > s) && b > bestBegin) { best = tid; bestBegin = b; }
      if (b <= s && b > lastBegin) { last = tid; lastBegin = b; }
    }
    if (best !== null) return best;
    if (last !== null) return last;
    return D.tasks.length ? D.tasks[0][0] : null;
  }

  // --- drawing ---------------------------------------------------------------------------------
  function info(id) { // [name, num_inputs, sequence_nr, source, device], or null
    const r = row !== null && id < row.length ? row[id] : -1;
    if (r < 0) return null;
    const t = table;
    return [t.names[t.name[r]], t.inputs[r], t.seq[r], t.sources[t.source[r]], t.devices[t.device[r]]];
  }
  function label(id) {
    const n = info(id);
    return n ? `${n[0]} (node ${id})` : `node ${id}`;
  }
  function showGraph(task) {
    const key = task === null ? "none" : String(task);
    if (shownTask === key) return;
    shownTask = key;
    const g = D.graphs[key];
    const el = $("graph");
    el.dataset.task = key;
    const t = D.tasks.find((x) => String(x[0]) === key);
    $("task-label").textContent = t ? `graph task ${t[0]} (${t[4]}${t[5] ? ", reentrant depth " + t[5] : ""}, ${t[3]})`
      + (pinned !== null ? " · pinned (t: follow the running task)" : "") : "forward graph (no backward ran)";
    if (!g) {
      el.innerHTML = "";
      const p = document.createElement("p");
      p.className = "dim";
      p.textContent = `task ${key} is not drawn in this page (${D.tasks.length} tasks; drawn: ${Object.keys(D.graphs).join(", ")}): `
        + `'gradviz view TRACE --task ${key}' draws it.`;
      el.appendChild(p);
      $("notes").textContent = "";
      return;
    }
    el.innerHTML = g.svg; // graphviz's SVG, made by gradviz render from the trace (escaped there)
    $("notes").textContent = g.notes.length ? `${g.total} nodes in ${g.drawn} boxes: ` + g.notes.join("; ") : `${g.total} nodes`;
    for (const box of el.querySelectorAll("g[data-node], g[data-group]")) box.addEventListener("click", onBox);
  }
  function paintGraph() {
    const key = shownTask;
    const g = D.graphs[key];
    if (!g) return;
    for (const box of $("graph").querySelectorAll("g[data-node]")) box.dataset.state = stateOf(+box.dataset.node);
    for (const box of $("graph").querySelectorAll("g[data-group]")) {
      let top = "pruned", rank = 1e9;
      for (const m of g.groups[box.dataset.group]) {
        const s = stateOf(m), r = RANK.has(s) ? RANK.get(s) : 1e9;
        if (r < rank) { rank = r; top = s; }
      }
      box.dataset.state = top;
    }
    for (const box of $("graph").querySelectorAll("g.selected")) box.classList.remove("selected");
    if (selected !== null) {
      const box = $("graph").querySelector(`g[data-node="${selected}"]`);
      if (box) box.classList.add("selected");
    }
  }
  function line(text, cls) {
    const d = document.createElement("div");
    d.className = "line" + (cls ? " " + cls : "");
    d.textContent = text;
    d.title = text;
    return d;
  }
  function paintPanels() {
    const running = new Map(), queued = new Map(), parked = [];
    if (T !== null) {
      for (let id = 0; id <= T.maxId; id++) {
        const i = cur[id];
        if (i < 0) continue;
        const s = STATES[T.all[4 * i + 2]];
        if (s === "running") { const k = T.all[4 * i + 3]; if (!running.has(k)) running.set(k, []); running.get(k).push(id); }
        else if (s === "queued") { const k = T.all[4 * i + 3]; if (!queued.has(k)) queued.set(k, []); queued.get(k).push(id); }
        else if (s === "parked") parked.push(id);
      }
    }
    const th = $("threads"); th.replaceChildren();
    for (const [tid, name, role, device] of D.threads) {
      const r = running.get(tid) || [];
      th.appendChild(line(`${tid} ${name} (${role}${device ? ", " + device : ""})`));
      if (r.length) for (const id of r) th.appendChild(line(`  runs ${label(id)}`));
      else th.appendChild(line("  idle", "dim"));
    }
    const qs = $("queues"); qs.replaceChildren();
    const seqnr = (id) => { const n = info(id); return n ? n[2] : 0; };
    for (const [qid, name, device] of D.queues) {
      const q = (queued.get(qid) || []).sort((a, b) => seqnr(b) - seqnr(a)); // torch pops the highest sequence_nr first
      qs.appendChild(line(`${qid} ${name} (${device}): ${q.length}`));
      for (const id of q.slice(0, 8)) qs.appendChild(line(`  ${label(id)} seq ${seqnr(id)}`));
      if (q.length > 8) qs.appendChild(line(`  ... ${q.length - 8} more`, "dim"));
    }
    if (!D.queues.length) qs.appendChild(line("none", "dim"));
    const nr = $("not-ready"); nr.replaceChildren();
    for (const id of parked.slice(0, 40)) {
      const n = info(id);
      nr.appendChild(line(`${label(id)} [${extraOf(id)}/${n ? n[1] : "?"} slots]`));
    }
    if (parked.length > 40) nr.appendChild(line(`... ${parked.length - 40} more`, "dim"));
    if (!parked.length) nr.appendChild(line("empty", "dim"));
  }
  async function paintEvent() {
    const s = step;
    const head = $("event-head"), text = $("event-text");
    $("event").classList.toggle("problem", D.problems.includes(s));
    if (s === 0) { head.textContent = "step 0:"; text.textContent = "nothing applied yet (→ applies the first event)"; return; }
    head.textContent = `step ${s}: event #${s - 1}`;
    if (!D.hasTexts) { text.textContent = ""; return; }
    const k = Math.floor((s - 1) / D.textChunk);
    if (!texts.has(k)) texts.set(k, inflateJSON("text-" + k));
    let chunk = texts.get(k);
    if (chunk instanceof Promise) { text.textContent = "…"; chunk = await chunk; texts.set(k, chunk); }
    if (step === s && chunk) text.textContent = chunk[(s - 1) % D.textChunk];
  }
  function paintWhy() {
    const w = $("why");
    if (selected === null) { w.textContent = "click a node for its state and why it is in it"; return; }
    const id = selected;
    const n = info(id);
    const parts = [`${label(id)}: ${stateOf(id)} at step ${step}`];
    if (n && n[3]) parts.push(`created at ${n[3]}`);
    if (n) parts.push(`sequence_nr ${n[2]}, ${n[1]} input(s), ${n[4]}`);
    const answers = D.why || {};
    const a = (answers.nodes || {})[String(id)] || answers.default;
    if (a) parts.push("", `why: ${a.text || a.reason || JSON.stringify(a)}`, a.where ? `at ${a.where}` : "");
    else parts.push("", "no why answer in this page: 'gradviz why TRACE --json > why.json', then 'gradviz view TRACE --why why.json'");
    w.textContent = parts.filter((x) => x !== undefined).join("\n");
  }

  // --- the timeline ----------------------------------------------------------------------------
  function drawTimeline() {
    const W = 1000, rowH = 16, labelW = 150;
    const rows = D.tasks.length + D.threads.length;
    const H = rows * rowH + 10;
    const x = (s) => labelW + (W - labelW) * (total ? s / total : 0);
    const NS = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const add = (tag, attrs, text) => {
      const e = document.createElementNS(NS, tag);
      for (const k in attrs) e.setAttribute(k, attrs[k]);
      if (text !== undefined) e.textContent = text;
      svg.appendChild(e);
      return e;
    };
    let y = 4;
    // Tasks packed into lanes: one after another on a lane, a nested (reentrant) or concurrent
    // task on the next; a bar is labelled with its id where it is wide enough.
    const laneEnds = [];
    const placed = [];
    for (const [tid, b, e, status] of D.tasks) {
      const end = e < 0 ? total : e;
      let lane = laneEnds.findIndex((x) => x <= b);
      if (lane < 0) { lane = laneEnds.length; laneEnds.push(end); } else laneEnds[lane] = end;
      placed.push([tid, b, end, status, lane]);
    }
    const lanes = Math.max(1, laneEnds.length);
    for (let l = 0; l < lanes; l++) add("text", { x: 2, y: y + l * rowH + 11 }, l === 0 ? `tasks (${D.tasks.length})` : "  nested / concurrent");
    for (const [tid, b, end, status, lane] of placed) {
      const w = Math.max(2, x(end) - x(b));
      const r = add("rect", { x: x(b), y: y + lane * rowH + 2, width: w, height: rowH - 4,
        class: "task" + (status === "ok" || status === "running" ? "" : " failed"), "data-task": tid });
      r.appendChild(document.createElementNS(NS, "title")).textContent = `task ${tid} (${status}): steps ${b}..${end}`;
      if (w > 8 * String(tid).length + 6) {
        const t = add("text", { x: x(b) + 3, y: y + lane * rowH + 11, "data-task": tid, class: "task-id" }, String(tid));
        t.style.pointerEvents = "none";
      }
    }
    y += lanes * rowH;
    for (const [tid, name] of D.threads) {
      add("text", { x: 2, y: y + 11 }, `${name}`.slice(0, 22));
      const busy = D.busy[String(tid)] || "";
      const cw = (W - labelW) / D.columns;
      for (let c = 0; c < busy.length; c++) {
        if (busy[c] !== "1") continue;
        let c2 = c; while (c2 + 1 < busy.length && busy[c2 + 1] === "1") c2++;
        add("rect", { x: labelW + c * cw, y: y + 3, width: (c2 - c + 1) * cw, height: rowH - 6, class: "busy" });
        c = c2;
      }
      y += rowH;
    }
    svg.setAttribute("viewBox", `0 0 ${W} ${y + 4}`);
    add("line", { x1: x(step), x2: x(step), y1: 0, y2: y + 4, class: "cursor", id: "cursor" });
    svg.addEventListener("click", (ev) => {
      const box = svg.getBoundingClientRect();
      const px = (ev.clientX - box.left) * (W / box.width);
      const t = ev.target.getAttribute && ev.target.getAttribute("data-task");
      if (t !== null && t !== undefined) {
        const task = D.tasks.find((r) => String(r[0]) === t);
        pinned = null;
        go(px >= labelW ? Math.round(((px - labelW) / (W - labelW)) * total) : task[1]);
        return;
      }
      if (px >= labelW) go(Math.round(((px - labelW) / (W - labelW)) * total));
    });
    $("timeline").replaceChildren(svg);
    timelineX = x;
  }
  let timelineX = null;
  function paintTimeline() {
    const c = $("cursor");
    if (c && timelineX) { c.setAttribute("x1", timelineX(step)); c.setAttribute("x2", timelineX(step)); }
    for (const r of document.querySelectorAll("#timeline rect.task")) r.classList.toggle("shown", r.dataset.task === shownTask);
  }

  // --- moving ----------------------------------------------------------------------------------
  function show() {
    moveTo(step);
    const task = pinned !== null ? pinned : taskAt(step);
    showGraph(task);
    paintGraph();
    paintPanels();
    paintWhy();
    paintTimeline();
    $("slider").value = step;
    $("stepnum").value = step;
    const cur = $("current");
    cur.dataset.step = step;
    cur.dataset.task = shownTask;
    const frag = `#step=${step}` + (pinned !== null ? `&task=${pinned}` : "") + (selected !== null ? `&node=${selected}` : "");
    if (location.hash !== frag) {
      try { history.replaceState(null, "", frag); } catch (e) { /* a sandboxed notebook frame: no address bar to keep */ }
    }
    return paintEvent();
  }
  function go(s) {
    step = Math.max(0, Math.min(total, s | 0));
    return show();
  }
  function nextIn(list, s) { for (const x of list) if (x > s) return x; return null; }
  function prevIn(list, s) { let p = null; for (const x of list) { if (x >= s) break; p = x; } return p; }
  function readHash() {
    const h = new URLSearchParams(location.hash.replace(/^#/, ""));
    const t = h.get("task");
    pinned = null;
    if (t !== null && D.tasks.some((r) => String(r[0]) === t)) pinned = D.tasks.find((r) => String(r[0]) === t)[0];
    const nd = h.get("node");
    selected = nd !== null && /^\d+$/.test(nd) ? +nd : null;
    const s = h.get("step");
    if (s !== null && /^\d+$/.test(s)) step = Math.min(total, +s);
    else if (pinned !== null) step = D.tasks.find((r) => r[0] === pinned)[1];
  }
  function onBox(ev) {
    const box = ev.currentTarget;
    if (box.dataset.node !== undefined) selected = +box.dataset.node;
    else selected = (D.graphs[shownTask].groups[box.dataset.group] || [null])[0];
    show();
  }
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT" && ev.target.type === "number") return;
    let to = null;
    switch (ev.key) {
      case "ArrowRight": case "n": case " ": to = step + 1; break;
      case "ArrowLeft": case "p": to = step - 1; break;
      case ">": case ".": to = nextIn(D.runs, step); break;
      case "<": case ",": to = prevIn(D.runs, step); break;
      case "e": to = nextIn(D.problems, step); break;
      case "E": to = prevIn(D.problems, step); break;
      case "Home": to = 0; break;
      case "End": to = total; break;
      case "t": pinned = null; to = step; break;
      case "Escape": selected = null; to = step; break;
      case "z": $("graph").classList.toggle("actual"); return; // whole graph in view, or 1:1
      default: return;
    }
    ev.preventDefault();
    if (to !== null) go(to);
  });
  $("slider").max = total;
  $("total").textContent = total;
  $("stepnum").max = total;
  $("slider").addEventListener("input", (ev) => go(+ev.target.value));
  $("stepnum").addEventListener("change", (ev) => go(+ev.target.value));
  $("prev").onclick = () => go(step - 1);
  $("next").onclick = () => go(step + 1);
  $("first").onclick = () => go(0);
  $("last").onclick = () => go(total);
  window.addEventListener("hashchange", () => { readHash(); show(); });

  // The page opens at once (graph, timeline) and fills in the states when the data is inflated.
  readHash();
  drawTimeline();
  show();
  Promise.all([inflate("trans"), inflateJSON("nodes")]).then(async ([bytes, cols]) => {
    table = cols;
    if (cols) {
      let maxId = 0;
      for (const id of cols.id) if (id > maxId) maxId = id;
      row = new Int32Array(maxId + 1).fill(-1);
      cols.id.forEach((id, r) => { row[id] = r; });
    }
    indexTransitions(bytes);
    curStep = -1;
    await show();
    document.body.dataset.ready = "1";
  }).catch((err) => { $("event-text").textContent = "could not read the page's data: " + err; });
})();
