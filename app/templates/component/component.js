/* The Streamlit side of the graph component (Streamlit's component message protocol, by
 * hand): draw on the first render, update on later ones without reloading vis-network, follow
 * the app's theme, and report a clicked node or edge back to the app. */
(function () {
  "use strict";
  var container = document.getElementById("g2po-graph");
  var state = null;
  var clicks = 0;
  var height = 0;
  var frameHeight = 0;

  function send(type, data) {
    window.parent.postMessage(Object.assign({isStreamlitMessage: true, type: type}, data), "*");
  }

  function onClick(params) {
    var value = null;
    if (params.nodes && params.nodes.length) {
      value = {node: params.nodes[0]};
    } else if (params.edges && params.edges.length) {
      value = {edge: params.edges[0]};
    }
    if (value !== null) {
      clicks += 1;
      value.graph_id = state.graphId;
      value.click = clicks;
      send("streamlit:setComponentValue", {value: value, dataType: "json"});
    }
  }

  /* The frame as tall as the graph and its legend (a long legend wraps to more lines). */
  function fitFrame() {
    var wrap = document.getElementById("g2po-wrap");
    var h = Math.ceil(wrap.getBoundingClientRect().height) + 6;
    if (h !== frameHeight) {
      frameHeight = h;
      send("streamlit:setFrameHeight", {height: h});
    }
  }

  function isDark(theme) {
    return theme ? theme.base === "dark" : undefined;
  }

  window.addEventListener("message", function (event) {
    if (event.source !== window.parent) { return; }
    var msg = event.data;
    if (!msg || msg.type !== "streamlit:render" || !msg.args || !msg.args.graph) { return; }
    var data = msg.args.graph;
    var received = performance.now();
    if (msg.args.height && msg.args.height !== height) {
      height = msg.args.height;
      container.style.height = height + "px";
    }
    if (state === null) {
      state = window.G2POGraph.draw(container, data, isDark(msg.theme));
      state.network.on("click", onClick);
    } else {
      state = window.G2POGraph.update(state, container, data, isDark(msg.theme));
    }
    fitFrame();
    window.g2po.receivedAt = received;  // when this graph's data arrived (for benchmarks)
  });
  window.addEventListener("resize", function () { if (state !== null) { fitFrame(); } });
  send("streamlit:componentReady", {apiVersion: 1});
})();
