"use strict";
Web.markNav("admin");
function showPanels() {
  document.getElementById("login-panel").hidden = Web.session.admin;
  document.getElementById("admin-panels").hidden = !Web.session.admin;
  const who = document.querySelector("header .who");
  who.textContent = Web.session.admin ? "admin" : "read-only";
}
Web.loadSession().then(showPanels);
document.getElementById("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const field = document.getElementById("password");
  try {
    Web.session = await Web.post("/api/login", { password: field.value });
    field.value = "";
    document.getElementById("login-error").textContent = "";
    showPanels();
  } catch (error) { document.getElementById("login-error").textContent = error.message; }
});
document.getElementById("logout").addEventListener("click", async () => {
  await Web.post("/api/logout", {});
  await Web.loadSession();
  showPanels();
});
document.getElementById("prepare").addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    const prepared = await Web.post("/api/admin/prepare", {
      names: [document.getElementById("name1").value, document.getElementById("name2").value],
      paused: document.getElementById("paused").checked, timeouts: document.getElementById("timeouts").checked });
    document.getElementById("prepared").hidden = false;
    document.getElementById("prepared-room").textContent = prepared.room;
    const codes = document.getElementById("codes");
    const names = [document.getElementById("name1").value, document.getElementById("name2").value];
    codes.replaceChildren(...prepared.reservations.map((code, index) =>
      Web.el("li", {}, (names[index] || "Player " + (index + 1)) + ": ", Web.el("code", {}, code))));
    document.getElementById("prepare-error").textContent = "";
  } catch (error) { document.getElementById("prepare-error").textContent = error.message; }
});
Web.live("/ws/lobby", (data) => {
  if (!data) return;
  const body = document.querySelector("#rooms tbody");
  body.replaceChildren(...data.rooms.map((room) => Web.el("tr", {},
    Web.el("td", {}, room.names.join(" vs ")), Web.el("td", {}, Web.el("span", { class: "badge status-" + room.status }, room.status)),
    Web.el("td", {}, Web.el("a", { href: "/game/" + room.id }, "open")))));
});
