// Charts for the console, with no library and no build step (the binary
// carries every asset): time or number x axes with round ticks, a left and a
// right y axis (linear or log), step or straight lines, shaded x ranges (time
// under water), event markers, horizontal rules (the 1.0 line), a crosshair
// tooltip that follows the pointer and the arrow keys, a click that picks an
// x (the risk lens shocks there), redrawn whenever its box resizes, and for
// screen readers a summary and the data as a table.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
function svgEl(tag, attrs, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** Round ticks over [lo, hi]: steps of 1, 2 or 5 times a power of ten, about
 *  `count` of them (whole numbers only when `integer`). */
function niceTicks(lo, hi, count = 5, integer = false) {
  if (!(hi > lo)) return [lo];
  const raw = Math.max((hi - lo) / count, integer ? 1 : 0);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Ticks of a log axis: each power of ten, and 2 and 5 times it when there are few. */
function logTicks(lo, hi) {
  const out = [];
  const [a, b] = [Math.floor(Math.log10(lo)), Math.ceil(Math.log10(hi))];
  const dense = b - a <= 2;
  for (let e = a; e <= b; e++) {
    for (const m of dense ? [1, 2, 5] : [1]) {
      const v = m * 10 ** e;
      if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v);
    }
  }
  return out.length ? out : [lo, hi];
}

const SECOND = 1e3, MINUTE = 60 * SECOND, HOUR = 60 * MINUTE, DAY = 24 * HOUR;
/** Time ticks at a round step giving about `count` ticks, in UTC. */
function timeTicks(lo, hi, count = 6) {
  // From seconds: an axis fitted to a few minutes of data still has its times.
  const steps = [SECOND, 5 * SECOND, 15 * SECOND, 30 * SECOND, MINUTE, 5 * MINUTE, 15 * MINUTE, 30 * MINUTE,
    HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY];
  const step = steps.find((s) => (hi - lo) / s <= count) ?? 7 * DAY;
  const out = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi; t += step) out.push(t);
  return { ticks: out, step };
}
/** A tick's label in the page's one clock (console.js): 24-hour times, or a date. */
function timeLabel(t, step) {
  const d = new Date(t);
  const zone = { timeZone: clockZone(), hourCycle: "h23", hour: "2-digit", minute: "2-digit" };
  if (step < MINUTE) return d.toLocaleTimeString("en-GB", { ...zone, second: "2-digit" });
  if (step < DAY) return d.toLocaleTimeString("en-GB", zone);
  return d.toLocaleDateString("en-US", { month: "short", day: "numeric", timeZone: clockZone() });
}

/** The y of a series at x: a step line holds its last point, a line interpolates. */
function valueAt(series, x) {
  const pts = series.points;
  if (!pts.length || x < pts[0][0]) return null;
  let lo = 0, hi = pts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (pts[mid][0] <= x) lo = mid; else hi = mid - 1;
  }
  if (series.step || lo === pts.length - 1) return pts[lo][1];
  const [[x0, y0], [x1, y1]] = [pts[lo], pts[lo + 1]];
  return x1 === x0 ? y1 : y0 + ((y1 - y0) * (x - x0)) / (x1 - x0);
}

/**
 * Draws `spec` into `container` and keeps it drawn at the container's width.
 * spec: { x: {type: "time"|"number", label, format, min, max},
 *         y: [{id, label, log, integer, format, min, max}], series: [{name, axis, color, step, points, dash}],
 *         bands: [{from, to, color, label}], markers: [{x, label, color}],
 *         rules: [{axis, y, label, color}], summary, height, onPick }
 *         group: charts of one group share their crosshair and their zoom
 * Returns { update(spec), cursor(x) }. A time chart zooms by dragging across
 * it (its group with it); "Reset zoom" or a double click shows it whole.
 */
const chartGroups = new Map();
function chart(container, spec) {
  container.classList.add("chart");
  const svg = svgEl("svg", { role: "img", tabindex: 0, focusable: "true" });
  const tip = document.createElement("div");
  tip.className = "chart-tip";
  tip.hidden = true;
  tip.setAttribute("role", "status");
  const table = document.createElement("table");
  table.className = "sr-only";
  container.replaceChildren(svg, tip, table);
  let state = { spec, cursor: null, geometry: null, zoom: null, drag: null };
  const reset = document.createElement("button");
  reset.type = "button";
  reset.className = "quiet zoom-reset";
  reset.textContent = "Reset zoom";
  reset.hidden = true;
  container.append(reset);

  const currentWidth = () => Math.max(280, Math.round(container.getBoundingClientRect().width) || 640);
  /** The geometry of what is on screen: a pointer can arrive before the
   *  ResizeObserver's redraw (a window just resized), and must not be read
   *  against the old width. */
  function fresh() {
    if (state.geometry && state.geometry.width !== currentWidth()) draw();
    return state.geometry;
  }
  function draw() {
    const s = state.spec;
    const width = currentWidth();
    const narrow = width < 520;
    const height = s.height ?? (narrow ? 240 : 280);
    const axes = s.y;
    const hasRight = axes.length > 1;
    const [L, R, B] = [narrow ? 46 : 58, hasRight ? (narrow ? 52 : 64) : 14, 34];
    // The legend, in rows over the plot between the axes' labels: a row that
    // would reach the right axis's label wraps (a phone's width).
    const legendStart = Math.max(L, 4 + (axes[0].label ?? "").length * 6.2 + 14);
    const legendEnd = width - 4 - (hasRight ? (axes[1].label ?? "").length * 6.2 + 10 : 0);
    const legend = [];
    let row = 0;
    // Each series, then each kind of shaded range (by its label): a shade
    // with no name in the legend is a colour the reader has to guess.
    const bandKinds = [...new Map((s.bands ?? []).filter((b) => b.label).map((b) => [b.label, { name: b.label, color: b.color, band: true }])).values()];
    const entries = [...s.series, ...bandKinds];
    for (let lx = legendStart, i = 0; i < entries.length; i++) {
      const w = 28 + entries[i].name.length * 6.2;
      if (lx > legendStart && lx + w - 8 > legendEnd) { row += 1; lx = legendStart; }
      legend.push({ se: entries[i], x: lx, row });
      lx += w;
    }
    const T = 26 + row * 14;
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("aria-label", s.summary ?? "chart");
    const all = s.series.flatMap((se) => se.points.map((p) => p[0]));
    const x0 = state.zoom?.min ?? s.x.min ?? Math.min(...all), x1 = state.zoom?.max ?? s.x.max ?? Math.max(...all);
    const xs = (v) => L + ((v - x0) / (x1 - x0 || 1)) * (width - L - R);
    const scales = axes.map((axis) => {
      const values = s.series.filter((se) => se.axis === axis.id).flatMap((se) => se.points.map((p) => p[1]))
        .concat((s.rules ?? []).filter((r) => r.axis === axis.id).map((r) => r.y))
        .filter((v) => v !== null && Number.isFinite(v) && (!axis.log || v > 0));
      let lo = axis.min ?? (values.length ? Math.min(...values) : 0);
      let hi = axis.max ?? (values.length ? Math.max(...values) : 1);
      if (axis.log) {
        lo = Math.max(lo, 1e-6); hi = Math.max(hi, lo * 10);
        const [a, b] = [Math.log10(lo) - 0.05, Math.log10(hi) + 0.05];
        return { axis, y: (v) => height - B - ((Math.log10(Math.max(v, 1e-6)) - a) / (b - a)) * (height - T - B),
          ticks: logTicks(10 ** a, 10 ** b) };
      }
      if (axis.min === undefined) lo = Math.min(0, lo);
      if (hi <= lo) hi = lo + 1;
      const ticks = niceTicks(lo, hi, narrow ? 4 : 5, axis.integer);
      // The labelled range holds the data at both ends: the axis reaches down
      // to the tick under its lowest value as it reaches up to the one above.
      const step = ticks.length > 1 ? ticks[1] - ticks[0] : 0;
      if (step && ticks[0] > lo + step * 1e-9) {
        ticks.unshift(Number((ticks[0] - step).toPrecision(12)));
        lo = ticks[0];
      }
      hi = Math.max(hi, ticks[ticks.length - 1]);
      return { axis, y: (v) => height - B - ((v - lo) / (hi - lo)) * (height - T - B), ticks };
    });
    const scaleOf = (id) => scales.find((sc) => sc.axis.id === id) ?? scales[0];
    const parts = [];
    for (const band of s.bands ?? []) {
      const [a, b] = [xs(Math.max(band.from, x0)), xs(Math.min(band.to, x1))];
      if (b > a) parts.push(svgEl("rect", { x: a, y: T, width: b - a, height: height - T - B, fill: band.color, class: "band" }, band.label));
    }
    // Axes and grid.
    parts.push(svgEl("line", { x1: L, y1: height - B, x2: width - R, y2: height - B, class: "axis" }));
    const xTicks = s.x.type === "time" ? timeTicks(x0, x1, narrow ? 4 : 6) : { ticks: niceTicks(x0, x1, narrow ? 4 : 6) };
    for (const t of xTicks.ticks) {
      const label = s.x.type === "time" ? timeLabel(t, xTicks.step) : (s.x.format ?? String)(t);
      parts.push(svgEl("line", { x1: xs(t), y1: height - B, x2: xs(t), y2: height - B + 4, class: "axis" }));
      parts.push(svgEl("text", { x: xs(t), y: height - B + 16, "text-anchor": "middle", class: "tick" }, label));
    }
    if (s.x.label) parts.push(svgEl("text", { x: (L + width - R) / 2, y: height - 2, "text-anchor": "middle", class: "label" }, s.x.label));
    scales.forEach((sc, i) => {
      const left = i === 0;
      const ax = left ? L : width - R;
      parts.push(svgEl("line", { x1: ax, y1: T, x2: ax, y2: height - B, class: "axis" }));
      for (const t of sc.ticks) {
        const y = sc.y(t);
        if (y < T - 1 || y > height - B + 1) continue;
        if (left) parts.push(svgEl("line", { x1: L, y1: y, x2: width - R, y2: y, class: "grid" }));
        parts.push(svgEl("text", { x: left ? ax - 6 : ax + 6, y: y + 4, "text-anchor": left ? "end" : "start", class: "tick" },
          (sc.axis.format ?? String)(t)));
      }
      parts.push(svgEl("text", { x: left ? 4 : width - 4, y: 14, "text-anchor": left ? "start" : "end", class: "label" }, sc.axis.label ?? ""));
    });
    for (const rule of s.rules ?? []) {
      const y = scaleOf(rule.axis).y(rule.y);
      parts.push(svgEl("line", { x1: L, y1: y, x2: width - R, y2: y, stroke: rule.color, class: "rule" }));
      parts.push(svgEl("text", { x: width - R - 4, y: y - 4, "text-anchor": "end", class: "rule-label", fill: rule.color }, rule.label));
    }
    for (const se of s.series) {
      const sc = scaleOf(se.axis);
      let d = "";
      let prev = null;
      for (const [x, y] of se.points) {
        if (y === null || !Number.isFinite(y)) { prev = null; continue; }
        const [px, py] = [xs(x).toFixed(1), sc.y(y).toFixed(1)];
        if (prev === null) d += `M${px},${py}`;
        else d += se.step ? `H${px}V${py}` : `L${px},${py}`;
        prev = [px, py];
      }
      if (se.step && prev) d += `H${(width - R).toFixed(1)}`;
      parts.push(svgEl("path", { d, fill: "none", stroke: se.color, "stroke-width": 2, "stroke-dasharray": se.dash ?? "", class: "series" }));
    }
    for (const m of s.markers ?? []) {
      if (m.x < x0 || m.x > x1) continue;
      const px = xs(m.x);
      parts.push(svgEl("path", { d: `M${px - 5},${T - 8}h10l-5,7z`, fill: m.color, class: "marker" }, m.label));
    }
    for (const { se, x, row: r } of legend) {
      parts.push(se.band
        ? svgEl("rect", { x, y: 6 + r * 14, width: 16, height: 11, fill: se.color, stroke: "rgb(180 35 24 / .35)", class: "legend-band" })
        : svgEl("line", { x1: x, y1: 12 + r * 14, x2: x + 16, y2: 12 + r * 14, stroke: se.color, "stroke-width": 2, "stroke-dasharray": se.dash ?? "" }));
      parts.push(svgEl("text", { x: x + 20, y: 16 + r * 14, class: "legend" }, se.name));
    }
    const cursorLine = svgEl("line", { x1: 0, y1: T, x2: 0, y2: height - B, class: "cursor", visibility: "hidden" });
    parts.push(cursorLine);
    svg.replaceChildren(...parts);
    state.geometry = { x0, x1, L, R, width, xs, cursorLine };
    // A new size or new data: the tooltip's place is stale.
    tip.hidden = true;
    state.cursor = null;
    fillTable();
  }

  /** The x values the cursor can stop at: every point of every series. */
  function stops() {
    return [...new Set(state.spec.series.flatMap((se) => se.points.map((p) => p[0])))].sort((a, b) => a - b);
  }
  function describe(x) {
    const s = state.spec;
    const head = s.x.type === "time" ? when(new Date(x)) : (s.x.format ?? String)(x);
    const rows = s.series.map((se) => {
      const axis = s.y.find((a) => a.id === se.axis) ?? s.y[0];
      const v = valueAt(se, x);
      return `${se.name}: ${v === null ? "—" : (se.format ?? axis.format ?? String)(v)}`;
    });
    return [head, ...rows];
  }
  function point(x) {
    const g = state.geometry;
    if (!g) return;
    state.cursor = x;
    const px = g.xs(x);
    g.cursorLine.setAttribute("x1", px);
    g.cursorLine.setAttribute("x2", px);
    g.cursorLine.setAttribute("visibility", "visible");
    const lines = describe(x);
    tip.replaceChildren(...lines.map((line, i) => {
      const el = document.createElement(i ? "div" : "strong");
      el.textContent = line;
      return el;
    }));
    tip.hidden = false;
    // Beside the cursor, inside the box.
    const box = container.getBoundingClientRect();
    const scale = box.width / g.width;
    const left = px * scale;
    tip.style.left = `${Math.min(Math.max(0, left + 12), Math.max(0, box.width - tip.offsetWidth - 4))}px`;
    tip.style.top = "28px";
  }
  function nearest(clientX) {
    const g = fresh();
    const box = svg.getBoundingClientRect();
    const x = g.x0 + ((clientX - box.left) * (g.width / box.width) - g.L) / (g.width - g.L - g.R) * (g.x1 - g.x0);
    const all = stops();
    if (!all.length) return null;
    return all.reduce((best, v) => (Math.abs(v - x) < Math.abs(best - x) ? v : best), all[0]);
  }
  function fillTable() {
    const s = state.spec;
    const head = document.createElement("tr");
    for (const name of [s.x.label ?? "x", ...s.series.map((se) => se.name)]) {
      const th = document.createElement("th");
      th.textContent = name;
      head.append(th);
    }
    const rows = stops().slice(-200).map((x) => {
      const tr = document.createElement("tr");
      for (const text of describe(x)) tr.insertCell().textContent = text.replace(/^[^:]*: /, "");
      return tr;
    });
    table.replaceChildren(head, ...rows);
  }

  /** The data x under a pointer (not snapped to a point). */
  function dataX(clientX) {
    const g = fresh();
    const box = svg.getBoundingClientRect();
    const x = g.x0 + ((clientX - box.left) * (g.width / box.width) - g.L) / (g.width - g.L - g.R) * (g.x1 - g.x0);
    return Math.min(Math.max(x, g.x0), g.x1);
  }
  /** Only the cursor line, at x: what a chart of the group shows of another's. */
  function line(x) {
    const g = state.geometry;
    if (!g) return;
    if (x === null || x < g.x0 || x > g.x1) { g.cursorLine.setAttribute("visibility", "hidden"); return; }
    g.cursorLine.setAttribute("x1", g.xs(x));
    g.cursorLine.setAttribute("x2", g.xs(x));
    g.cursorLine.setAttribute("visibility", "visible");
  }
  const others = () => [...(chartGroups.get(state.spec.group) ?? [])].filter((c) => c !== handle);
  function zoomTo(range) {
    state.zoom = range;
    reset.hidden = range === null;
    draw();
  }
  const zoomable = () => state.spec.x.type === "time";
  svg.addEventListener("pointerdown", (e) => {
    if (!zoomable() || e.button !== 0 || !state.geometry) return;
    state.drag = { from: dataX(e.clientX), startX: e.clientX, rect: null };
  });
  svg.addEventListener("pointermove", (e) => {
    const x = nearest(e.clientX);
    if (x !== null) point(x);
    for (const c of others()) c.line(x);
    const d = state.drag;
    if (d && Math.abs(e.clientX - d.startX) > 5) {
      const g = state.geometry;
      const [a, b] = [g.xs(d.from), g.xs(dataX(e.clientX))].sort((p, q) => p - q);
      if (!d.rect) { d.rect = svgEl("rect", { class: "zoom-area", y: 0, height: "100%" }); svg.append(d.rect); }
      d.rect.setAttribute("x", a);
      d.rect.setAttribute("width", b - a);
    }
  });
  svg.addEventListener("pointerup", (e) => {
    const d = state.drag;
    state.drag = null;
    if (!d || Math.abs(e.clientX - d.startX) <= 5) return;
    const [min, max] = [d.from, dataX(e.clientX)].sort((p, q) => p - q);
    for (const c of [handle, ...others()]) c.zoom({ min, max });
  });
  svg.addEventListener("dblclick", () => { for (const c of [handle, ...others()]) c.zoom(null); });
  reset.addEventListener("click", () => { for (const c of [handle, ...others()]) c.zoom(null); });
  svg.addEventListener("pointerleave", () => {
    tip.hidden = true;
    state.geometry?.cursorLine.setAttribute("visibility", "hidden");
    for (const c of others()) c.line(null);
    if (state.drag?.rect) state.drag.rect.remove();
    state.drag = null;
  });
  svg.addEventListener("click", (e) => {
    const x = nearest(e.clientX);
    if (x !== null && state.spec.onPick) state.spec.onPick(x);
  });
  svg.addEventListener("keydown", (e) => {
    const all = stops();
    if (!all.length) return;
    const i = state.cursor === null ? -1 : all.indexOf(state.cursor);
    if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
      e.preventDefault();
      const next = e.key === "ArrowRight" ? Math.min(all.length - 1, i + 1) : Math.max(0, i < 0 ? all.length - 1 : i - 1);
      point(all[next]);
    } else if (e.key === "Enter" && state.cursor !== null && state.spec.onPick) {
      state.spec.onPick(state.cursor);
    }
  });
  const handle = {
    update(next) { state.spec = next; draw(); },
    cursor(x) { point(x); },
    line,
    zoom: zoomTo,
  };
  if (spec.group) {
    if (!chartGroups.has(spec.group)) chartGroups.set(spec.group, new Set());
    chartGroups.get(spec.group).add(handle);
  }
  new ResizeObserver(() => draw()).observe(container);
  draw();
  return handle;
}
