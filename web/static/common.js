// Shared helpers of every page: session/CSRF, JSON requests, live sockets, formatting.
"use strict";
const Web = {
  session: { admin: false, play: false, csrf: "" },
  async loadSession() {
    const response = await fetch("/api/session", { credentials: "same-origin" });
    Web.session = await response.json();
    const who = document.querySelector("header .who");
    // A site that reuses these pages (the ladder) names its reader itself.
    if (who) who.textContent = Web.session.label || (Web.session.admin ? "admin" : "read-only");
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
    const last = state.lastMove ? { x: state.lastMove.x, y: state.lastMove.y, dir: state.lastMove.dir } : null;
    const started = await Web.post("/api/play/from", { board: state.board, turn: state.turn,
      firstUnion: state.firstUnion ?? null, lastMove: last, team: state.current, bot });
    location.href = "/play#game=" + encodeURIComponent(started.token);
  },
  // A site that reuses a page of the viewer (the ladder's replay page) hands it a context in
  // its /api/config: its own title and navigation in the header, features it does not have
  // hidden (elements marked data-feature="play" when `play` is false), its words for the
  // replay listing (`replaysTitle`, `noReplays`). Without a context the page is the viewer's
  // as it is.
  applyContext(context) {
    const header = document.querySelector("header");
    if (context.title && header) {
      header.querySelector("h1").textContent = context.title;
      document.title = document.title.replace(/ · .*$/, " · " + context.title);
    }
    const nav = header && header.querySelector("nav");
    if (nav && Array.isArray(context.nav)) {
      nav.replaceChildren(...context.nav.map((link) =>
        Web.el("a", { href: link.href, "data-nav": link.name || "" }, link.label)));
      Web.markNav(document.body.dataset.page);
    }
    if (context.play === false) {
      for (const node of document.querySelectorAll('[data-feature="play"]')) node.hidden = true;
    }
    const empty = document.getElementById("no-replays");
    if (empty && context.noReplays) empty.textContent = context.noReplays;
    const listing = document.getElementById("replays-title");
    if (listing && context.replaysTitle) listing.textContent = context.replaysTitle;
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
    if (config.context) Web.applyContext(config.context);
    // The bots "play from here" offers: the built-in ones and the operator's (webPlayBots).
    const bots = document.getElementById("play-bot");
    if (bots && config.playBots) {
      const chosen = bots.value;
      bots.replaceChildren(...config.playBots.map((name) => Web.el("option", { value: name }, name)));
      bots.value = config.playBots.includes(chosen) ? chosen : config.playBots[0];
    }
  }).catch(() => {});
});
