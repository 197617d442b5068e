// The move list and the advantage graph every game page shares. A row is
// <tr data-index=I> (I = the index of the state the move leads to); `marks` maps I to the
// analysis of that move ({mark, loss, best, ...}); the graph is ONE's win probability.
"use strict";
const Moves = {
  // rows: [{index, turn, side: "ONE"|"TWO", text}], current: the state index shown.
  render(table, rows, current, onPick, marks) {
    const body = table.tBodies[0] || table.appendChild(document.createElement("tbody"));
    body.replaceChildren(...rows.map((row) => {
      const analysed = marks && marks.get(row.index);
      const mark = analysed && analysed.mark ? analysed.mark : "";
      const tr = Web.el("tr", { "data-index": row.index, "data-turn": row.turn, class: "move" },
        Web.el("td", { class: "num" }, row.index),
        Web.el("td", { class: row.side.toLowerCase() }, "●"),
        Web.el("td", {}, row.text),
        Web.el("td", { class: "mark " + Moves.markClass(mark), title: analysed ? Moves.title(analysed) : "" }, mark));
      if (row.index === current) tr.classList.add("current");
      tr.addEventListener("click", () => onPick(row.index));
      return tr;
    }));
    const shown = body.querySelector("tr.current");
    if (shown && table.closest(".moves")) {
      // Keep the current move in view without moving the page.
      const box = table.closest(".moves");
      const top = shown.offsetTop, bottom = top + shown.offsetHeight;
      if (top < box.scrollTop || bottom > box.scrollTop + box.clientHeight) box.scrollTop = top - box.clientHeight / 2;
    }
  },
  markClass(mark) {
    return { "?!": "inaccuracy", "?": "mistake", "??": "blunder", "!": "only" }[mark] || "";
  },
  title(m) {
    const parts = ["loss " + (100 * m.loss).toFixed(1) + " %", "accuracy " + m.accuracy];
    if (m.best && !m.bestPlayed) parts.push("best " + m.best.text);
    return parts.join(" · ");
  },
  // values: ONE's win probability per state index (null: unknown); current: index shown.
  graph(svg, values, current, onPick) {
    const width = 600, height = 120, n = values.length;
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.replaceChildren();
    const x = (i) => (n <= 1 ? 0 : (i / (n - 1)) * width);
    const y = (v) => height - v * height;
    svg.append(svgEl("rect", { class: "graph-bg", x: 0, y: 0, width, height }));
    let path = "";
    values.forEach((v, i) => { if (v != null) path += (path ? " L " : "M ") + x(i).toFixed(1) + " " + y(v).toFixed(1); });
    if (path) {
      svg.append(svgEl("path", { class: "graph-area", d: path + ` L ${x(n - 1)} ${height} L 0 ${height} Z` }));
      svg.append(svgEl("path", { class: "graph-line", d: path }));
    }
    svg.append(svgEl("line", { class: "graph-mid", x1: 0, y1: height / 2, x2: width, y2: height / 2 }));
    if (current != null) svg.append(svgEl("line", { class: "graph-now", x1: x(current), y1: 0, x2: x(current), y2: height }));
    svg.setAttribute("data-points", values.filter((v) => v != null).length);
    svg.onclick = (event) => {
      const box = svg.getBoundingClientRect();
      onPick(Math.round(((event.clientX - box.left) / box.width) * (n - 1)));
    };
  },
};
