/* The marks a G2PO state graph draws on top of vis-network's drawing, for graph_core.js: each
 * state's short label, cut to the room beside its node, and the critical transitions' numbers,
 * each in a box on its own edge. Loaded before graph_core.js (window.G2POMarks). */
(function () {
  "use strict";

  /* The kept labels' size (start, terminals; screen px when zoomed out), the critical
   * numbers', a state's short label's, the labels' stroke, and a node label's vertical offset
   * (canvas units) below its node, as the options set it. */
  var NODE_FONT = 14, EDGE_FONT = 12, SHORT_FONT = 11, STROKE = 3, NODE_VADJUST = -2;
  /* A critical transition's number: where along its edge it may sit (the middle first), and
   * the room (screen px) kept around it. */
  var RANK_SPOTS = [0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74, 0.2, 0.8];
  var RANK_PAD = 3;
  /* A state's short label: the widest one drawn (screen px). */
  var SHORT_MAX = 170;
  /* How far (screen px) below its node's disc vis-network draws a node's label, and the room
   * kept between two labels side by side. */
  var LABEL_DROP = 2, LABEL_GAP = 5;

  var measurer = null;

  /* Width in screen px of ``text`` drawn at ``px`` px. */
  function textWidth(text, px) {
    measurer = measurer || document.createElement("canvas").getContext("2d");
    measurer.font = px + "px sans-serif";
    return measurer.measureText(text).width;
  }

  /* Each state's short label, cut to the room it has, and where it goes: below its node or
   * above it, whichever leaves more of its words. Labels are placed one by one, the most
   * visited states first, after the kept labels (start, terminals): each as wide as it can be
   * (SHORT_MAX at most) without touching a label placed before it, another node or the
   * canvas's edge; words are cut from the end (``…``), down to the bare number, which is
   * always drawn (below its node). */
  function fitShortLabels(state, shown, keep, scale) {
    var out = {};
    if (!shown.some(function (n) { return !!n.short; })) {  // a large graph: numbers only
      shown.forEach(function (n) { out[n.id] = {text: String(n.id), vadjust: NODE_VADJUST}; });
      return out;
    }
    var network = state.network, ids = state.nodes.getIds();
    var canvas = network.body.container.getBoundingClientRect();
    var discs = ids.map(function (id) {
      var body = network.body.nodes[id], p = network.canvasToDOM({x: body.x, y: body.y});
      return {id: id, x: p.x, y: p.y, r: body.options.size * scale};
    });
    var at = {};
    discs.forEach(function (d) { at[d.id] = d; });
    var h = SHORT_FONT + 2, placed = [];
    ids.filter(function (id) { return keep[id]; }).forEach(function (id) {
      var d = at[id], w = legibleWidth(state, id), top = d.y + d.r + LABEL_DROP;
      placed.push([d.x - w / 2, top, w, NODE_FONT * 1.3 * String(state.nodes.get(id).label || "")
        .split("\n").length]);
    });
    // every number is drawn: until its label is placed, its number's box is kept free
    var reserved = {};
    shown.forEach(function (n) {
      var d = at[n.id], w = textWidth(String(n.id), SHORT_FONT);
      reserved[n.id] = [d.x - w / 2, d.y + d.r + LABEL_DROP, w, h];
    });
    shown.slice().sort(function (a, b) {
      return (network.body.nodes[b.id].options.size - network.body.nodes[a.id].options.size) ||
        (a.id - b.id);
    }).forEach(function (n) {
      var d = at[n.id], best = null;
      delete reserved[n.id];
      var taken = placed.concat(Object.keys(reserved).map(function (k) { return reserved[k]; }));
      [d.y + d.r + LABEL_DROP, d.y - d.r - LABEL_DROP - h].forEach(function (top, side) {
        var room = Math.min(SHORT_MAX, 2 * d.x, 2 * (canvas.width - d.x));
        taken.forEach(function (b) {
          if (b[1] < top + h && top < b[1] + b[3]) {
            room = Math.min(room, 2 * (Math.max(b[0] - d.x, d.x - (b[0] + b[2]), 0) -
                                       LABEL_GAP));
          }
        });
        discs.forEach(function (o) {
          if (o.id !== n.id && o.y - o.r < top + h && top < o.y + o.r) {
            room = Math.min(room, 2 * (Math.max(Math.abs(o.x - d.x) - o.r, 0) - 2));
          }
        });
        var text = fitText(n.short || String(n.id), String(n.id), room);
        if (best === null || text.length > best.text.length ||
            (text.length === best.text.length && room > best.room + 1)) {
          best = {text: text, top: top, side: side, room: room};  // a tie: the roomier side
        }
      });
      var w = textWidth(best.text, SHORT_FONT);
      placed.push([d.x - w / 2, best.top, w, h]);
      out[n.id] = {text: best.text, vadjust: best.side ?
        -(2 * d.r + 2 * LABEL_DROP + h) / scale + NODE_VADJUST : NODE_VADJUST};
    });
    return out;
  }

  /* The width (screen px) of a kept label (start, terminal) when zoomed out: its longest
   * line at NODE_FONT px. */
  function legibleWidth(state, id) {
    var n = state.nodes.get(id);
    return Math.max.apply(null, String(n.label || "").split("\n").map(function (line) {
      return textWidth(line, NODE_FONT);
    }));
  }

  /* ``text`` whole if it is at most ``room`` px wide at the short labels' size, else its
   * first words and ``…``, else ``fallback``. */
  function fitText(text, fallback, room) {
    if (textWidth(text, SHORT_FONT) <= room) { return text; }
    var words = text.split(" ");
    for (var k = words.length - 1; k >= 2; k--) {
      var head = words.slice(0, k);
      while (head.length > 1 && (head[head.length - 1] === "·" ||
                                 head[head.length - 1] === "…")) { head.pop(); }
      var cut = head.join(" ") + "…";
      if (head.length >= 2 && textWidth(cut, SHORT_FONT) <= room) { return cut; }
    }
    return fallback;
  }

  /* The critical transitions' numbers (edges with a ``rank``, not self-loops: theirs is in
   * their label), drawn on the edge itself at the first spot along it (RANK_SPOTS) where
   * the number touches no node, no node's label and no other number (parallel edges: one box,
   * ``#2 #4``); a fixed size on screen at any zoom (larger when zoomed in). Where each went is
   * kept for geometry(). */
  function drawRanks(state, ctx) {
    var network = state.network, scale = network.getScale();
    var grow = Math.max(1, 1 / scale), size = EDGE_FONT * grow, pad = RANK_PAD * grow;
    var obstacles = rankObstacles(state, scale, pad), placed = {}, boxes = [];
    ctx.save();
    ctx.font = "bold " + size + "px sans-serif";
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    rankGroups(state).forEach(function (group) {
      var item = group[0], e = state.edges.get(item.id), body = network.body.edges[item.id];
      var text = group.map(function (g) { return "#" + g.rank; }).join(" ");
      var w = ctx.measureText(text).width + 2 * pad, h = size + pad;
      var best = null, spots = rankSpots(body, w, h);
      for (var k = 0; k < spots.length; k++) {
        var p = spots[k], box = [p.x - w / 2, p.y - h / 2, w, h];
        var cost = overlaps(box, obstacles, boxes, pad);
        if (best === null || cost < best.cost) { best = {box: box, p: p, cost: cost}; }
        if (cost === 0) { break; }
      }
      pill(ctx, best.box, grow, state.dark, typeof e.color === "string" ? e.color : "#555555");
      ctx.fillStyle = state.dark ? "#e6e6e6" : "#222222";
      ctx.fillText(text, best.p.x, best.p.y + 0.5 * grow);
      boxes.push(best.box);
      group.forEach(function (g) { placed[g.id] = {box: best.box, px: size * scale}; });
    });
    ctx.restore();
    state.rankLabels = placed;
  }

  /* Where a number's box (``w`` × ``h``) may be centred (canvas units): on its edge at each
   * of RANK_SPOTS, then beside it (touching the line, either side) at the middle spots, for
   * a short edge whose line is all taken. */
  function rankSpots(body, w, h) {
    var via = body.edgeType.getViaNode ? body.edgeType.getViaNode() : undefined;
    var on = RANK_SPOTS.map(function (t) { return body.edgeType.getPoint(t, via); });
    var beside = [];
    RANK_SPOTS.slice(0, 5).forEach(function (t, k) {
      var a = body.edgeType.getPoint(Math.max(t - 0.05, 0), via);
      var b = body.edgeType.getPoint(Math.min(t + 0.05, 1), via);
      var len = Math.max(Math.hypot(b.x - a.x, b.y - a.y), 1e-9);
      var nx = -(b.y - a.y) / len, ny = (b.x - a.x) / len;  // the unit normal
      var off = (Math.abs(nx) * w + Math.abs(ny) * h) / 2;
      beside.push({x: on[k].x + nx * off, y: on[k].y + ny * off},
                  {x: on[k].x - nx * off, y: on[k].y - ny * off});
    });
    return on.concat(beside);
  }

  /* The ranked edges drawn now, grouped by the two nodes they join (best rank first): the
   * numbers of parallel edges (two actions between the same states) share one box, on the
   * best-ranked edge, as their lines share one path. */
  function rankGroups(state) {
    var groups = {}, order = [];
    (state.ranked || []).slice().sort(function (a, b) { return a.rank - b.rank; })
      .forEach(function (item) {
        var e = state.edges.get(item.id), body = state.network.body.edges[item.id];
        if (e === null || e.hidden || !body || !body.edgeType) { return; }
        var key = Math.min(e.from, e.to) + "|" + Math.max(e.from, e.to);
        if (!groups[key]) { groups[key] = []; order.push(key); }
        groups[key].push(item);
      });
    return order.map(function (key) { return groups[key]; });
  }

  /* What a number must keep clear of (canvas units): every node's disc and every node
   * label drawn. */
  function rankObstacles(state, scale, pad) {
    var discs = [], labels = [];
    state.nodes.getIds().forEach(function (id) {
      var body = state.network.body.nodes[id];
      if (!body) { return; }
      discs.push([body.x, body.y, body.options.size + pad]);
      var label = body.labelModule;
      if (label && label.size && body.options.label &&
          label.fontOptions.size * scale >= body.options.scaling.label.drawThreshold - 1) {
        labels.push([label.size.left, label.size.top + (label.fontOptions.vadjust || 0),
                     label.size.width, label.size.height]);
      }
    });
    return {discs: discs, labels: labels};
  }

  /* How many obstacles (discs, labels, numbers placed before) a box touches. */
  function overlaps(box, obstacles, placed, pad) {
    var n = 0;
    obstacles.discs.forEach(function (d) {
      var nx = Math.min(Math.max(d[0], box[0]), box[0] + box[2]);
      var ny = Math.min(Math.max(d[1], box[1]), box[1] + box[3]);
      if ((nx - d[0]) * (nx - d[0]) + (ny - d[1]) * (ny - d[1]) < d[2] * d[2]) { n++; }
    });
    obstacles.labels.concat(placed).forEach(function (b) {
      if (box[0] < b[0] + b[2] + pad && b[0] < box[0] + box[2] + pad &&
          box[1] < b[1] + b[3] + pad && b[1] < box[1] + box[3] + pad) { n++; }
    });
    return n;
  }

  /* A rounded box on the edge, outlined in the edge's colour, for a number to sit in. */
  function pill(ctx, box, grow, dark, color) {
    var r = Math.min(box[3] / 2, 6 * grow), x = box[0], y = box[1], w = box[2], h = box[3];
    ctx.beginPath();
    ctx.moveTo(x + r, y);
    ctx.arcTo(x + w, y, x + w, y + h, r);
    ctx.arcTo(x + w, y + h, x, y + h, r);
    ctx.arcTo(x, y + h, x, y, r);
    ctx.arcTo(x, y, x + w, y, r);
    ctx.closePath();
    ctx.fillStyle = dark ? "#0e1117" : "#ffffff";
    ctx.fill();
    ctx.lineWidth = 1.5 * grow;
    ctx.strokeStyle = color;
    ctx.stroke();
  }

  /* The edges whose number drawRanks draws. */
  function rankedEdges(data) {
    return data.edges.filter(function (e) { return e.rank && e.from !== e.to; })
      .map(function (e) { return {id: e.id, rank: e.rank}; });
  }

  window.G2POMarks = {fitShortLabels: fitShortLabels, legibleWidth: legibleWidth,
                      drawRanks: drawRanks, rankedEdges: rankedEdges, NODE_FONT: NODE_FONT,
                      EDGE_FONT: EDGE_FONT, SHORT_FONT: SHORT_FONT, STROKE: STROKE,
                      NODE_VADJUST: NODE_VADJUST};
})();
