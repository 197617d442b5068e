"use strict";
Web.markNav("lobby");
const roomId = decodeURIComponent(location.pathname.split("/").pop());
let game = null, offset = 0, limitMs = 2000;
// History: the game so far as the replay page's states (fetched when a move is clicked);
// `viewing` is the state index shown, null for the live position. `marks`/`graph`: analysis.
let history = null, viewing = null, marks = null, graph = null, flipped = false;
document.getElementById("download").href = "/api/games/" + encodeURIComponent(roomId) + "/replay";
async function gameBytes() {
  const response = await fetch(document.getElementById("download").href);
  if (!response.ok) throw new Error("the game is not available: " + response.statusText);
  return await response.blob();
}
async function loadHistory() {
  if (history && game && history.states.length === game.moves.length + 1) return history;
  const response = await fetch("/api/replays/upload", { method: "POST", body: await gameBytes() });
  const data = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(data.error || response.statusText);
  history = data;
  return history;
}
async function view(index) {
  try {
    const states = (await loadHistory()).states;
    viewing = index == null || index >= states.length - 1 ? null : Math.max(0, index);
    render();
  } catch (failure) { document.getElementById("analyse-error").textContent = failure.message; }
}
document.getElementById("live").addEventListener("click", () => { viewing = null; render(); });
document.getElementById("flip").addEventListener("click", () => { flipped = !flipped; render(); });
Moves.wireAnalyse(gameBytes, async (analysis) => {
  const applied = Moves.fromAnalysis(analysis, (await loadHistory()).states);
  marks = applied.marks; graph = applied.graph;
  document.getElementById("analysis-summary").textContent = applied.summary;
  render();
});
document.addEventListener("keydown", (event) => {
  if (!game || event.target.tagName === "INPUT" || event.target.tagName === "SELECT") return;
  const latest = game.moves.length;
  const at = viewing == null ? latest : viewing;
  const keys = { ArrowLeft: at - 1, ArrowUp: at - 1, ArrowRight: at + 1, ArrowDown: at + 1, Home: 0, End: latest };
  if (event.key in keys) { view(keys[event.key]); event.preventDefault(); }
  else if (event.key === "f") { flipped = !flipped; render(); }
});
fetch("/api/config").then((r) => r.json()).then((config) => { limitMs = config.softTimeoutMs; });
Web.loadSession().then((session) => {
  document.getElementById("admin").hidden = !session.admin;
});
for (const [id, path, body] of [["pause", "pause", { pause: true }], ["resume", "pause", { pause: false }],
  ["step", "step", {}], ["cancel", "cancel", {}]]) {
  document.getElementById(id).addEventListener("click", async () => {
    const message = document.getElementById("admin-message");
    try { await Web.post("/api/admin/" + path, Object.assign({ room: roomId }, body)); message.textContent = id + " sent"; }
    catch (error) { message.textContent = error.message; }
  });
}
document.getElementById("play-here").addEventListener("click", async () => {
  const failed = document.getElementById("play-here-error");
  failed.textContent = "";
  try {
    const shown = viewing != null && history ? history.states[viewing] : game && game.state;
    if (!shown) throw new Error("no position yet");
    await Web.playFrom(shown, document.getElementById("play-bot").value);
  } catch (failure) { failed.textContent = failure.message; }
});
function bar(ms) {
  const share = Math.min(1, ms / limitMs);
  const span = Web.el("span", { class: ms > limitMs ? "over" : ms > limitMs / 2 ? "slow" : "", style: "width:" + (share * 100).toFixed(1) + "%" });
  return Web.el("div", { class: "bar", title: Web.ms(ms) + " of " + Web.ms(limitMs) }, span);
}
function render() {
  const svg = document.getElementById("board");
  document.getElementById("waiting").hidden = !!game.state;
  const shown = viewing != null && history ? history.states[viewing] : game.state;
  const index = viewing != null ? viewing : game.moves.length;
  if (shown) {
    Board.render(svg, shown, { flip: flipped, best: Moves.best(marks, index) });
    svg.setAttribute("data-turn", shown.turn);
    svg.setAttribute("data-index", index);
  }
  document.getElementById("history").hidden = viewing == null;
  document.getElementById("history-move").textContent = index;
  document.getElementById("advantage").hidden = !graph;
  if (graph) Moves.graph(document.getElementById("graph"), graph, index < graph.length ? index : null, view);
  svg.setAttribute("data-status", game.status);
  document.title = game.names.join(" vs ") + " · Piranhas";
  for (const [index, team] of [[0, "ONE"], [1, "TWO"]]) {
    const panel = document.getElementById("p-" + team);
    panel.querySelector(".name").textContent = game.names[index];
    panel.querySelector(".swarm").textContent = game.swarm[index];
    panel.querySelector(".time").textContent = "time used " + Web.ms(game.timeMs[team]);
    panel.classList.toggle("to-move", game.status === "running" && game.current === team);
  }
  document.getElementById("turn").textContent = game.turn;
  const status = document.getElementById("status");
  status.textContent = game.status; status.className = "badge status-" + game.status;
  const result = document.getElementById("result");
  result.hidden = !game.result;
  result.textContent = Web.resultText(game.result, game.names);
  document.getElementById("errors").textContent = game.errors.join("\n");
  const body = document.querySelector("#moves tbody");
  body.replaceChildren();
  game.moves.forEach((move, index) => {
    const turn = game.firstTurn + index;
    const team = turn % 2 === 0 ? "ONE" : "TWO";
    const ms = game.moveMs[index];
    const analysed = marks && marks.get(index + 1);
    const mark = analysed && analysed.mark ? analysed.mark : "";
    const row = Web.el("tr", { class: "move", "data-index": index + 1 }, Web.el("td", { class: "num" }, turn + 1),
      Web.el("td", { class: team.toLowerCase() }, "●"),
      Web.el("td", {}, `(${move.x}|${move.y}) ${move.dir}`),
      Web.el("td", { class: "mark " + Moves.markClass(mark), title: analysed ? Moves.title(analysed) : "" }, mark),
      Web.el("td", { class: "num" }, Web.ms(ms)), Web.el("td", {}, ms == null ? "" : bar(ms)));
    if (index + 1 === (viewing == null ? game.moves.length : viewing)) row.classList.add("current");
    row.addEventListener("click", () => view(index + 1));
    body.prepend(row);
  });
}
setInterval(() => {
  const clock = document.getElementById("clock");
  if (game && game.status === "running") {
    clock.textContent = "· thinking " + Web.ms(Date.now() + offset - game.clockStart * 1000);
  } else clock.textContent = "";
}, 200);
Web.live("/ws/game/" + encodeURIComponent(roomId), (data, serverOffset) => {
  if (!data) { document.getElementById("waiting").hidden = false; document.getElementById("waiting").textContent = "No such game (it may have ended long ago)."; return; }
  game = data; offset = serverOffset; render();
});
