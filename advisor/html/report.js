// Renders the ptadvise HTML report from the embedded `check --format json` document. Only presentation:
// every figure comes from the document; nothing here analyses the trace. Charts are Apache ECharts
// (inlined above this script), drawn with its SVG renderer.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ptadvise-data").textContent);
  var app = document.getElementById("app");
  var charts = [];
  var IDLE_CAUSES = ["sync", "data-loader", "launch-bound", "cpu-work", "untraced"];
  var COLORS = {
    compute: "#3f7be0", communication: "#8e5bd0", copies: "#14a38b",
    "sync": "#e05a47", "data-loader": "#f0a030", "launch-bound": "#d6c23a", "cpu-work": "#9aa5b8", "untraced": "#cfd5df"
  };

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (key) {
        if (key === "text") node.textContent = attrs[key];
        else if (key === "className") node.className = attrs[key];
        else node.setAttribute(key, attrs[key]);
      });
    }
    (children || []).forEach(function (child) {
      if (child !== null && child !== undefined) node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }
  function ms(value) { return (value === null || value === undefined) ? "n/a" : Number(value).toFixed(3) + " ms"; }
  function pct(value) { return (value === null || value === undefined) ? "n/a" : Number(value).toFixed(1) + "%"; }
  function short(name, limit) { return name.length > limit ? name.slice(0, limit - 1) + "\u2026" : name; }

  function chart(container, option) {
    var node = el("div", { className: "chart" + (option.tall ? " tall" : ""), "data-chart": option.id || "" });
    if (option.height) node.style.height = option.height + "px";
    delete option.tall;
    delete option.id;
    delete option.height;
    container.appendChild(node);
    var instance = echarts.init(node, null, { renderer: "svg" });
    option.animation = false;
    instance.setOption(option);
    charts.push(instance);
    return instance;
  }

  function tile(label, value, sub) {
    return el("div", { className: "tile" }, [
      el("div", { className: "label", text: label }), el("div", { className: "value", text: value }),
      sub ? el("div", { className: "sub", text: sub }) : null]);
  }

  function headline(trace, section) {
    var s = trace.summary || {};
    var steps = s.steps || {};
    var tiles = el("div", { className: "tiles" });
    tiles.appendChild(tile("device", trace.device || (s.devices && s.devices.length ? "GPU" : "no GPU activity")));
    tiles.appendChild(tile("step period", ms(trace.step_ms), (steps.steady || 0) + " steady of " + (steps.count || trace.steps) + " steps"));
    if (s.devices && s.devices.length) {
      tiles.appendChild(tile("GPU busy", pct(trace.gpu_busy_pct),
        "compute " + pct(s.compute_busy_pct) + " \u00b7 communication " + pct(s.communication_pct) + " \u00b7 copies " + pct(s.copy_pct)));
    }
    tiles.appendChild(tile("recoverable", "~" + ms(trace.recoverable_ms_per_step), pct(trace.recoverable_pct) + " of the step, each site counted once"));
    // From `ptadvise whatif`'s prediction when the document carries one.
    var predicted = trace.whatif ? trace.whatif.predicted_step_ms_all_fixes : undefined;
    if (predicted !== undefined && predicted !== null) tiles.appendChild(tile("predicted step after fixes", ms(predicted)));
    // A job's entry: its ranks replayed joined at their collectives.
    var joined = trace.job && trace.job.whatif;
    if (joined && joined.available) {
      tiles.appendChild(tile("job step after every rank's fixes", ms(joined.predicted_step_ms_all_fixes),
        "ranks joined at their collectives; each rank replayed alone: " + ms(joined.ranks_alone_step_ms_all_fixes)));
    }
    tiles.appendChild(tile("findings", String(trace.findings.length), trace.coverage ? trace.coverage.text : ""));
    section.appendChild(tiles);
  }

  function stepStrip(trace, section) {
    var perStep = (trace.summary && trace.summary.per_step) || [];
    if (!perStep.length) return;
    section.appendChild(el("h3", { text: "Where each step's time goes (GPU, summed over devices)" }));
    var labels = perStep.map(function (step) { return (step.steady ? "" : "*") + step.number; });
    function series(name, pick) {
      return { name: name, type: "bar", stack: "step", itemStyle: { color: COLORS[name] }, emphasis: { focus: "series" },
        data: perStep.map(function (step) { return Number(pick(step).toFixed(3)); }) };
    }
    var all = [series("compute", function (s) { return s.compute_ms; }),
      series("communication", function (s) { return s.communication_ms; }),
      series("copies", function (s) { return s.copy_ms; })];
    IDLE_CAUSES.forEach(function (cause) {
      all.push(series(cause, function (s) { return s.idle_ms[cause] || 0; }));
    });
    all = all.filter(function (one) { return one.data.some(function (v) { return v > 0; }); });
    chart(section, {
      id: "steps", tall: true,
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, valueFormatter: function (v) { return v + " ms"; } },
      legend: { type: "scroll", top: 0 },
      grid: { left: 50, right: 12, top: 40, bottom: 50 },
      xAxis: { type: "category", data: labels, name: "step (* = warm-up or cut short)", nameLocation: "middle", nameGap: 30 },
      yAxis: { type: "value", name: "ms" },
      dataZoom: perStep.length > 40 ? [{ type: "inside" }, { type: "slider", height: 14, bottom: 4 }] : [],
      series: all
    });
  }

  function idleCauses(trace, container) {
    var causes = (trace.summary && trace.summary.idle_causes_ms) || {};
    var names = IDLE_CAUSES.filter(function (c) { return causes[c] > 0; });
    if (!names.length) return;
    var box = el("div", {}, [el("h3", { text: "GPU idle inside steps, by cause" })]);
    container.appendChild(box);
    chart(box, {
      id: "idle",
      tooltip: { trigger: "item", valueFormatter: function (v) { return v + " ms"; } },
      grid: { left: 100, right: 80, top: 10, bottom: 30 },
      xAxis: { type: "value", splitNumber: 3, axisLabel: { hideOverlap: true } },
      yAxis: { type: "category", data: names, inverse: true },
      series: [{ type: "bar", data: names.map(function (c) { return { value: Number(causes[c].toFixed(3)), itemStyle: { color: COLORS[c] } }; }),
        label: { show: true, position: "right", formatter: function (p) { return p.value + " ms"; } } }]
    });
  }

  function topChart(container, title, stats, id) {
    if (!stats || !stats.length) return;
    var box = el("div", {}, [el("h3", { text: title })]);
    container.appendChild(box);
    var rows = stats.slice(0, 10);
    chart(box, {
      id: id,
      tooltip: { trigger: "item", formatter: function (p) { var s = rows[p.dataIndex]; return echarts.format.encodeHTML(s.name) + "<br>" + s.total_ms + " ms, " + s.count + " calls"; } },
      grid: { left: 8, right: 60, top: 10, bottom: 24, containLabel: true },
      xAxis: { type: "value", splitNumber: 2, axisLabel: { hideOverlap: true, fontSize: 10 } },
      yAxis: { type: "category", inverse: true, data: rows.map(function (s) { return short(s.name, 28); }) },
      series: [{ type: "bar", itemStyle: { color: COLORS.compute }, data: rows.map(function (s) { return Number(s.total_ms.toFixed(3)); }),
        label: { show: true, position: "right" } }]
    });
  }

  function findingsList(trace, section) {
    section.appendChild(el("h3", { text: "Findings, ranked by what fixing them saves" }));
    if (!trace.findings.length) {
      section.appendChild(el("p", { className: "muted", text: "No findings. " + (trace.coverage ? trace.coverage.text : "") }));
      return;
    }
    var biggest = Math.max.apply(null, trace.findings.map(function (f) { return f.saving_pct || 0; }).concat([0.0001]));
    trace.findings.forEach(function (f) {
      var width = Math.max(1, Math.round(100 * (f.saving_pct || 0) / biggest));
      var where = f.source ? f.source.file + ":" + f.source.line + (f.source.function ? " in " + f.source.function : "") : f.site.description;
      var summary = el("summary", {}, [
        el("div", { className: "title" }, [
          el("span", { className: "rank", text: "#" + f.rank }),
          el("span", { className: "sev " + f.severity, text: f.severity }),
          el("span", { className: "name", text: f.rule_id + " " + f.rule_name }),
          el("span", { className: "muted", text: "saves ~" + ms(f.saving_ms_per_step) + " per step (" + pct(f.saving_pct) + "), confidence " + f.confidence +
            (f.predicted_step_ms !== undefined ? ", step after this fix " + ms(f.predicted_step_ms) : "") + (f.new ? "" : ", in baseline") })]),
        el("div", { className: "msg", text: f.message }),
        el("div", { className: "costbar", title: pct(f.saving_pct) + " of the step" }, [el("div", { style: "width:" + width + "%" })])]);
      var body = el("div", { className: "body" });
      body.appendChild(el("p", {}, [el("b", { text: "Where: " }), el("code", { text: where })]));
      body.appendChild(el("p", { text: "Costs " + ms(f.time_ms_per_step) + " per step (" + f.count_per_step + " per step, in " + f.steps_present_pct + "% of steps). " + (f.saving_method ? "Estimate: " + f.saving_method + "." : "") }));
      if (f.fix) body.appendChild(el("p", {}, [el("b", { text: "Fix: " }), f.fix]));
      if (f.evidence.length) {
        var table = el("table", {}, [el("tr", {}, [el("th", { text: "step" }), el("th", { className: "num", text: "ts (µs, as in the file)" }),
          el("th", { className: "num", text: "duration" }), el("th", { text: "event" }), el("th", { text: "track" })])]);
        f.evidence.forEach(function (e) {
          table.appendChild(el("tr", {}, [el("td", { text: e.step === null ? "" : String(e.step) }), el("td", { className: "num", text: String(e.ts_us) }),
            el("td", { className: "num", text: ms(e.dur_ms) }), el("td", {}, [el("code", { text: e.event })]), el("td", { text: e.track })]));
        });
        body.appendChild(el("div", { className: "table-wrap" }, [table]));
      }
      if (f.docs) {
        if (f.docs.what) body.appendChild(el("p", {}, [el("b", { text: "What it finds: " }), f.docs.what]));
        if (f.docs.why) body.appendChild(el("p", {}, [el("b", { text: "Why it is slow: " }), f.docs.why]));
        if (f.docs.fix) body.appendChild(el("p", {}, [el("b", { text: "How to fix: " }), f.docs.fix]));
      }
      body.appendChild(el("p", { className: "muted" }, ["More: ", el("code", { text: "ptadvise explain " + f.rule_id })]));
      section.appendChild(el("details", { className: "finding", "data-fingerprint": f.fingerprint, "data-rule": f.rule_id }, [summary, body]));
    });
  }

  function perfetto(trace, section) {
    section.appendChild(el("h3", { text: "See the findings on the timeline" }));
    var out = trace.path.replace(/(\.pt\.trace)?\.json(\.gz)?$/, "") + ".ptadvise.json.gz";
    section.appendChild(el("pre", { text: "ptadvise check '" + trace.path + "' --annotate '" + out + "'\n" +
      "# then open " + out + " in Perfetto (ui.perfetto.dev \u2192 Open trace file): one track per finding, on its events" }));
  }

  function heatmap(traces) {
    var ranked = traces.filter(function (t) { return t.rank !== null && t.rank !== undefined; });
    if (ranked.length < 2) return;
    var metrics = [["step_ms", "step ms"], ["gpu_busy_pct", "GPU busy %"], ["compute_busy_pct", "compute %"],
      ["communication_pct", "communication %"], ["idle_pct", "idle %"], ["recoverable_pct", "recoverable %"]];
    function value(t, key) {
      if (t[key] !== undefined) return t[key];
      return t.summary ? t.summary[key] : null;
    }
    var cells = [];
    metrics.forEach(function (m, x) {
      var values = ranked.map(function (t) { return value(t, m[0]); }).filter(function (v) { return v !== null && v !== undefined; });
      var lo = Math.min.apply(null, values), hi = Math.max.apply(null, values);
      ranked.forEach(function (t, y) {
        var v = value(t, m[0]);
        // Colour is the value's place between the lowest and highest rank of this metric.
        cells.push([x, y, v === null || v === undefined ? 0 : (hi > lo ? (v - lo) / (hi - lo) : 0.5), v]);
      });
    });
    var section = el("section", {}, [el("h2", { text: "Ranks side by side" }),
      el("p", { className: "muted", text: "Each column is coloured from its lowest (light) to its highest (dark) rank; the numbers are the values." })]);
    app.appendChild(section);
    chart(section, {
      id: "ranks", height: Math.min(640, 110 + 34 * ranked.length),
      tooltip: { formatter: function (p) { return "rank " + ranked[p.data[1]].rank + ", " + metrics[p.data[0]][1] + ": " + Number(p.data[3]).toFixed(2); } },
      grid: { left: 70, right: 10, top: 10, bottom: 70 },
      xAxis: { type: "category", data: metrics.map(function (m) { return m[1]; }), axisLabel: { interval: 0, rotate: 30 } },
      yAxis: { type: "category", data: ranked.map(function (t) { return "rank " + t.rank; }), inverse: true },
      visualMap: { min: 0, max: 1, dimension: 2, show: false, inRange: { color: ["#eef3fb", "#1f4fa0"] } },
      series: [{ type: "heatmap", data: cells, label: { show: true, formatter: function (p) { return Number(p.data[3]).toFixed(1); } } }]
    });
  }

  // Page
  var total = data.findings_total, failing = data.findings_failing;
  app.appendChild(el("h1", { text: "ptadvise report" }));
  app.appendChild(el("p", { className: "muted", text: total + (total === 1 ? " finding" : " findings") + ", " + failing + " failing (fail-on " + data.fail_on + ")" +
    (data.suppressed ? ", " + data.suppressed + " suppressed by comments" : "") + " \u00b7 ptadvise " + data.tool.version }));
  heatmap(data.traces);
  data.traces.forEach(function (trace) {
    var section = el("section", { className: "trace" }, [el("h2", { text: trace.path + (trace.rank !== null && trace.rank !== undefined ? " (rank " + trace.rank + ")" : "") })]);
    app.appendChild(section);
    headline(trace, section);
    (trace.warnings || []).forEach(function (w) { section.appendChild(el("p", { className: "muted", text: "warning: " + w })); });
    stepStrip(trace, section);
    findingsList(trace, section);
    var grid = el("div", { className: "grid2" });
    section.appendChild(grid);
    idleCauses(trace, grid);
    if (trace.summary) {
      topChart(grid, "Top kernels (total ms in steady steps)", trace.summary.top_kernels, "kernels");
      topChart(grid, "Top CPU ops (inclusive ms)", trace.summary.top_cpu_ops, "cpu-ops");
    }
    perfetto(trace, section);
  });
  app.appendChild(el("footer", { text: "Charts: Apache ECharts " + echarts.version + " (Apache-2.0), inlined; this file fetches nothing." }));
  window.addEventListener("resize", function () { charts.forEach(function (c) { c.resize(); }); });
  document.body.setAttribute("data-rendered", String(charts.length));
})();
