/* Draws a G2PO state graph with vis-network; shared by the standalone page and the app's
 * component. Log text arrives as JSON strings; tooltips and the legend are DOM elements filled
 * with textContent, so nothing from a log is ever parsed as HTML. */
(function () {
  "use strict";

  /* Labels stay legible: a graph opens whole when its 14 px labels stay >= 10 px on screen
   * (this scale); else on its start and critical transitions, whatever the scale. */
  var READABLE_SCALE = 0.72;
  /* Room (screen px) left around a framed view for the labels of the nodes at its edges. */
  var PAD_X = 60, PAD_Y = 40;
  /* The labels that stay their size on screen at any zoom (data.legible): the start and
   * terminal nodes' labels (marks.NODE_FONT px) and the critical transitions' numbers. */
  var marks = window.G2POMarks;
  var NODE_FONT = marks.NODE_FONT, EDGE_FONT = marks.EDGE_FONT, STROKE = marks.STROKE;
  var NODE_VADJUST = marks.NODE_VADJUST;
  /* A state's short label (marks.SHORT_FONT px on screen), when its full label is too long for
   * the zoom: shown while the drawing's rows (ROW_GAP canvas units apart, the layout's dy) are
   * SHORT_ROOM px apart. */
  var SHORT_FONT = marks.SHORT_FONT, ROW_GAP = 95, SHORT_ROOM = 20;
  /* The first view shows the whole graph while its rows stay this far apart on screen (px):
   * every state then shows at least its number. */
  var WHOLE_ROOM = 22;
  /* Points per arc when a view frames the edges' arcs; a view keeps the critical arcs whole
   * unless that shrinks it below this share of the scale that frames their nodes alone. */
  var ARC_SAMPLES = 8, ARC_SHRINK = 0.75;

  function textTip(text) {
    var div = document.createElement("div");
    div.className = "g2po-tip";
    div.textContent = text;
    return div;
  }

  function withTips(items) {
    return items.map(function (item) {
      var copy = Object.assign({}, item);
      if (typeof copy.title === "string") { copy.title = textTip(copy.title); }
      return copy;
    });
  }

  function markDrawn(state, container) {
    state.network.once("afterDrawing", function () {
      window.g2po.drawn = true;
      window.g2po.drawnAt = performance.now();
      container.setAttribute("data-drawn", "1");
    });
  }

  function expose(state, data, container) {
    container.setAttribute("data-node-count", String(data.nodes.length));
    container.setAttribute("data-edge-count", String(data.edges.length));
    container.setAttribute("data-graph-id", data.graph_id || "");
    document.title = data.title || "G2PO state graph";
    window.g2po = {network: state.network, nodes: state.nodes, edges: state.edges,
                   graphId: data.graph_id || "", drawn: false, drawnAt: null,
                   dark: state.dark, selected: data.selected || {nodes: [], edges: []},
                   legible: data.legible || {nodes: [], edges: []},
                   legibleGrow: state.legibleGrow, layoutAspect: state.layoutAspect,
                   allEdges: state.allEdges,
                   geometry: function () { return geometry(state); }};
  }

  /* What is drawn, in canvas units, for checks from outside (the browser tests, the layout
   * benchmark): each node's centre, radius, label text and its box and size on screen (0 when
   * not drawn), each edge's path (sampled as vis-network draws it), whether it is at full
   * strength, its critical rank (0: none) and its label's box; the view (centre, scale) and
   * the canvas's size in px. */
  function geometry(state) {
    var network = state.network, scale = network.getScale();
    var nodes = state.nodes.get().map(function (n) {
      var body = network.body.nodes[n.id], pos = network.getPositions([n.id])[n.id];
      var label = body.labelModule, px = label.fontOptions.size * scale;
      var drawn = !!n.label && px >= body.options.scaling.label.drawThreshold - 1;
      var size = label.size;
      return {id: n.id, x: pos.x, y: pos.y, r: body.options.size, shape: n.shape,
              labelPx: drawn ? px : 0, hasLabel: !!n.label, label: n.label || "",
              labelBox: drawn ? [size.left, size.top + (label.fontOptions.vadjust || 0),
                                 size.width, size.height] : null};
    });
    var edges = state.edges.get().map(function (e) {
      var body = network.body.edges[e.id], points = [];
      if (e.from !== e.to && body && body.edgeType && !e.hidden) {
        var via = body.edgeType.getViaNode ? body.edgeType.getViaNode() : undefined;
        for (var k = 0; k <= 23; k++) {
          var p = body.edgeType.getPoint(k / 23, via);
          points.push([p.x, p.y]);
        }
      }
      var px = body ? body.labelModule.fontOptions.size * scale : 0;
      var drawn = !!e.label && body && px >= body.options.scaling.label.drawThreshold - 1;
      var placed = (state.rankLabels || {})[e.id];
      return {id: e.id, from: e.from, to: e.to, points: points, strong: !e.quiet || state.allEdges,
              labelPx: placed ? placed.px : (drawn ? px : 0), hidden: !!e.hidden,
              critical: e.rank || 0,
              labelBox: placed ? placed.box : (drawn ? visLabelBox(body) : null)};
    });
    var box = network.body.container.getBoundingClientRect();
    return {scale: scale, width: box.width, height: box.height, nodes: nodes, edges: edges,
            view: network.getViewPosition()};
  }

  /* The box (canvas units: left, top, width, height) around an edge label vis-network drew:
   * a self-loop's as drawn; another edge's above its middle, turned along the edge. */
  function visLabelBox(body) {
    var size = body.labelModule.size;
    if (body.fromId === body.toId) { return [size.left, size.top, size.width, size.height]; }
    var via = body.edgeType.getViaNode ? body.edgeType.getViaNode() : undefined;
    var mid = body.edgeType.getPoint(0.5, via);
    var angle = Math.atan2(body.from.y - body.to.y, body.from.x - body.to.x);
    if ((angle < -1 && body.from.x - body.to.x < 0) ||
        (angle > 0 && body.from.x - body.to.x < 0)) { angle += Math.PI; }
    var up = 4 + size.height / 2, cx = mid.x + up * Math.sin(angle),
        cy = mid.y - up * Math.cos(angle);
    var hw = Math.abs(Math.cos(angle)) * size.width / 2 + Math.abs(Math.sin(angle)) * size.height / 2;
    var hh = Math.abs(Math.sin(angle)) * size.width / 2 + Math.abs(Math.cos(angle)) * size.height / 2;
    return [cx - hw, cy - hh, 2 * hw, 2 * hh];
  }

  /* "All edges": the quiet edges (beyond the first FULL_EDGES) at full strength, or quiet
   * again; a quiet edge, or one faded off a highlighted path, that no curve could lead
   * around the nodes (blocked in this drawing) is drawn only then. */
  function showAllEdges(state, all) {
    state.allEdges = !!all;
    var quiet = state.edges.get({filter: function (e) { return !!e.quiet; }});
    var faded = state.edges.get({filter: function (e) { return !!e.faded; }});
    var blocked = state.blocked || {};
    state.edges.update(quiet.map(function (e) {
      return all ? {id: e.id, color: e.fullColor, width: e.fullWidth, hidden: false}
        : {id: e.id, color: e.quietColor, width: e.quietWidth, hidden: !!blocked[e.id]};
    }).concat(faded.map(function (e) {
      return {id: e.id, hidden: !all && !!blocked[e.id]};
    })));
    var button = document.getElementById("g2po-all");
    if (button) {
      button.style.display = quiet.length ? "" : "none";
      button.textContent = all ? "Fewer edges" : "All " + state.edges.length + " edges";
      button.title = all ? "draw the rarely travelled edges pale again"
        : quiet.length + " rarely travelled edges are drawn pale: draw every edge at full strength";
    }
    if (window.g2po) { window.g2po.allEdges = state.allEdges; }
  }

  function fmt(x) {
    if (typeof x !== "number" || !isFinite(x)) { return String(x); }
    var a = Math.abs(x);
    return a !== 0 && (a < 0.01 || a >= 1e4) ? x.toExponential(1) : String(+x.toFixed(2));
  }

  function span(parent, cls, text) {
    var s = document.createElement("span");
    if (cls) { s.className = cls; }
    if (text) { s.textContent = text; }
    parent.appendChild(s);
    return s;
  }

  /* The legend, built from the data's numbers (never from HTML strings). */
  function legend(data) {
    var box = document.getElementById("g2po-legend");
    if (!box || !data.legend) { return; }
    var lg = data.legend;
    box.textContent = "";
    span(box, "", "node colour V (" + lg.value.scale + "): " + fmt(lg.value.lo));
    span(box, "bar value");
    span(box, "", fmt(lg.value.hi) + " · size = visits · edge colour " + lg.edge.name + ": " +
         fmt(lg.edge.lo));
    span(box, "bar edge");
    span(box, "", fmt(lg.edge.hi) + " · width = count · ");
    if (lg.critical) { span(box, "", "#1…#" + lg.critical + " largest |TD error| · "); }
    span(box, "", "×n self-loop count · ◆ start · ");
    span(box, "g2po-star", "★");
    span(box, "", " success · ");
    span(box, "g2po-square", "■");
    span(box, "", " failure · ");
    if (lg.truncated) {
      span(box, "g2po-tri", "▼");
      span(box, "", " truncated (valued as failure) · ");
    }
    span(box, "", "dashed = invalid action");
    if (lg.quiet) {
      span(box, "", " · pale: " + lg.quiet + " least travelled edges");
    }
    (lg.assumed || []).forEach(function (note) {
      span(box, "g2po-assumed", " · * assumed: " + note + " (invalid counts, A)");
    });
  }

  /* Follow the page's theme: label and background colours of the canvas and the page. */
  function applyTheme(state, dark) {
    state.dark = !!dark;
    document.body.classList.toggle("g2po-dark", state.dark);
    var text = state.dark ? "#e6e6e6" : "#222222";
    var stroke = state.dark ? "#0e1117" : "#ffffff";
    state.network.setOptions({
      nodes: {font: {color: text, strokeWidth: 3, strokeColor: stroke}},
      edges: {font: {color: text, strokeColor: stroke}},
    });
    if (window.g2po) { window.g2po.dark = state.dark; }
  }

  /* The box around some nodes (and ``points``: the arcs of edges that must stay in view),
   * and the view (centre, scale at most ``most``) that shows it in the canvas with room for
   * labels at its edges: PAD_X a side, or more where a kept label is wider (``pads``: px
   * needed left and right of the box). */
  function frameOf(network, ids, most, points, pads) {
    var pos = network.getPositions(ids);
    var keys = Object.keys(pos);
    if (!keys.length) { return null; }
    var x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    keys.map(function (k) { return pos[k]; }).concat(points || []).forEach(function (p) {
      x0 = Math.min(x0, p.x); x1 = Math.max(x1, p.x);
      y0 = Math.min(y0, p.y); y1 = Math.max(y1, p.y);
    });
    var box = network.body.container.getBoundingClientRect();
    var left = Math.max(PAD_X, pads ? pads.left : 0), right = Math.max(PAD_X, pads ? pads.right : 0);
    var sx = Math.max(box.width - left - right, 40) / Math.max(x1 - x0, 1);
    var sy = Math.max(box.height - 2 * PAD_Y, 40) / Math.max(y1 - y0, 1);
    var scale = Math.min(sx, sy, most);
    // the box's left edge `left` px in (its middle when it is narrower than the room)
    var spare = Math.max(box.width - left - right - (x1 - x0) * scale, 0);
    return {x: x0 + (box.width / 2 - left - spare / 2) / scale, y: (y0 + y1) / 2, scale: scale};
  }

  /* The room (px) the kept labels (start, terminals) need left and right of a framed box:
   * half the widest of those in the left half of the drawing, and of those in the right. */
  function legiblePads(state) {
    var ids = (state.legible || {nodes: []}).nodes.filter(function (id) {
      return state.nodes.get(id) !== null;
    });
    var pos = state.network.getPositions(ids), xs = ids.map(function (id) { return pos[id].x; });
    var middle = (Math.min.apply(null, xs) + Math.max.apply(null, xs)) / 2, pads = {left: 0, right: 0};
    ids.forEach(function (id, i) {
      var half = marks.legibleWidth(state, id) / 2 + 6, side = xs[i] <= middle ? "left" : "right";
      pads[side] = Math.max(pads[side], half);
    });
    return pads;
  }

  /* frameOf the nodes ``ids`` with the arcs of the edges ``edges`` whole on screen, unless
   * that costs more than a quarter of the scale (an arc over a whole band): then the nodes
   * alone, labels legible, an arc leaving the canvas. */
  function frameWithArcs(state, ids, most, edges) {
    var network = state.network, pad = legiblePads(state);
    var bare = frameOf(network, ids, most, [], pad);
    var arcs = frameOf(network, ids, most, arcPoints(state, edges), pad);
    return bare !== null && arcs !== null && arcs.scale < ARC_SHRINK * bare.scale ? bare : arcs;
  }

  function moveToFrame(network, frame) {
    network.moveTo({position: {x: frame.x, y: frame.y}, scale: frame.scale, animation: false});
  }

  /* Points along the drawn arcs of some edges (not self-loops, not hidden): a view that frames
   * them keeps each arc whole on screen. */
  function arcPoints(state, ids) {
    var points = [];
    ids.forEach(function (id) {
      var e = state.edges.get(id), body = state.network.body.edges[id];
      if (e === null || e.hidden || e.from === e.to || !body || !body.edgeType) { return; }
      var via = body.edgeType.getViaNode ? body.edgeType.getViaNode() : undefined;
      for (var k = 1; k < ARC_SAMPLES; k++) {
        var p = body.edgeType.getPoint(k / ARC_SAMPLES, via);
        points.push({x: p.x, y: p.y});
      }
    });
    return points;
  }

  /* The edges as routed for ``layout`` (one of data.layouts): bent around the nodes of that
   * drawing; a quiet edge no curve clears waits for "All edges". */
  function applyRoutes(state, layout) {
    state.blocked = {};
    if (!layout || !layout.smooth) { return; }
    var routed = [];
    state.edgeOrder.forEach(function (id, i) {
      if (layout.blocked && layout.blocked[i]) { state.blocked[id] = true; }
      if (layout.smooth[i] && layout.smooth[i].enabled !== undefined) {
        routed.push({id: id, smooth: layout.smooth[i]});
      }
    });
    state.edges.update(routed);
    showAllEdges(state, state.allEdges);
  }

  function currentLayout(state) {
    return (state.layouts || []).filter(function (l) {
      return l.aspect === state.layoutAspect;
    })[0];
  }

  /* Of the drawings the data offers (data.layouts: the columns wrapped into bands for
   * several widths / heights), the one closest to the canvas's shape. */
  function chooseLayout(state) {
    var layouts = state.layouts || [];
    if (layouts.length < 2) { return; }
    var box = state.network.body.container.getBoundingClientRect();
    if (!box.width || !box.height) { return; }
    var want = Math.log(box.width / box.height), best = layouts[0];
    layouts.forEach(function (l) {
      if (Math.abs(Math.log(l.aspect) - want) < Math.abs(Math.log(best.aspect) - want)) {
        best = l;
      }
    });
    if (best.aspect === state.layoutAspect) { return; }
    state.layoutAspect = best.aspect;
    state.nodes.update(state.nodeOrder.map(function (id, i) {
      return {id: id, x: best.x[i], y: best.y[i]};
    }));
    applyRoutes(state, best);
    if (window.g2po) { window.g2po.layoutAspect = best.aspect; }
  }

  /* Where the first view looks: the start nodes and both ends of every critical transition. */
  function focusIds(state) {
    var lg = state.legible || {nodes: [], edges: []};
    var ids = lg.nodes.filter(function (id) {
      var n = state.nodes.get(id);
      return n !== null && n.shape === "diamond";
    });
    lg.edges.forEach(function (id) {
      var e = state.edges.get(id);
      if (e !== null) { ids.push(e.from, e.to); }
    });
    return {ids: ids, critical: lg.edges.length > 0};
  }

  /* The first view: the whole graph when its labels stay legible, or its states' numbers
   * (rows WHOLE_ROOM px apart); else a frame around the
   * start and the critical transitions (their labels kept legible); with no critical
   * transition, the start of the graph (its start nodes at the left) at a legible scale. */
  function initialView(state) {
    var network = state.network;
    chooseLayout(state);
    var critical = (state.legible || {edges: []}).edges;
    var all = frameWithArcs(state, state.nodes.getIds(), 1.0, critical);
    if (all === null) { return; }
    var focus = focusIds(state);
    if (all.scale >= READABLE_SCALE || all.scale * ROW_GAP >= WHOLE_ROOM) {
      moveToFrame(network, all);
    } else if (focus.critical) {
      moveToFrame(network, frameWithArcs(state, focus.ids, 1.0, critical));
    } else {
      var pos = network.getPositions(focus.ids.length ? focus.ids : undefined);
      var minX = Infinity, ys = [];
      Object.keys(pos).forEach(function (k) { minX = Math.min(minX, pos[k].x); });
      Object.keys(pos).forEach(function (k) { if (pos[k].x === minX) { ys.push(pos[k].y); } });
      var y = ys.reduce(function (a, b) { return a + b; }, 0) / Math.max(ys.length, 1);
      var box = network.body.container.getBoundingClientRect();
      var x = minX + (box.width / 2 - 80) / READABLE_SCALE;
      network.moveTo({position: {x: x, y: y}, scale: READABLE_SCALE, animation: false});
    }
    keepLegible(state);
  }

  function fitAll(state) {
    chooseLayout(state);
    var all = frameWithArcs(state, state.nodes.getIds(), 1.0,
                            (state.legible || {edges: []}).edges);
    if (all !== null) { moveToFrame(state.network, all); }
    keepLegible(state);
  }

  /* The start and terminal labels and the critical transitions' numbers keep their size on
   * screen when the view zooms out (fonts grow in canvas units as the scale shrinks). */
  function keepLegible(state) {
    var lg = state.legible || {nodes: [], edges: []};
    var grow = Math.round(Math.max(1, 1 / state.network.getScale()) * 20) / 20;
    if (grow === state.legibleGrow) { return; }
    state.legibleGrow = grow;
    var stroke = STROKE * grow;
    state.nodes.update(lg.nodes.filter(function (id) { return state.nodes.get(id) !== null; })
      .map(function (id) {
        return {id: id, font: {size: NODE_FONT * grow, strokeWidth: stroke}};
      }));
    state.edges.update(lg.edges.filter(function (id) { return state.edges.get(id) !== null; })
      .map(function (id) {
        return {id: id, font: {size: EDGE_FONT * grow, strokeWidth: stroke, align: "top"}};
      }));
    shortLabels(state, grow);
    if (window.g2po) { window.g2po.legibleGrow = grow; }
  }

  /* Too far out for the states' labels (they would be under 10 px): each state shows its
   * short label (its number and words, cut to the room beside it in its row), at a legible
   * size, while the rows of the drawing leave room for it; further out, none (hover shows
   * them). Zooming in brings the labels back. */
  function shortLabels(state, grow) {
    var scale = state.network.getScale();
    var mode = grow * READABLE_SCALE <= 1.0001 ? "full" :
      (ROW_GAP * scale >= SHORT_ROOM ? "short" : "none");
    if (mode === state.labelMode && mode !== "short") { return; }
    state.labelMode = mode;
    var keep = {};
    (state.legible || {nodes: []}).nodes.forEach(function (id) { keep[id] = true; });
    var shown = (state.stateLabels || []).filter(function (n) {
      return !keep[n.id] && state.nodes.get(n.id) !== null;
    });
    var fitted = mode === "short" ? marks.fitShortLabels(state, shown, keep, scale) : {};
    var updates = shown.map(function (n) {
      var f = fitted[n.id];
      return mode === "short" ?
        {id: n.id, label: f.text, font: {size: SHORT_FONT / scale, strokeWidth: STROKE * grow,
                                         vadjust: f.vadjust}} :
        {id: n.id, label: n.label, font: {size: NODE_FONT, strokeWidth: STROKE,
                                          vadjust: NODE_VADJUST}};
    }).filter(function (u) {
      var now = state.nodes.get(u.id);
      return now.label !== u.label || !now.font || now.font.size !== u.font.size ||
        now.font.vadjust !== u.font.vadjust;
    });
    if (updates.length) { state.nodes.update(updates); }
    if (window.g2po) { window.g2po.labelMode = mode; }
  }

  /* The states' own labels, kept to come back to when the view zooms in, and their short
   * forms (``short``: one line, no function words). */
  function stateLabels(data) {
    return data.nodes.filter(function (n) { return n.shape === "dot" || n.shape === "diamond"; })
      .map(function (n) { return {id: n.id, label: n.label, short: n.short}; });
  }

  /* vis-network hides a tooltip only on a later mouse move over the canvas: when the mouse
   * leaves the graph, hide it (and the one about to open) at once. */
  function hideTooltip(network) {
    var handler = network.interactionHandler;
    if (handler) {
      if (handler.popupTimer !== undefined) {
        clearInterval(handler.popupTimer);
        handler.popupTimer = undefined;
      }
      if (handler.popup) { handler.popup.hide(); }
    }
    Array.prototype.forEach.call(document.querySelectorAll("div.vis-tooltip"), function (tip) {
      tip.style.visibility = "hidden";
    });
  }

  /* Keep the view when the frame is resized, until the user zooms or drags. */
  function followSize(state, container) {
    state.network.on("zoom", function () { state.userMoved = true; keepLegible(state); });
    state.network.on("dragEnd", function () { state.userMoved = true; });
    container.addEventListener("mouseleave", function () { hideTooltip(state.network); });
    var refit = function () {
      if (!state.userMoved) { initialView(state); }
    };
    if (window.ResizeObserver) {
      new ResizeObserver(function () {
        // vis-network polls its size once a second: take the new size now, then frame
        state.network.setSize("100%", "100%");
        state.network.redraw();
        refit();
      }).observe(container);
    } else {
      window.addEventListener("resize", refit);
    }
    var button = document.getElementById("g2po-fit");
    if (button) {
      button.addEventListener("click", function () {
        state.userMoved = true;
        fitAll(state);
      });
    }
    var all = document.getElementById("g2po-all");
    if (all) {
      all.addEventListener("click", function () { showAllEdges(state, !state.allEdges); });
    }
  }

  /* Select what the app selected (a step row's node and edge) and bring it into view. */
  function select(state, data) {
    var sel = data.selected || {nodes: [], edges: []};
    var nodes = sel.nodes.filter(function (id) { return state.nodes.get(id) !== null; });
    var edges = sel.edges.filter(function (id) { return state.edges.get(id) !== null; });
    state.network.setSelection({nodes: nodes, edges: edges}, {unselectAll: true,
                                                              highlightEdges: false});
    var key = JSON.stringify([nodes, edges]);
    if ((nodes.length || edges.length) && key !== state.lastSelection) {
      bringIntoView(state, nodes, edges);
      state.userMoved = true;
      keepLegible(state);
    }
    state.lastSelection = key;
    window.g2po.selected = {nodes: nodes, edges: edges};
  }

  /* A new selection in view at a legible scale: the selected node, and both ends of the
   * selected edge with its arc (zoomed out as far as it takes to show them together). The
   * view stays when all of it is on screen already at that scale. */
  function bringIntoView(state, nodes, edges) {
    var network = state.network, ids = nodes.slice();
    edges.forEach(function (id) {
      var e = state.edges.get(id);
      ids.push(e.from, e.to);
    });
    var points = arcPoints(state, edges), pos = network.getPositions(ids);
    var box = network.body.container.getBoundingClientRect();
    var shown = Object.keys(pos).map(function (k) { return pos[k]; }).concat(points)
      .every(function (p) {
        var d = network.canvasToDOM(p);
        return d.x >= 0 && d.x <= box.width && d.y >= 0 && d.y <= box.height;
      });
    if (shown && network.getScale() >= READABLE_SCALE) { return; }
    var frame = frameOf(network, ids, Math.max(network.getScale(), READABLE_SCALE), points);
    if (frame !== null) { moveToFrame(network, frame); }
  }

  function prefersDark() {
    return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
  }

  /* Draw ``data`` ({nodes, edges, options, legend, selected, graph_id, title}) into
   * ``container``; ``dark``: the page's theme (undefined: the browser's preference). */
  function draw(container, data, dark) {
    var state = {nodes: new vis.DataSet(withTips(data.nodes)),
                 edges: new vis.DataSet(withTips(data.edges)), graphId: data.graph_id,
                 userMoved: false, lastSelection: "", legible: data.legible,
                 legibleGrow: 1, layouts: data.layouts, layoutAspect: null,
                 nodeOrder: data.nodes.map(function (n) { return n.id; }),
                 edgeOrder: data.edges.map(function (e) { return e.id; }), allEdges: false,
                 stateLabels: stateLabels(data), labelMode: null,
                 ranked: marks.rankedEdges(data), rankLabels: {}};
    if (data.layouts && data.layouts.length) { state.layoutAspect = data.layouts[0].aspect; }
    state.blocked = {};
    (data.layouts && data.layouts.length ? data.layouts[0].blocked || [] : [])
      .forEach(function (b, i) { if (b) { state.blocked[state.edgeOrder[i]] = true; } });
    state.network = new vis.Network(container, {nodes: state.nodes, edges: state.edges},
                                    data.options);
    state.network.on("afterDrawing", function (ctx) { marks.drawRanks(state, ctx); });
    expose(state, data, container);
    applyTheme(state, dark === undefined ? prefersDark() : dark);
    legend(data);
    markDrawn(state, container);
    showAllEdges(state, false);
    initialView(state);
    select(state, data);
    followSize(state, container);
    return state;
  }

  /* Show new data: the same graph (another highlight or selection) keeps the view; another
   * graph is drawn afresh. */
  function update(state, container, data, dark) {
    if (dark !== undefined && !!dark !== state.dark) { applyTheme(state, dark); }
    state.legible = data.legible;
    if (state.graphId === data.graph_id) {
      // the same graph: new colours and marks, the positions drawn stay
      state.nodes.update(withTips(data.nodes).map(function (n) {
        delete n.x;
        delete n.y;
        return n;
      }));
      state.edges.update(withTips(data.edges));
      state.ranked = marks.rankedEdges(data);
      applyRoutes(state, currentLayout(state));
      state.legibleGrow = 1;  // the update brought the base fonts and labels back
      state.labelMode = null;
      keepLegible(state);
      expose(state, data, container);
      legend(data);
      select(state, data);
      window.g2po.drawn = true;
      window.g2po.drawnAt = performance.now();
      state.network.redraw();
      return state;
    }
    state.nodes = new vis.DataSet(withTips(data.nodes));
    state.edges = new vis.DataSet(withTips(data.edges));
    state.graphId = data.graph_id;
    state.userMoved = false;
    state.lastSelection = "";
    state.legibleGrow = 1;
    state.layouts = data.layouts;
    state.nodeOrder = data.nodes.map(function (n) { return n.id; });
    state.edgeOrder = data.edges.map(function (e) { return e.id; });
    state.allEdges = false;
    state.stateLabels = stateLabels(data);
    state.ranked = marks.rankedEdges(data);
    state.labelMode = null;
    state.layoutAspect = data.layouts && data.layouts.length ? data.layouts[0].aspect : null;
    state.blocked = {};
    (data.layouts && data.layouts.length ? data.layouts[0].blocked || [] : [])
      .forEach(function (b, i) { if (b) { state.blocked[state.edgeOrder[i]] = true; } });
    state.network.setOptions(data.options);
    applyTheme(state, state.dark);
    state.network.setData({nodes: state.nodes, edges: state.edges});
    expose(state, data, container);
    legend(data);
    markDrawn(state, container);
    showAllEdges(state, false);
    initialView(state);
    select(state, data);
    return state;
  }

  window.G2POGraph = {draw: draw, update: update};
})();
