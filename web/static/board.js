// The Piranhas board as SVG. Every cell is <g class="cell" data-x data-y data-field="ONE_S|…">,
// so tests compare the DOM with the engine's rows[y][x]. y = 0 is the bottom row.
"use strict";
const SVGNS = "http://www.w3.org/2000/svg";
function svgEl(tag, attrs) {
  const node = document.createElementNS(SVGNS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  return node;
}
const Board = {
  // state: {board, lastMove, largest}; options: {selectable: Set("x,y"), selected: "x,y",
  // targets: Map("x,y" -> dir), onCell(x, y), best: {x, y, to} (a second arrow: the best
  // move), flip: true (turned by 180°: the other side's view)}
  render(svg, state, options) {
    options = options || {};
    const rows = state.board;
    const height = rows.length, width = rows[0].length;
    const margin = 0.45;
    svg.setAttribute("viewBox", `${-margin} ${-0.05} ${width + margin + 0.05} ${height + margin + 0.05}`);
    svg.replaceChildren();
    const defs = svgEl("defs");
    const marker = svgEl("marker", { id: "arrowhead", viewBox: "0 0 10 10", refX: "7", refY: "5",
      markerWidth: "4", markerHeight: "4", orient: "auto-start-reverse" });
    marker.append(svgEl("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#c98a00" }));
    const bestHead = svgEl("marker", { id: "besthead", viewBox: "0 0 10 10", refX: "7", refY: "5",
      markerWidth: "4", markerHeight: "4", orient: "auto-start-reverse" });
    bestHead.append(svgEl("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#2f9e44" }));
    defs.append(marker, bestHead);
    // Screen column and row of a field (flipped: turned by 180°).
    const flip = !!options.flip;
    const col = (x) => (flip ? width - 1 - x : x);
    const row = (y) => (flip ? y : height - 1 - y);
    svg.setAttribute("data-flipped", flip ? "1" : "0");
    svg.append(defs);
    const swarm = new Map();
    for (const team of ["ONE", "TWO"]) {
      for (const [x, y] of (state.largest && state.largest[team]) || []) swarm.set(x + "," + y, team);
    }
    const last = state.lastMove;
    const from = last ? last.x + "," + last.y : null;
    const to = last && last.to ? last.to[0] + "," + last.to[1] : null;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const field = rows[y][x];
        const key = x + "," + y;
        const cell = svgEl("g", { class: "cell", "data-x": x, "data-y": y, "data-field": field,
          transform: `translate(${col(x)} ${row(y)})` });
        if ((x + y) % 2) cell.classList.add("alt");
        if (key === from) cell.classList.add("last-from");
        if (key === to) cell.classList.add("last-to");
        if (swarm.has(key)) cell.classList.add("swarm-" + swarm.get(key));
        if (options.selectable && options.selectable.has(key)) cell.classList.add("selectable");
        if (options.selected === key) cell.classList.add("selected");
        const isTarget = options.targets && options.targets.has(key);
        if (isTarget) cell.classList.add("target");
        cell.append(svgEl("rect", { class: "bg", x: 0, y: 0, width: 1, height: 1 }));
        if (field === "SQUID") {
          Board.squid(cell);
        } else if (field !== "EMPTY") {
          Board.fish(cell, field.slice(0, 3), { S: 1, M: 2, L: 3 }[field[4]]);
        }
        if (swarm.has(key)) cell.append(svgEl("rect", { class: "mark", x: 0.06, y: 0.06, width: 0.88, height: 0.88, rx: 0.12 }));
        if (isTarget) cell.append(svgEl("circle", { class: "dot", cx: 0.5, cy: 0.5, r: 0.12 }));
        if (options.onCell) cell.addEventListener("click", () => options.onCell(x, y));
        svg.append(cell);
      }
    }
    for (let x = 0; x < width; x++) {
      const label = svgEl("text", { class: "coord", x: col(x) + 0.5, y: height + 0.22 });
      label.textContent = x; svg.append(label);
    }
    for (let y = 0; y < height; y++) {
      const label = svgEl("text", { class: "coord", x: -0.22, y: row(y) + 0.5 });
      label.textContent = y; svg.append(label);
    }
    const arrow = (move, cls) => svg.append(svgEl("line", { class: cls,
      x1: col(move.x) + 0.5, y1: row(move.y) + 0.5, x2: col(move.to[0]) + 0.5, y2: row(move.to[1]) + 0.5 }));
    if (last && last.to) arrow(last, "arrow");
    const best = options.best;
    if (best && best.to && !(last && best.x === last.x && best.y === last.y && best.dir === last.dir)) {
      arrow(best, "arrow best");
    }
  },
  fish(cell, team, size) {
    const length = 0.36 + 0.12 * size, thick = 0.22 + 0.08 * size;
    const group = svgEl("g", { class: "fish-" + team });
    const cx = 0.54;
    group.append(svgEl("ellipse", { cx, cy: 0.5, rx: length / 2, ry: thick / 2 }));
    const tailX = cx - length / 2 + 0.04;
    group.append(svgEl("path", { d: `M ${tailX} 0.5 L ${tailX - 0.16} ${0.5 - thick / 2.4} L ${tailX - 0.16} ${0.5 + thick / 2.4} Z` }));
    group.append(svgEl("circle", { cx: cx + length / 2 - 0.09, cy: 0.47, r: 0.025, fill: "#fff" }));
    cell.append(group);
    const label = svgEl("text", { class: "fish-label", x: cx - 0.02, y: 0.52 });
    label.textContent = size;
    cell.append(label);
  },
  squid(cell) {
    const group = svgEl("g", { class: "squid" });
    group.append(svgEl("path", { d: "M 0.5 0.14 C 0.74 0.14 0.78 0.42 0.74 0.56 L 0.26 0.56 C 0.22 0.42 0.26 0.14 0.5 0.14 Z" }));
    for (let i = 0; i < 4; i++) {
      const x = 0.3 + i * 0.13;
      group.append(svgEl("path", { d: `M ${x} 0.55 q 0.05 0.14 -0.02 0.3`, stroke: "#5b3f8c", "stroke-width": 0.05, fill: "none", "stroke-linecap": "round" }));
    }
    group.append(svgEl("circle", { cx: 0.42, cy: 0.38, r: 0.04, fill: "#fff" }));
    group.append(svgEl("circle", { cx: 0.58, cy: 0.38, r: 0.04, fill: "#fff" }));
    cell.append(group);
  },
};
