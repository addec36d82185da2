/* graphmem graph page: one group's people, the GROUP node, derived records drawn from source to
 * owner (coloured by layer) and who talks to whom. Data: GET graph (filters as query parameters)
 * and GET records/{id}/provenance, both relative to /groups/{id}/. Drawing: Cytoscape.js,
 * vendored and served by the API. No other network access. */
(function () {
  "use strict";

  const parts = location.pathname.split("/");
  const viewAt = parts.lastIndexOf("view");
  const groupId = decodeURIComponent(parts[viewAt - 1] || "");
  const base = parts.slice(0, viewAt).join("/") + "/"; // ".../groups/<id>/"
  const KEY = "graphmem-api-key";
  const RADIUS = 270;

  const view = { ready: false, groupId, graph: null, selected: null, cy: null, loads: 0 };
  window.graphmemView = view;

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "style") node.setAttribute("style", v);
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(node.dataset, v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      if (c instanceof Node) { node.append(c); continue; }
      // Each piece of text is its own bidirectional island (<bdi>): a name or message holding
      // RIGHT-TO-LEFT OVERRIDE (U+202E) reorders only itself, never the words around it (who
      // said it, the record's arrow). An <option> holds text only.
      if (tag === "option") { node.append(String(c)); continue; }
      const island = document.createElement("bdi");
      island.textContent = String(c);
      node.append(island);
    }
    return node;
  }

  function shellArg(text) { // as a POSIX shell reads it back: a group id may hold spaces or quotes
    return /^[A-Za-z0-9@%+=:,./_-]+$/.test(text) ? text : "'" + text.replace(/'/g, "'\\''") + "'";
  }

  function short(text, n) {
    const chars = Array.from(text || "");
    return chars.length <= n ? chars.join("") : chars.slice(0, n - 1).join("").trimEnd() + "…";
  }

  function when(ts) { // as the chat gave it: local time of the conversation, with its offset
    if (!ts) return "";
    const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/.exec(ts);
    if (!m) return ts;
    return m[1] + " " + m[2] + (m[3] ? " (" + (m[3] === "Z" ? "UTC" : m[3]) + ")" : "");
  }

  function status(text, isError) {
    const s = $("status");
    s.textContent = text || "";
    s.className = isError ? "error" : "";
  }

  // ------------------------------------------------------------------ data
  async function getJSON(path) {
    for (let attempt = 0; attempt < 2; attempt++) {
      const key = sessionStorage.getItem(KEY);
      const r = await fetch(base + path, { headers: key ? { "X-API-Key": key } : {} });
      if (r.status === 401 && attempt === 0) {
        const typed = window.prompt("This graphmem API needs its key (X-API-Key):", "");
        if (typed) { sessionStorage.setItem(KEY, typed); continue; }
      }
      if (!r.ok) {
        let detail = r.statusText;
        try {
          const body = await r.json();
          detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
        } catch (e) { /* not JSON */ }
        throw new Error(r.status + ": " + detail);
      }
      return r.json();
    }
    throw new Error("401: missing or wrong API key");
  }

  function dayBound(value, end) {
    if (!value) return "";
    const [y, m, d] = value.split("-").map(Number);
    const t = end ? new Date(y, m - 1, d, 23, 59, 59, 999) : new Date(y, m - 1, d, 0, 0, 0, 0);
    return t.toISOString().replace("Z", "+00:00");
  }

  function filters() {
    const layers = Array.from(document.querySelectorAll("#f-layers input:checked")).map((i) => i.value);
    return {
      person: $("f-person").value,
      layers,
      allLayers: layers.length === document.querySelectorAll("#f-layers input").length,
      session: $("f-session").value,
      from: $("f-from").value,
      to: $("f-to").value,
      mode: document.querySelector("input[name=mode]:checked").value,
      talk: $("f-talk").checked,
    };
  }

  function graphQuery(f) {
    const q = new URLSearchParams();
    if (f.person) q.set("person", f.person);
    if (!f.allLayers) f.layers.forEach((l) => q.append("layer", l));
    if (f.session) q.set("session", f.session);
    if (f.from) q.set("from", dayBound(f.from, false));
    if (f.to) q.set("to", dayBound(f.to, true));
    q.set("mode", f.mode);
    return q;
  }

  function pageQuery(f) { // the filters in the page's own URL, so a view can be shared
    const q = new URLSearchParams();
    if (f.person) q.set("person", f.person);
    if (!f.allLayers) q.set("layer", f.layers.join(","));
    if (f.session) q.set("session", f.session);
    if (f.from) q.set("from", f.from);
    if (f.to) q.set("to", f.to);
    if (f.mode !== "head") q.set("mode", f.mode);
    if (!f.talk) q.set("talk", "0");
    return q;
  }

  // ------------------------------------------------------------------ drawing
  function initCy() {
    view.cy = cytoscape({
      container: $("cy"),
      wheelSensitivity: 0.3,
      minZoom: 0.2,
      maxZoom: 3,
      style: [
        { selector: "node", style: {
          "label": "data(label)", "text-wrap": "wrap", "text-valign": "center", "text-halign": "center",
          "font-size": 13, "color": "#ffffff", "text-outline-width": 0,
        } },
        { selector: "node[kind = 'person']", style: {
          "shape": "ellipse", "width": 78, "height": 78, "background-color": "#76B7B2",
          "border-width": 2, "border-color": "#5A9A95", "font-weight": "bold",
        } },
        { selector: "node[kind = 'group']", style: {
          "shape": "round-rectangle", "width": "data(width)", "height": 46, "background-color": "#3B3B3B",
          "font-size": 13, "text-wrap": "ellipsis", "text-max-width": 150,
        } },
        { selector: "node.focus", style: { "border-width": 5, "border-color": "#0969da" } },
        { selector: "edge", style: { "curve-style": "bezier", "target-arrow-shape": "triangle", "arrow-scale": 1.1 } },
        { selector: "edge[kind = 'record']", style: {
          "width": 3.5, "line-color": "data(colour)", "target-arrow-color": "data(colour)",
          "control-point-step-size": 46, "loop-sweep": "-50deg",
          "label": "data(label)", "font-size": 11, "color": "#1f2328",
          "text-background-color": "#ffffff", "text-background-opacity": 0.9, "text-background-padding": 2,
          "text-background-shape": "round-rectangle", "text-rotation": "autorotate",
          "text-border-color": "data(colour)", "text-border-width": 1, "text-border-opacity": 0.8,
        } },
        { selector: "edge:loop", style: { "text-rotation": "none" } },
        { selector: "edge[kind = 'record'].to-group", style: { // label near the person, clear of GROUP
          "label": "", "source-label": "data(label)", "source-text-offset": 72,
          "source-text-rotation": "autorotate", "font-size": 11, "text-wrap": "wrap", "text-max-width": 120,
        } },
        { selector: "edge[kind = 'record'][state = 'superseded']", style: { "line-style": "dashed", "opacity": 0.6 } },
        { selector: "edge[kind = 'talk']", style: {
          "width": "mapData(total, 1, 8, 1.2, 6)", "line-color": "#b9bec4", "target-arrow-color": "#b9bec4",
          "line-style": "dotted", "target-arrow-shape": "vee", "label": "data(label)", "font-size": 10,
          "color": "#8c959f", "text-background-color": "#ffffff", "text-background-opacity": 0.8,
          "control-point-step-size": 30,
        } },
        { selector: "edge:selected, edge.active", style: { "width": 7, "z-index": 99, "font-weight": "bold", "font-size": 12 } },
        { selector: ".faded", style: { "opacity": 0.15 } },
      ],
      elements: [],
    });
    view.cy.on("tap", "edge[kind = 'record']", (evt) => showRecord(evt.target.data("record")));
    view.cy.on("tap", "node", (evt) => {
      const key = evt.target.data("key");
      $("f-person").value = $("f-person").value === key ? "" : key;
      load();
    });
  }

  // Edges between two nodes bow apart (records first, then talk), and an edge whose straight
  // line would pass behind the GROUP node in the centre bows around it. Loops point up or down.
  function spreadEdges(cy, pos) {
    const pairs = new Map();
    cy.edges().forEach((e) => {
      const a = e.source().data("key"), b = e.target().data("key");
      if (a === b) { // up for the upper half of the ring, down for the lower: labels stack
        e.style("loop-direction", pos[a].y > (pos.GROUP || { y: 0 }).y + 1 ? "180deg" : "0deg");
        return;
      }
      const k = a < b ? a + "\u0000" + b : b + "\u0000" + a;
      if (!pairs.has(k)) pairs.set(k, []);
      pairs.get(k).push(e);
    });
    const centre = pos.GROUP || { x: 0, y: 0 };
    const groupNode = cy.$id("n:GROUP");
    // a quadratic curve reaches half its control distance: clear half the GROUP node + a margin
    const around = 2 * ((groupNode.nonempty() ? Number(groupNode.data("width")) / 2 : 40) + 36);
    const anchors = []; // label positions of the records to or from GROUP
    cy.edges("[kind = 'record']").forEach((e) => {
      const a = e.source().data("key"), b = e.target().data("key");
      if (a !== b && (a === "GROUP" || b === "GROUP")) {
        anchors.push({ x: (pos[a].x + pos[b].x) / 2, y: (pos[a].y + pos[b].y) / 2 });
      }
    });
    for (const edges of pairs.values()) {
      edges.sort((x, y) => (x.data("kind") === y.data("kind") ? 0 : x.data("kind") === "record" ? -1 : 1));
      const first = edges[0];
      const a = first.source().data("key") < first.target().data("key") ? first.source().data("key") : first.target().data("key");
      const b = a === first.source().data("key") ? first.target().data("key") : first.source().data("key");
      const pa = pos[a], pb = pos[b];
      let crosses = false;
      if (a !== "GROUP" && b !== "GROUP") {
        const dx = pb.x - pa.x, dy = pb.y - pa.y;
        const t = Math.max(0, Math.min(1, ((centre.x - pa.x) * dx + (centre.y - pa.y) * dy) / (dx * dx + dy * dy || 1)));
        crosses = Math.hypot(pa.x + t * dx - centre.x, pa.y + t * dy - centre.y) < 80;
      }
      let side = 1; // bow towards the side with fewer GROUP edges (whose labels sit there)
      if (crosses) {
        const len = Math.hypot(pb.x - pa.x, pb.y - pa.y) || 1;
        const n = { x: -(pb.y - pa.y) / len, y: (pb.x - pa.x) / len }; // +distance side
        const mid = { x: (pa.x + pb.x) / 2, y: (pa.y + pb.y) / 2 };
        const clearance = (s) => Math.min(Infinity, ...anchors.map((q) =>
          Math.hypot(mid.x + s * n.x * around / 2 - q.x, mid.y + s * n.y * around / 2 - q.y)));
        if (clearance(-1) > clearance(1)) side = -1;
      }
      edges.forEach((e, i) => {
        const step = Math.ceil(i / 2) * 44 * (i % 2 ? 1 : -1);
        let d = crosses ? side * (i % 2 ? -1 : 1) * (around + Math.floor(i / 2) * 60) : step;
        if (e.source().data("key") !== a) d = -d; // distances are relative to each edge's direction
        e.style({ "curve-style": "unbundled-bezier", "control-point-distances": d, "control-point-weights": 0.5 });
      });
    }
  }

  function draw(graph, f) {
    const cy = view.cy;
    const els = [];
    const pos = {};
    for (const n of graph.nodes) {
      pos[n.id] = { x: n.x * RADIUS, y: -n.y * RADIUS };
      els.push({
        group: "nodes",
        data: { id: "n:" + n.id, key: n.id, kind: n.kind, name: n.name,
                label: n.kind === "person" ? n.name + "\n" + n.messages + " msg" : n.name,
                width: Math.min(170, 40 + 8 * Array.from(n.name).length) },
        position: pos[n.id],
        classes: f.person && f.person === n.id ? "focus" : "",
      });
    }
    if (f.talk) {
      for (const t of graph.talk) {
        els.push({ group: "edges", data: {
          id: "t:" + t.source + ">" + t.target, source: "n:" + t.source, target: "n:" + t.target,
          kind: "talk", total: t.total, label: String(t.total),
        } });
      }
    }
    const labelled = graph.records.length <= 40;
    for (const r of graph.records) {
      els.push({ group: "edges", data: {
        id: "r:" + r.id, record: r.id, source: "n:" + r.source, target: "n:" + r.owner, kind: "record",
        colour: graph.layer_colours[r.layer] || "#888888", state: r.state, layer: r.layer,
        label: labelled ? short(r.content, r.owner === "GROUP" ? 44 : 34) : "",
      }, classes: r.owner === "GROUP" && r.source !== "GROUP" ? "to-group" : "" });
    }
    cy.batch(() => {
      cy.elements().remove();
      cy.add(els);
      spreadEdges(cy, pos);
    });
    cy.layout({ name: "preset", fit: true, padding: 70 }).run();
    if (view.selected) cy.$id("r:" + view.selected).addClass("active");
  }

  function listRecords(graph) {
    const list = $("records");
    list.replaceChildren();
    $("record-count").textContent = "(" + graph.records.length + ")";
    for (const r of graph.records) {
      const who = r.source === r.owner ? r.source_name + " about themselves" : r.source_name + " → " + r.owner_name;
      list.append(el("li", {
        class: r.state + (view.selected === r.id ? " active" : ""),
        style: "border-left-color:" + (graph.layer_colours[r.layer] || "#999"),
        dataset: { record: r.id },
        tabindex: "0",
        onclick: () => showRecord(r.id),
        onkeydown: (e) => { if (e.key === "Enter") showRecord(r.id); },
      },
      el("div", { class: "meta" }, who + " · " + r.label + " · " + r.utype + (r.state === "head" ? "" : " · superseded")),
      el("div", {}, r.content)));
    }
    if (!graph.records.length) {
      const anyFilter = graph.filters.person || graph.filters.layers || graph.filters.session || graph.filters.ts_from || graph.filters.ts_to;
      list.append(el("li", { class: "empty" }, anyFilter ? "No record matches the filters."
        : "No derived records yet: run `graphmem derive --group " + shellArg(groupId) + "`."));
    }
  }

  // ------------------------------------------------------------------ details
  async function showRecord(id) {
    view.selected = id;
    view.cy.edges().removeClass("active");
    view.cy.$id("r:" + id).addClass("active");
    document.querySelectorAll("#records li").forEach((li) => li.classList.toggle("active", li.dataset.record === id));
    const box = $("details");
    box.replaceChildren(el("p", { class: "hint" }, "Loading " + id + " …"));
    let p;
    try {
      p = await getJSON("records/" + encodeURIComponent(id) + "/provenance");
    } catch (e) {
      box.replaceChildren(el("p", { class: "hint" }, "Could not load " + id + ": " + e.message));
      return;
    }
    if (view.selected !== id) return; // another click came first
    const r = p.record;
    const colour = (view.graph && view.graph.layer_colours[r.layer]) || "#888";
    const label = (view.graph && view.graph.layer_labels[r.layer]) || r.layer;
    const sourceName = r.source_name || r.source;
    const ownerName = r.owner_name || r.owner;
    box.replaceChildren(
      el("div", { class: "chips" },
        el("span", { class: "chip layer", style: "background:" + colour }, label),
        el("span", { class: "chip" }, r.utype),
        el("span", { class: "chip " + r.state }, r.state)),
      el("p", { class: "content", id: "detail-content" }, r.content),
      el("p", { class: "who" }, el("b", {}, sourceName), r.source === r.owner ? " about themselves" : " about ",
        r.source === r.owner ? "" : el("b", {}, r.owner_kind === "group" ? ownerName + " (the group)" : ownerName)),
      el("dl", {},
        el("dt", {}, "time"), el("dd", {}, when(r.ts)),
        el("dt", {}, "session"), el("dd", {}, r.session || "–"),
        el("dt", {}, "record"), el("dd", {}, r.id + (r.segment ? " · segment " + r.segment : "")),
        el("dt", {}, "confidence"), el("dd", {}, Number(r.confidence).toFixed(2))),
      el("h3", {}, "Said in (" + p.messages.length + " message" + (p.messages.length === 1 ? "" : "s") + ")"),
      el("ol", { class: "messages", id: "detail-messages" }, p.messages.map((m) =>
        el("li", { dataset: { message: m.id } },
          el("div", { class: "meta" }, m.speaker + " · " + when(m.ts) + " · " + m.session + " #" + m.turn,
            m.edited ? el("span", { class: "edited", title: "the text changed after it was first stored; " +
              "the record may rest on an earlier text" }, " · edited") : null),
          el("blockquote", {}, m.text),
          m.edited ? el("div", { class: "history" }, "before the edit: ",
            m.text_history.map((t) => el("q", {}, t))) : null))),
      p.chain.length > 1 ? el("h3", {}, "History (" + p.chain.length + " states)") : null,
      p.chain.length > 1 ? el("ol", { class: "chain" }, p.chain.map((c) =>
        el("li", { class: c.id === r.id ? "current" : "", onclick: () => showRecord(c.id) },
          el("div", { class: "meta" }, (c.position + 1) + ". " + when(c.ts) + " · " + c.state + " · " + c.id),
          el("div", {}, c.content)))) : null,
    );
  }

  // ------------------------------------------------------------------ filters and loading
  function fillFilters(graph) {
    const person = $("f-person-list"); // the people shown; any other person id can be typed
    if (!person.options.length) {
      for (const n of graph.nodes) {
        person.append(el("option", { value: n.id }, n.kind === "group" ? n.name + " (group)" : n.name));
      }
    }
    const session = $("f-session");
    if (session.options.length === 1) {
      for (const s of graph.sessions) {
        session.append(el("option", { value: s.id }, s.id + " · " + (s.ts_first || "").slice(0, 10) + " · " + s.messages + " msg"));
      }
    }
    const layers = $("f-layers");
    if (!layers.querySelector("input")) {
      for (const [code, label] of Object.entries(graph.layer_labels)) {
        layers.append(el("label", {},
          el("input", { type: "checkbox", value: code, checked: true, onchange: load }),
          el("span", { class: "swatch", style: "background:" + graph.layer_colours[code] }), label));
      }
    }
  }

  function applyPageQuery() {
    const q = new URLSearchParams(location.search);
    const set = (id, v) => { if (v !== null) $(id).value = v; };
    view.initial = q;
    set("f-from", q.get("from"));
    set("f-to", q.get("to"));
    if (q.get("mode") === "full") document.querySelector("input[name=mode][value=full]").checked = true;
    if (q.get("talk") === "0") $("f-talk").checked = false;
  }

  function applyInitialSelects() { // options exist only after the first load
    const q = view.initial;
    if (!q) return false;
    view.initial = null;
    let changed = false;
    if (q.get("person")) { $("f-person").value = q.get("person"); changed = true; }
    if (q.get("session")) { $("f-session").value = q.get("session"); changed = true; }
    if (q.get("layer")) {
      const wanted = q.get("layer").split(",");
      document.querySelectorAll("#f-layers input").forEach((i) => {
        i.checked = wanted.includes(i.value) || wanted.includes(view.graph.layer_labels[i.value]);
      });
      changed = true;
    }
    return changed;
  }

  async function load() {
    const f = filters();
    const seq = ++view.loads;
    status("Loading …");
    let graph;
    try {
      if (view.graph && f.layers.length === 0) {
        graph = Object.assign({}, view.graph, { records: [] });
      } else {
        graph = await getJSON("graph?" + graphQuery(f).toString());
      }
    } catch (e) {
      status("Could not load the graph: " + e.message, true);
      $("group-name").textContent = groupId;
      return;
    }
    if (seq !== view.loads) return; // a newer request is on its way
    view.graph = graph;
    fillFilters(graph);
    if (applyInitialSelects()) { load(); return; }
    history.replaceState(null, "", location.pathname + (pageQuery(filters()).toString() ? "?" + pageQuery(filters()) : ""));
    document.title = "graphmem · " + graph.group_name;
    $("group-name").textContent = graph.group_name;
    const people = graph.nodes.filter((n) => n.kind === "person").length;
    $("counts").textContent = people + " people · " + graph.records.length + " records shown · " +
      graph.sessions.length + " sessions";
    const notice = $("notice"); // a large group: what the caps left out, and how to narrow
    notice.textContent = graph.notice || "";
    notice.hidden = !graph.notice;
    draw(graph, filters());
    listRecords(graph);
    status(graph.records.length ? "" : "No derived records to show.");
    view.ready = true;
  }

  function reset() {
    $("f-person").value = "";
    $("f-session").value = "";
    $("f-from").value = "";
    $("f-to").value = "";
    document.querySelectorAll("#f-layers input").forEach((i) => { i.checked = true; });
    document.querySelector("input[name=mode][value=head]").checked = true;
    $("f-talk").checked = true;
    load();
  }

  view.showRecord = showRecord;
  view.load = load;

  document.addEventListener("DOMContentLoaded", () => {
    if (typeof cytoscape !== "function") {
      status("Cytoscape.js did not load (static/graphmem/vendor/cytoscape.min.js).", true);
      return;
    }
    initCy();
    applyPageQuery();
    for (const id of ["f-person", "f-session", "f-from", "f-to", "f-talk"]) $(id).addEventListener("change", load);
    document.querySelectorAll("input[name=mode]").forEach((i) => i.addEventListener("change", load));
    $("f-reset").addEventListener("click", reset);
    load();
  });
})();
