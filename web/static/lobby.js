"use strict";
Web.markNav("lobby");
Web.loadSession();
function render(data) {
  const body = document.querySelector("#rooms tbody");
  body.replaceChildren();
  document.getElementById("no-rooms").hidden = data.rooms.length > 0;
  for (const room of data.rooms) {
    const players = Web.el("td", {},
      Web.el("span", { class: "one" }, room.names[0]), " vs ", Web.el("span", { class: "two" }, room.names[1]));
    const row = Web.el("tr", { "data-room": room.id, "data-status": room.status },
      players,
      Web.el("td", {}, Web.el("span", { class: "badge status-" + room.status }, room.status)),
      Web.el("td", { class: "num" }, room.turn),
      Web.el("td", { class: "num swarm" }, Web.el("span", { class: "one" }, room.swarm[0]), " : ",
        Web.el("span", { class: "two" }, room.swarm[1])),
      Web.el("td", { class: "num" }, Web.ms(room.timeMs.ONE) + " / " + Web.ms(room.timeMs.TWO)),
      Web.el("td", { class: "small" }, Web.resultText(room.result, room.names)),
      Web.el("td", {}, Web.el("a", { href: "/game/" + room.id }, "watch")));
    body.append(row);
  }
}
Web.live("/ws/lobby", (data) => data && render(data));
