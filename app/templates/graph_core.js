/* Draws a G2PO state graph with vis-network; shared by the standalone page and the app's
 * component. Log text arrives as JSON strings; tooltips and the legend are DOM elements filled
 * with textContent, so nothing from a log is ever parsed as HTML. */
(function () {
  "use strict";

  /* Labels stay legible: the first view is never zoomed out below this scale (a 14 px label
   * stays >= 10 px on screen); "Fit all" shows the whole graph whatever the scale. */
  var READABLE_SCALE = 0.72;

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
                   dark: state.dark, selected: data.selected || {nodes: [], edges: []}};
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

  /* The first view: the whole graph when its labels stay legible, else the start of the
   * graph (the left-most column) at a legible scale. */
  function initialView(network, nodes) {
    network.fit({animation: false});
    var scale = network.getScale() * 0.9;
    if (scale >= READABLE_SCALE || nodes.length === 0) {
      network.moveTo({scale: scale, animation: false});
      return;
    }
    var pos = network.getPositions();
    var minX = Infinity, ys = [];
    Object.keys(pos).forEach(function (k) { minX = Math.min(minX, pos[k].x); });
    Object.keys(pos).forEach(function (k) { if (pos[k].x === minX) { ys.push(pos[k].y); } });
    var y = ys.reduce(function (a, b) { return a + b; }, 0) / Math.max(ys.length, 1);
    var box = network.body.container.getBoundingClientRect();
    var x = minX + (box.width / 2 - 80) / READABLE_SCALE;
    network.moveTo({position: {x: x, y: y}, scale: READABLE_SCALE, animation: false});
  }

  function fitAll(network) {
    network.fit({animation: false});
    network.moveTo({scale: network.getScale() * 0.9, animation: false});
  }

  /* Keep the view when the frame is resized, until the user zooms or drags. */
  function followSize(state, container) {
    state.network.on("zoom", function () { state.userMoved = true; });
    state.network.on("dragEnd", function () { state.userMoved = true; });
    var refit = function () {
      if (!state.userMoved) { initialView(state.network, state.nodes.getIds()); }
    };
    if (window.ResizeObserver) {
      new ResizeObserver(function () { state.network.redraw(); refit(); }).observe(container);
    } else {
      window.addEventListener("resize", refit);
    }
    var button = document.getElementById("g2po-fit");
    if (button) {
      button.addEventListener("click", function () {
        state.userMoved = true;
        fitAll(state.network);
      });
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
    if (nodes.length && key !== state.lastSelection) {
      state.network.focus(nodes[0], {scale: Math.max(state.network.getScale(),
                                                     READABLE_SCALE), animation: false});
      state.userMoved = true;
    }
    state.lastSelection = key;
    window.g2po.selected = {nodes: nodes, edges: edges};
  }

  function prefersDark() {
    return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
  }

  /* Draw ``data`` ({nodes, edges, options, legend, selected, graph_id, title}) into
   * ``container``; ``dark``: the page's theme (undefined: the browser's preference). */
  function draw(container, data, dark) {
    var state = {nodes: new vis.DataSet(withTips(data.nodes)),
                 edges: new vis.DataSet(withTips(data.edges)), graphId: data.graph_id,
                 userMoved: false, lastSelection: ""};
    state.network = new vis.Network(container, {nodes: state.nodes, edges: state.edges},
                                    data.options);
    expose(state, data, container);
    applyTheme(state, dark === undefined ? prefersDark() : dark);
    legend(data);
    markDrawn(state, container);
    initialView(state.network, data.nodes);
    select(state, data);
    followSize(state, container);
    return state;
  }

  /* Show new data: the same graph (another highlight or selection) keeps the view; another
   * graph is drawn afresh. */
  function update(state, container, data, dark) {
    if (dark !== undefined && !!dark !== state.dark) { applyTheme(state, dark); }
    if (state.graphId === data.graph_id) {
      state.nodes.update(withTips(data.nodes));
      state.edges.update(withTips(data.edges));
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
    state.network.setOptions(data.options);
    applyTheme(state, state.dark);
    state.network.setData({nodes: state.nodes, edges: state.edges});
    expose(state, data, container);
    legend(data);
    markDrawn(state, container);
    initialView(state.network, data.nodes);
    select(state, data);
    return state;
  }

  window.G2POGraph = {draw: draw, update: update};
})();
