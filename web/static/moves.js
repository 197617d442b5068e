// The move list and the advantage graph every game page shares. A row is
// <tr data-index=I> (I = the index of the state the move leads to); `marks` maps I to the
// analysis of that move ({mark, loss, best, ...}); the graph is ONE's win probability.
"use strict";
const Moves = {
  // The rows of `states` (the pages' state JSON of a game): one a move, the state it leads to.
  rows(states) {
    return states.slice(1).map((state, i) => ({ index: i + 1, turn: states[i].turn,
      side: states[i].current, text: state.lastMove ? state.lastMove.text : "?" }));
  },
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
  // The analysis JSON (docs/analysis.md) onto `states` (the pages' state JSON): a move's turn
  // is the turn of the state before it, so its row is the state after that one. Returns
  // {marks: Map(index -> mark, loss, accuracy, best, bestPlayed), graph: [ONE's win | null]}.
  fromAnalysis(doc, states) {
    const marks = new Map();
    const graph = states.map(() => null);
    const start = states.findIndex((s) => s.turn === doc.start.turn);
    for (const m of doc.moves) {
      const before = states.findIndex((s) => s.turn === m.turn);
      if (before < 0) continue;
      const best = { x: m.best.x, y: m.best.y, dir: m.best.direction, to: m.best.to,
        text: "[" + m.best.x + "|" + m.best.y + "] " + m.best.direction };
      const played = m.played;
      marks.set(before + 1, { mark: m.mark, loss: m.loss, accuracy: m.accuracy, best,
        bestPlayed: played.x === best.x && played.y === best.y && played.direction === best.dir });
    }
    if (start >= 0) doc.graph.forEach((v, k) => { if (start + k < graph.length) graph[start + k] = v; });
    const sides = ["ONE", "TWO"].map((team) => {
      const s = doc.sides[team];
      return s.name + ": accuracy " + (s.accuracy == null ? "–" : s.accuracy) + " %, " +
        s.inaccuracies + " ?!, " + s.mistakes + " ?, " + s.blunders + " ??";
    }).join(" · ");
    const turning = doc.turning_point ? " · turning point: move " + doc.turning_point.number : "";
    return { marks, graph, summary: sides + turning };
  },
  // "Analyse this game": post the game's bytes, report progress, resolve to the analysis.
  async analyse(bytes, onProgress) {
    const response = await fetch("/api/analysis", { method: "POST", credentials: "same-origin",
      headers: { "X-CSRF-Token": Web.session.csrf }, body: bytes });
    let job = await response.json().catch(() => ({ error: response.statusText }));
    if (!response.ok) throw new Error(job.error || response.statusText);
    while (job.state === "running") {
      onProgress(job.done, job.total);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const poll = await fetch("/api/analysis/" + encodeURIComponent(job.job));
      job = await poll.json().catch(() => ({ error: poll.statusText }));
      if (!poll.ok) throw new Error(job.error || poll.statusText);
    }
    if (job.state === "failed") throw new Error(job.error);
    return job.analysis;
  },
  // The "Analyse this game" button every page has (#analyse, #analyse-progress,
  // #analyse-error): a click posts `bytes()` (a promise of the game's bytes), shows the
  // progress and hands the analysis to `done`; one request at a time (the button waits).
  wireAnalyse(bytes, done) {
    const button = document.getElementById("analyse");
    const progress = document.getElementById("analyse-progress");
    const failed = document.getElementById("analyse-error");
    button.addEventListener("click", async () => {
      failed.textContent = ""; button.disabled = true;
      try {
        const analysis = await Moves.analyse(await bytes(), (count, total) => {
          progress.textContent = "analysing: " + count + " of " + total + " moves";
        });
        progress.textContent = "analysed: " + analysis.moves.length + " moves (" +
          analysis.settings.nodes + " nodes a position)";
        await done(analysis);
      } catch (failure) { failed.textContent = failure.message; progress.textContent = ""; }
      finally { button.disabled = false; }
    });
  },
  // The best move to draw as a second arrow on state `index` (none where it was played).
  best(marks, index) {
    const analysed = marks && marks.get(index);
    return analysed && !analysed.bestPlayed ? analysed.best : null;
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
