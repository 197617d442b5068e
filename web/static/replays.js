"use strict";
Web.markNav("replays");
Web.loadSession();
let replay = null, index = 0, timer = null, source = null, leagueGame = null;
// The analysis of the game shown, by state index (see moves.js); the file's bytes (uploads).
let marks = null, graph = null, uploaded = null, flipped = false;
function hashParams() { return new URLSearchParams(location.hash.slice(1)); }
function show(i) {
  if (!replay) return;
  index = Math.max(0, Math.min(replay.states.length - 1, i));
  const state = replay.states[index];
  const svg = document.getElementById("board");
  Board.render(svg, state, { flip: flipped, best: Moves.best(marks, index) });
  svg.setAttribute("data-index", index);
  document.getElementById("moves-panel").hidden = false;
  Moves.render(document.getElementById("move-list"), Moves.rows(replay.states), index, (i) => { stop(); show(i); }, marks);
  document.getElementById("advantage").hidden = !graph;
  if (graph) Moves.graph(document.getElementById("graph"), graph, index, (i) => { stop(); show(i); });
  svg.setAttribute("data-turn", state.turn);
  document.getElementById("nothing").hidden = true;
  document.getElementById("viewer").hidden = false;
  for (const [n, team] of [[0, "ONE"], [1, "TWO"]]) {
    const panel = document.getElementById("p-" + team);
    panel.querySelector(".name").textContent = replay.names[n];
    panel.querySelector(".swarm").textContent = state.swarm[team];
    panel.classList.toggle("to-move", state.current === team && index < replay.states.length - 1);
  }
  document.getElementById("turn").value = state.turn;
  document.getElementById("turn-label").textContent = state.turn;
  document.getElementById("turn-max").textContent = replay.states[replay.states.length - 1].turn;
  document.getElementById("move").textContent = state.lastMove ? state.lastMove.text : "start";
  document.getElementById("play-here").disabled = index === replay.states.length - 1 && !!replay.result;
  const atEnd = index === replay.states.length - 1;
  const result = document.getElementById("result");
  result.hidden = !(atEnd && replay.result);
  result.textContent = Web.resultText(replay.result, replay.names);
  const params = hashParams();
  params.set("turn", state.turn);
  if (source) params.set("file", source); else params.delete("file");
  if (leagueGame) params.set("league", leagueGame); else params.delete("league");
  history.replaceState(null, "", "#" + params.toString());
  document.getElementById("link").href = location.href;
}
function showTurn(turn) {
  // The first state at or after the turn (as the official replay loader does).
  let i = replay.states.findIndex((s) => s.turn >= turn);
  show(i < 0 ? replay.states.length - 1 : i);
}
function stop() { clearInterval(timer); timer = null; document.getElementById("play").textContent = "play"; }
function play() {
  if (timer) { stop(); return; }
  if (index >= replay.states.length - 1) show(0);
  document.getElementById("play").textContent = "pause";
  timer = setInterval(() => { if (index >= replay.states.length - 1) stop(); else show(index + 1); },
    Number(document.getElementById("speed").value));
}
function showRecord(data) {
  // A league game record: which game it is, and where it differs from the engine's replay.
  const info = document.getElementById("record-info");
  info.hidden = !data.record;
  if (data.record) {
    const r = data.record;
    info.textContent = "Game record: " + r.league + ", round " + r.round + ", match " + r.match + ", game " + r.number;
    if (leagueGame) {
      info.append(" · ", Web.el("a", { href: "/league/match/" + r.match }, "the match"), " · ",
        Web.el("a", { href: "/api/league/records/" + r.match + "/" + r.number + ".xml" }, "the record (XML)"));
    }
  }
  const box = document.getElementById("discrepancies");
  const found = data.discrepancies || [];
  box.hidden = found.length === 0;
  box.querySelector("ul").replaceChildren(...found.map((text) => Web.el("li", {}, text)));
}
// The game's own links from the site that serves it (the ladder: its match and teams).
function showLinks(links) {
  const box = document.getElementById("context-links");
  const found = Array.isArray(links) ? links : [];
  box.hidden = found.length === 0;
  box.replaceChildren();
  found.forEach((link, i) => {
    if (i) box.append(" · ");
    box.append(Web.el("a", { href: link.href, class: "context-link" }, link.label));
  });
}
function applyAnalysis(doc) {
  const applied = Moves.fromAnalysis(doc, replay.states);
  marks = applied.marks; graph = applied.graph;
  document.getElementById("analysis-summary").textContent = applied.summary;
  show(index);
}
// The game's own bytes: the server's file, the league record or the uploaded file.
async function gameBytes() {
  if (uploaded) return uploaded;
  const response = await fetch(document.getElementById("download").href);
  if (!response.ok) throw new Error("cannot read the game: " + response.statusText);
  return await response.blob();
}
// The analysis is shown only on the game it was asked for (another may be loaded meanwhile).
let analysing = null;
Moves.wireAnalyse(() => { analysing = replay; return gameBytes(); },
  (analysis) => { if (replay === analysing) applyAnalysis(analysis); });
function flip() { flipped = !flipped; show(index); }
function load(data, name, turn, league, file) {
  stop(); replay = data; source = name; leagueGame = league || null; uploaded = file || null;
  marks = null; graph = null;
  document.getElementById("analyse-progress").textContent = "";
  document.getElementById("analyse-error").textContent = "";
  const download = document.getElementById("download");
  if (download.href.startsWith("blob:")) URL.revokeObjectURL(download.href);
  download.hidden = false;
  if (name) { download.href = "/api/replays/" + encodeURIComponent(name) + "/download"; download.removeAttribute("download"); }
  else if (league) { const [m, n] = league.split("-"); download.href = "/api/league/records/" + m + "/" + n + ".xml"; download.removeAttribute("download"); }
  else if (file) { download.href = URL.createObjectURL(file); download.setAttribute("download", file.name || "replay.xml"); }
  else download.hidden = true;
  document.getElementById("upload-error").textContent = "";
  showLinks(data.links);
  showRecord(data);
  if (turn != null && !Number.isNaN(turn)) showTurn(turn); else show(0);
  if (data.analysis) {
    applyAnalysis(data.analysis);
    document.getElementById("analyse-progress").textContent = "the analysis written in the record";
  }
}
async function loadServerReplay(name, turn) {
  const response = await fetch("/api/replays/" + encodeURIComponent(name));
  const data = await response.json();
  if (!response.ok) { document.getElementById("upload-error").textContent = data.error; return; }
  load(data, name, turn);
}
async function loadLeagueGame(game, turn) {
  const [match, number] = game.split("-");
  const response = await fetch("/api/league/records/" + encodeURIComponent(match) + "/" + encodeURIComponent(number));
  const data = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) { document.getElementById("upload-error").textContent = data.error; return; }
  load(data, null, turn, game);
}
async function upload(file) {
  const response = await fetch("/api/replays/upload", { method: "POST", body: file });
  const data = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) { document.getElementById("upload-error").textContent = data.error; return; }
  load(data, null, Number(hashParams().get("turn")), null, file);
}
document.getElementById("first").onclick = () => { stop(); show(0); };
document.getElementById("back").onclick = () => { stop(); show(index - 1); };
document.getElementById("forward").onclick = () => { stop(); show(index + 1); };
document.getElementById("last").onclick = () => { stop(); show(replay.states.length - 1); };
document.getElementById("play").onclick = play;
document.getElementById("flip").onclick = flip;
document.getElementById("play-here").onclick = async () => {
  const failed = document.getElementById("play-here-error");
  failed.textContent = "";
  try { await Web.playFrom(replay.states[index], document.getElementById("play-bot").value); }
  catch (failure) { failed.textContent = failure.message; }
};
document.getElementById("speed").onchange = () => { if (timer) { stop(); play(); } };
document.getElementById("turn").onchange = (event) => { stop(); showTurn(Number(event.target.value)); };
document.addEventListener("keydown", (event) => {
  if (!replay || event.target.tagName === "INPUT" || event.target.tagName === "SELECT") return;
  const keys = { ArrowLeft: () => show(index - 1), ArrowRight: () => show(index + 1),
    Home: () => show(0), End: () => show(replay.states.length - 1),
    ArrowUp: () => show(index - 1), ArrowDown: () => show(index + 1), f: () => flip() };
  if (keys[event.key]) { stop(); keys[event.key](); event.preventDefault(); }
  else if (event.key === " ") { play(); event.preventDefault(); }
});
window.addEventListener("hashchange", () => {
  const turn = Number(hashParams().get("turn"));
  if (replay && !Number.isNaN(turn) && replay.states[index].turn !== turn) showTurn(turn);
});
const drop = document.getElementById("drop");
drop.addEventListener("dragover", (event) => { event.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (event) => {
  event.preventDefault(); drop.classList.remove("over");
  if (event.dataTransfer.files.length) upload(event.dataTransfer.files[0]);
});
document.getElementById("file").addEventListener("change", (event) => {
  if (event.target.files.length) upload(event.target.files[0]);
});
// The listing comes in pages (the server bounds each answer): "more" asks for the next one.
async function listReplays(offset) {
  const data = await (await fetch("/api/replays?offset=" + offset)).json();
  const body = document.querySelector("#replays tbody");
  document.getElementById("no-replays").hidden = offset > 0 || data.replays.length > 0;
  for (const entry of data.replays) {
    const link = Web.el("a", { href: "#file=" + encodeURIComponent(entry.name), "data-replay": entry.name }, entry.name);
    link.addEventListener("click", (event) => { event.preventDefault(); loadServerReplay(entry.name, null); });
    body.append(Web.el("tr", {}, Web.el("td", {}, link),
      Web.el("td", { class: "small" }, new Date(entry.mtime * 1000).toLocaleString())));
  }
  const more = document.getElementById("more-replays");
  more.hidden = data.next == null;
  more.onclick = () => listReplays(data.next);
}
listReplays(0);
const initial = hashParams();
if (initial.get("file")) loadServerReplay(initial.get("file"), Number(initial.get("turn") ?? NaN));
else if (initial.get("league")) loadLeagueGame(initial.get("league"), Number(initial.get("turn") ?? NaN));
