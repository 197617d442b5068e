"""The site's HTML: small server-rendered pages (no script of their own: the replay viewer
and its analysis are the web viewer's pages, served from `web/static`).

Rule: every value that came from a person (team names, usernames, labels, card text) goes
through `esc`; every state-changing form carries the session's CSRF token (`form`). The pages
use the viewer's style sheet and one small sheet of their own; the CSP forbids inline script
and style, so the rating graph is SVG with presentation attributes.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterable, Sequence

from starlette.responses import HTMLResponse

from web.http import PAGE_HEADERS

TITLE = "Piranhas ladder"
NO_DOCKER = (
    "This ladder runs bots as jailed processes (--no-docker), not in the contest's containers:"
    " a card's test games and the ladder's games ran that way."
)


def esc(value: object) -> str:
    """`value` as HTML text."""
    return html.escape(str(value), quote=True)


def when(ms: int | None) -> str:
    """A store time (ms since the epoch) as UTC text."""
    if ms is None:
        return "–"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ms / 1000))


def page(
    title: str,
    body: str,
    *,
    who: str | None = None,
    csrf: str = "",
    admin: bool = False,
    status: int = 200,
    message: str = "",
    failure: str = "",
) -> HTMLResponse:
    """A whole page: header (navigation, who is signed in), an optional notice, `body`."""
    nav = ['<a href="/">Ladder</a>', '<a href="/replays">Replays</a>']
    if admin:
        nav.append('<a href="/admin">Admin</a>')
    if who is None:
        account = '<a href="/login">Sign in</a>'
    else:
        account = f"{esc(who)} " + form("/logout", csrf, '<button type="submit">Sign out</button>')
    notice = ""
    if message:
        notice += f'<p class="notice" id="message">{esc(message)}</p>'
    if failure:
        notice += f'<p class="error" id="failure">{esc(failure)}</p>'
    document = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · {TITLE}</title>"
        '<link rel="stylesheet" href="/static/style.css">'
        '<link rel="stylesheet" href="/ladder-static/ladder.css"></head><body>'
        f"<header><h1>{TITLE}</h1><nav>{''.join(nav)}</nav>"
        f'<span class="who">{account}</span></header>'
        f"<main>{notice}{body}</main></body></html>"
    )
    return HTMLResponse(document, status_code=status, headers=PAGE_HEADERS)


def form(action: str, csrf: str, inner: str, *, upload: bool = False, name: str = "") -> str:
    """A POST form to `action` with the CSRF token."""
    enctype = ' enctype="multipart/form-data"' if upload else ""
    named = f' id="{esc(name)}"' if name else ""
    return (
        f'<form method="post" action="{esc(action)}"{enctype}{named} class="inline">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">{inner}</form>'
    )


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, name: str = "") -> str:
    """A table; cells are HTML already (escape them)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    named = f' id="{esc(name)}"' if name else ""
    return f"<table{named}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def panel(title: str, inner: str, *, name: str = "") -> str:
    """A titled box."""
    named = f' id="{esc(name)}"' if name else ""
    return f'<section class="panel"{named}><h2>{esc(title)}</h2>{inner}</section>'


def rating_graph(history: Sequence[tuple[int, float, float]], *, name: str = "rating-graph") -> str:
    """A version's rating over time (a band of ± its deviation) as inline SVG."""
    if not history:
        return '<p class="empty">No ranked games yet.</p>'
    width, height, pad = 600.0, 160.0, 8.0
    lows = [r - d for _, r, d in history]
    highs = [r + d for _, r, d in history]
    low, high = min(lows), max(highs)
    span = max(high - low, 1.0)

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * (i / max(len(history) - 1, 1))

    def y(value: float) -> float:
        return pad + (height - 2 * pad) * (1 - (value - low) / span)

    line = " ".join(f"{x(i):.1f},{y(r):.1f}" for i, (_, r, _) in enumerate(history))
    band = [f"{x(i):.1f},{y(h):.1f}" for i, h in enumerate(highs)]
    band += [f"{x(i):.1f},{y(v):.1f}" for i, v in reversed(list(enumerate(lows)))]
    last = history[-1]
    return (
        f'<svg id="{esc(name)}" class="graph" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'role="img" aria-label="rating over time" data-points="{len(history)}">'
        f'<polygon points="{" ".join(band)}" fill="#8ab4f8" fill-opacity="0.3"/>'
        f'<polyline points="{line}" fill="none" stroke="#1a73e8" stroke-width="2"/>'
        f'</svg><p class="small">now {last[1]:.0f} ± {last[2]:.0f} after {len(history)} '
        "ranked matches</p>"
    )
