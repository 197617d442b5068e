"use strict";
// The league's standings, crosstable and matches; read again every few seconds while it runs.
Web.markNav("league");
Web.loadSession();
const LABELS = { "match-points": "match points", siegpunkte: "Siegpunkte", schwarmgroesse: "Schwarmgröße",
  "games-won": "games won", lot: "lot" };
function num(value) { return Web.el("td", { class: "num" }, value); }
function renderStandings(data) {
  const s = data.standings;
  document.getElementById("league-name").textContent = s.league;
  document.title = s.league + " · Piranhas server";
  const p = s.progress;
  document.getElementById("progress").textContent = p.matches_complete + " of " + p.matches_total +
    " matches complete, " + p.games_recorded + " of " + p.games_total + " games recorded";
  document.getElementById("criteria").textContent = "Ranked by " +
    s.criteria.map((c) => LABELS[c] || c).join(", then ") + ". Tie-break: what put a team below the one above it.";
  const body = document.querySelector("#standings tbody");
  body.replaceChildren();
  for (const row of s.standings) {
    body.append(Web.el("tr", { "data-team": row.team },
      num(row.rank), Web.el("td", {}, Web.el("b", {}, row.name)), num(row.matches), num(row.won), num(row.drawn),
      num(row.lost), Web.el("td", { class: "num" }, Web.el("b", {}, row.match_points)),
      num(row.games_won + "-" + row.games_drawn + "-" + row.games_lost), num(row.siegpunkte),
      num(row.schwarmgroesse.toFixed(3)), num(row.lot),
      Web.el("td", { class: "small" }, row.decided_by ? LABELS[row.decided_by] || row.decided_by : "")));
  }
}
function renderCrosstable(data) {
  const order = data.standings.standings.map((row) => row.team);
  const head = document.querySelector("#crosstable thead");
  head.replaceChildren(Web.el("tr", {}, Web.el("th", {}, ""),
    ...order.map((team, i) => Web.el("th", { class: "num", title: data.names[team] }, String(i + 1)))));
  const body = document.querySelector("#crosstable tbody");
  body.replaceChildren();
  order.forEach((team, i) => {
    const cells = data.standings.crosstable[team] || {};
    body.append(Web.el("tr", { "data-team": team }, Web.el("td", {}, (i + 1) + " ", Web.el("b", {}, data.names[team])),
      ...order.map((other) => other === team
        ? Web.el("td", { class: "self" }, "")
        : Web.el("td", { class: "num" }, (cells[other] || []).join(" ")))));
  });
}
function renderMatches(data) {
  const body = document.querySelector("#matches tbody");
  body.replaceChildren();
  for (const match of data.matches) {
    body.append(Web.el("tr", { "data-match": match.id },
      num(match.round), num(match.id), Web.el("td", {}, match.names[0]), Web.el("td", {}, match.names[1]),
      num(match.recorded ? match.wins.join("-") : "–"), num(match.recorded + "/" + match.games),
      Web.el("td", {}, Web.el("a", { href: "/league/match/" + match.id }, "games"))));
  }
}
async function refresh() {
  try {
    const response = await fetch("/api/league");
    const data = await response.json();
    if (!response.ok) throw new Error(data.error || response.statusText);
    document.getElementById("league-error").textContent = "";
    renderStandings(data); renderCrosstable(data); renderMatches(data);
  } catch (error) {
    document.getElementById("league-error").textContent = String(error.message || error);
  }
}
refresh();
setInterval(refresh, 5000);
