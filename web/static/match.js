"use strict";
// One match of the league: its games with their results, each opening in the replay viewer.
Web.markNav("league");
Web.loadSession();
const matchId = Number(location.pathname.split("/").pop());
function num(value) { return Web.el("td", { class: "num" }, value); }
function render(match) {
  document.getElementById("title").textContent = match.league + " · match " + match.id + " (round " + match.round + ")";
  document.title = "Match " + match.id + " · Piranhas server";
  document.getElementById("summary").textContent = match.names[0] + " – " + match.names[1] + ": games won " +
    match.wins.join("-") + ", " + match.recorded + " of " + match.games + " games recorded";
  const body = document.querySelector("#games tbody");
  body.replaceChildren();
  for (const game of match.games_list) {
    const r = game.result;
    const winner = !r ? "" : r.winner ? game.names[game.teams.indexOf(r.winner)] : "draw";
    const link = game.record
      ? Web.el("a", { href: "/replays#league=" + match.id + "-" + game.number, "data-game": game.number }, "replay")
      : Web.el("span", { class: "empty" }, r ? "no record" : "not played yet");
    body.append(Web.el("tr", { "data-game": game.number },
      num(game.number), Web.el("td", { class: "one" }, game.names[0]), Web.el("td", { class: "two" }, game.names[1]),
      num(game.boardSeed), Web.el("td", {}, winner),
      num(r ? r.siegpunkte.join(" : ") : ""), num(r ? r.schwarm.join(" : ") : ""),
      Web.el("td", { class: "small" }, r ? r.reason + (r.regular ? "" : " (irregular)") : ""),
      Web.el("td", {}, link)));
  }
}
async function refresh() {
  try {
    const response = await fetch("/api/league/matches/" + matchId);
    const data = await response.json();
    if (!response.ok) throw new Error(data.error || response.statusText);
    document.getElementById("league-error").textContent = "";
    render(data);
  } catch (error) {
    document.getElementById("league-error").textContent = String(error.message || error);
  }
}
refresh();
setInterval(refresh, 5000);
