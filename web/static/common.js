// Shared helpers of every page: session/CSRF, JSON requests, live sockets, formatting.
"use strict";
const Web = {
  session: { admin: false, play: false, csrf: "" },
  async loadSession() {
    const response = await fetch("/api/session", { credentials: "same-origin" });
    Web.session = await response.json();
    const who = document.querySelector("header .who");
    if (who) who.textContent = Web.session.admin ? "admin" : "read-only";
    return Web.session;
  },
  async post(url, body) {
    const response = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": Web.session.csrf },
      body: JSON.stringify(body || {}),
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(data.error || response.statusText);
    return data;
  },
  // A socket that reconnects; onData gets each snapshot and the server/local clock offset.
  live(path, onData) {
    let socket = null;
    const open = () => {
      const scheme = location.protocol === "https:" ? "wss:" : "ws:";
      socket = new WebSocket(scheme + "//" + location.host + path);
      socket.onmessage = (event) => {
        const message = JSON.parse(event.data);
        if (message.missing) { onData(null, 0); return; }
        onData(message.data, message.now * 1000 - Date.now());
      };
      socket.onclose = () => { setTimeout(open, 1000); };
    };
    open();
    return { send: (obj) => socket && socket.readyState === 1 && socket.send(JSON.stringify(obj)) };
  },
  ms(value) {
    if (value == null) return "–";
    return value >= 1000 ? (value / 1000).toFixed(2) + " s" : Math.round(value) + " ms";
  },
  el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key === "style") node.style.cssText = value; // CSSOM: allowed by the CSP
      else node.setAttribute(key, value);
    }
    for (const child of children) node.append(child instanceof Node ? child : String(child));
    return node;
  },
  resultText(result, names) {
    if (!result) return "";
    const winner = result.winner ? names[result.winner === "ONE" ? 0 : 1] + " gewinnt" : "Unentschieden";
    const scores = result.scores.map((s) => s.points.join("/")).join(" : ");
    return winner + " (" + scores + ") – " + result.reason;
  },
  // "Play from here": a game in a room of the game server from `state` (the pages' state
  // JSON) against `bot` (a built-in bot or one the operator configured), the person playing
  // the side to move; the play page takes it over.
  async playFrom(state, bot) {
    const started = await Web.post("/api/play/from", { board: state.board, turn: state.turn,
      firstUnion: state.firstUnion ?? null, team: state.current, bot });
    location.href = "/play#game=" + encodeURIComponent(started.token);
  },
  markNav(name) {
    const link = document.querySelector('header nav a[data-nav="' + name + '"]');
    if (link) link.classList.add("active");
  },
};
// The League link only where a league is configured.
document.addEventListener("DOMContentLoaded", () => {
  fetch("/api/config").then((r) => r.json()).then((config) => {
    const link = document.querySelector('header nav a[data-nav="league"]');
    if (link && config.league) link.hidden = false;
    // The bots "play from here" offers: the built-in ones and the operator's (webPlayBots).
    const bots = document.getElementById("play-bot");
    if (bots && config.playBots) {
      const chosen = bots.value;
      bots.replaceChildren(...config.playBots.map((name) => Web.el("option", { value: name }, name)));
      bots.value = config.playBots.includes(chosen) ? chosen : config.playBots[0];
    }
  }).catch(() => {});
});
