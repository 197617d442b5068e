"use strict";
Web.markNav("play");
let me = null, offset = 0, selected = null, socket = null, gamePort = 13050;
// The game so far as the replay page's states (the room's replay, parsed by the server), for
// the move list; `viewing` is the state index shown, null for the current position: the only
// one a move is made at.
let history = null, viewing = null, flipped = false, loading = false;
// "Analyse this game": the analysis JSON (docs/analysis.md) and, by state index, its marks
// and ONE's win probability (moves.js).
let analysis = null, marks = null, graph = null;
fetch("/api/config").then((r) => r.json()).then((config) => { gamePort = config.gamePort; });
Web.loadSession().then((session) => {
  document.getElementById("login-first").hidden = session.play;
  document.getElementById("go").disabled = !session.play;
});
function follow(token) {
  document.getElementById("setup").hidden = true;
  document.getElementById("game").hidden = false;
  socket = Web.live("/ws/play/" + token, (data, serverOffset) => {
    if (data) { me = data; offset = serverOffset; render(); refresh(); }
    else { document.getElementById("errors").textContent = "This game is not yours or has ended."; }
  });
}
// "Play from here" (replay and game pages) started the game already: its token is in the hash.
const fromHere = new URLSearchParams(location.hash.slice(1)).get("game");
if (fromHere) follow(fromHere);
document.getElementById("start").addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("start-error");
  error.textContent = "";
  try {
    const started = await Web.post("/api/play", {
      name: document.getElementById("name").value, team: document.getElementById("team").value,
      reservation: document.getElementById("reservation").value.trim() });
    follow(started.token);
  } catch (failure) { error.textContent = failure.message; }
});
// Why a click on (x, y) does nothing (it is no legal start or target): the game goes on.
function whyNot(x, y) {
  if (me.result) return "The game is over.";
  if (!me.myTurn) return "It is not your turn: the bot is thinking.";
  const field = me.state.board[y][x];
  if (selected) return "No legal move of the selected fish ends there: click one of the highlighted fields.";
  if (field.startsWith(me.team + "_")) return "This fish has no legal move: choose another one.";
  if (field === "SQUID") return "That is a squid: click one of your own fish (highlighted).";
  if (field === "EMPTY") return "That field is empty: click one of your own fish (highlighted) first.";
  return "That is the bot's fish: click one of your own fish (highlighted).";
}
function say(text) { document.getElementById("why").textContent = text; }
function replayUrl() { return "/api/games/" + encodeURIComponent(me.room) + "/replay"; }
function latest() { return history ? history.states.length - 1 : 0; }
function behind() { return !history || history.states[latest()].turn < me.state.turn; }
// The room's replay (as the game page's download) parsed by the server into states; the
// observer feed may be a moment behind the person's own connection, so a short bounded retry.
async function refresh() {
  if (loading || !me || !me.room || !me.state || !behind()) return;
  loading = true;
  const failed = document.getElementById("history-error");
  try {
    for (let attempt = 0; attempt < 20 && behind(); attempt++) {
      if (attempt) await new Promise((resolve) => setTimeout(resolve, 250));
      const replay = await fetch(replayUrl());
      if (!replay.ok) continue;
      const response = await fetch("/api/replays/upload", { method: "POST", body: await replay.blob() });
      const data = await response.json().catch(() => ({ error: response.statusText }));
      if (!response.ok) throw new Error("the move list: " + (data.error || response.statusText));
      history = data;
    }
    failed.textContent = "";
  } catch (failure) { failed.textContent = failure.message; }
  finally { loading = false; }
  applyAnalysis();
  renderMoves();
}
// Show state `index` of the game so far (null or the last one: the current position).
function view(index) {
  if (!me || !me.state || !history) return;
  viewing = index == null || index >= latest() ? null : Math.max(0, index);
  selected = null; say("");
  render();
}
document.getElementById("current").addEventListener("click", () => view(null));
document.getElementById("flip").addEventListener("click", () => { flipped = !flipped; render(); });
document.addEventListener("keydown", (event) => {
  if (!me || !me.state || ["INPUT", "SELECT", "TEXTAREA"].includes(event.target.tagName)) return;
  const at = viewing == null ? latest() : viewing;
  const keys = { ArrowLeft: at - 1, ArrowUp: at - 1, ArrowRight: at + 1, ArrowDown: at + 1, Home: 0, End: latest() };
  if (event.key in keys) { view(keys[event.key]); event.preventDefault(); }
  else if (event.key === "f") { flipped = !flipped; render(); }
});
// Only the list: a new list never rebuilds the board under the person's pointer.
function renderMoves() {
  document.getElementById("moves-panel").hidden = !history;
  if (!history) return;
  const shown = viewing == null ? latest() : viewing;
  Moves.render(document.getElementById("move-list"), Moves.rows(history.states), shown, view, marks);
  document.getElementById("advantage").hidden = !graph;
  if (graph) Moves.graph(document.getElementById("graph"), graph, shown, view);
}
// The analysis ("Analyse this game": the moves so far) onto the game so far; again after each
// refresh, so the graph spans the positions played since (unanalysed: no point).
function applyAnalysis() {
  if (!analysis || !history) return;
  const applied = Moves.fromAnalysis(analysis, history.states);
  marks = applied.marks; graph = applied.graph;
  document.getElementById("analysis-summary").textContent = applied.summary;
}
Moves.wireAnalyse(async () => {
  const replay = await fetch(replayUrl());
  if (!replay.ok) throw new Error("the game is not available: " + replay.statusText);
  return await replay.blob();
}, async (doc) => {
  analysis = doc;
  await refresh();
  applyAnalysis();
  render();
});
function render() {
  const svg = document.getElementById("board");
  const hint = document.getElementById("hint");
  const status = document.getElementById("status");
  if (!me.state && fromHere) {
    // Play from here: the viewer starts the bot itself.
    hint.hidden = true;
    status.textContent = me.ended ? "The game did not start." : "Starting the bot…";
    document.getElementById("errors").textContent = (me.errors || []).join("\n");
    return;
  }
  if (!me.state) {
    hint.hidden = false;
    hint.replaceChildren("Waiting for a bot: start one against ", Web.el("code", {}, location.hostname + ":" + gamePort),
      " (e.g. ", Web.el("code", {}, "./start.sh -h " + location.hostname + " -p " + gamePort), ").");
    status.textContent = me.room ? "Room " + me.room + " is open." : "Joining…";
    return;
  }
  hint.hidden = true;
  const download = document.getElementById("download");
  download.hidden = !me.room;
  document.getElementById("analyse").hidden = !me.room;
  if (me.room) download.href = replayUrl();
  renderMoves();
  document.getElementById("history").hidden = viewing == null;
  if (viewing != null) {
    // An earlier position: looked at, never played at.
    document.getElementById("history-move").textContent = viewing;
    Board.render(svg, history.states[viewing], { flip: flipped, best: Moves.best(marks, viewing),
      onCell: () => say("This is an earlier position: go back to the current position to move.") });
    svg.setAttribute("data-turn", history.states[viewing].turn);
    svg.setAttribute("data-index", viewing);
    svg.setAttribute("data-my-turn", "0");
  } else {
    svg.removeAttribute("data-index");
    const legal = me.legal || {};
    const selectable = new Set(Object.keys(legal));
    const targets = new Map();
    if (selected && legal[selected]) for (const option of legal[selected]) targets.set(option.to[0] + "," + option.to[1], option.dir);
    Board.render(svg, me.state, {
      selectable, selected, targets, flip: flipped, best: behind() ? null : Moves.best(marks, latest()),
      onCell: (x, y) => {
        const key = x + "," + y;
        if (targets.has(key)) {
          const [sx, sy] = selected.split(",").map(Number);
          socket.send({ x: sx, y: sy, dir: targets.get(key) });
          selected = null; me.myTurn = false; me.legal = {}; say("");
          render();
        } else if (selectable.has(key)) { if (selected !== key) { selected = key; say(""); render(); } }
        else { say(whyNot(x, y)); selected = null; render(); }
      },
    });
    svg.setAttribute("data-turn", me.state.turn);
    svg.setAttribute("data-my-turn", me.myTurn ? "1" : "0");
  }
  for (const team of ["ONE", "TWO"]) {
    const panel = document.getElementById("p-" + team);
    panel.querySelector(".name").textContent = team === me.team ? "You" : me.opponent ? "Bot: " + me.opponent : "Bot";
    panel.querySelector(".swarm").textContent = me.state.swarm[team];
    panel.classList.toggle("to-move", !me.result && me.state.current === team);
  }
  status.textContent = viewing != null ? "Looking at move " + viewing + " of " + latest() + "." :
    me.result ? "Game over." : me.myTurn ? "Your move: click a fish, then a highlighted field." : "The bot is thinking…";
  const result = document.getElementById("result");
  result.hidden = !me.result;
  result.textContent = Web.resultText(me.result, [me.team === "ONE" ? "You" : "Bot", me.team === "TWO" ? "You" : "Bot"]);
  document.body.setAttribute("data-over", me.result ? "1" : "0");
  document.getElementById("errors").textContent = (me.errors || []).join("\n");
}
setInterval(() => {
  const clock = document.getElementById("clock");
  clock.textContent = me && me.myTurn ? "your clock: " + Web.ms(Date.now() + offset - me.requestedAt * 1000) + " (no time limit for you)" : "";
}, 200);
