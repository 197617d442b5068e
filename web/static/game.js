"use strict";
Web.markNav("lobby");
const roomId = decodeURIComponent(location.pathname.split("/").pop());
let game = null, offset = 0, limitMs = 2000;
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
    if (!game || !game.state) throw new Error("no position yet");
    await Web.playFrom(game.state, document.getElementById("play-bot").value);
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
  if (game.state) {
    Board.render(svg, game.state);
    svg.setAttribute("data-turn", game.state.turn);
  }
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
    body.prepend(Web.el("tr", {}, Web.el("td", { class: "num" }, turn + 1),
      Web.el("td", { class: team.toLowerCase() }, "●"),
      Web.el("td", {}, `(${move.x}|${move.y}) ${move.dir}`),
      Web.el("td", { class: "num" }, Web.ms(ms)), Web.el("td", {}, ms == null ? "" : bar(ms))));
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
