"""Serving the site: hypercorn's trio worker behind the web viewer's accept loop
(`web.listen.serve`: connection caps in total and per address, proxy headers only from
trusted proxies)."""

from __future__ import annotations

import hypercorn.config
import structlog
import trio

from ladder.site.app import LadderSite
from server.limits import connection_cap, raise_descriptor_limit
from web.listen import ProxyHeaders, WebAdmission, hypercorn_config, serve

log = structlog.get_logger("ladder.site")

MAX_CONNECTIONS = 1000
MAX_CONNECTIONS_PER_ADDRESS = 50


def site_config() -> hypercorn.config.Config:
    """The viewer's hypercorn settings (`web.listen.hypercorn_config`): no access log (request
    lines carry invite tokens), errors once through our logging, hypercorn's send race on a
    closing connection one info line."""
    return hypercorn_config()


async def serve_site(
    site: LadderSite,
    host: str,
    port: int,
    *,
    proxies: tuple[str, ...] = (),
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the site on host:port until cancelled; `task_status.started(url)`."""
    config = site_config()
    admission = WebAdmission(
        connection_cap(MAX_CONNECTIONS, raise_descriptor_limit()),
        MAX_CONNECTIONS_PER_ADDRESS,
        proxies=proxies,
    )
    async with trio.open_nursery() as nursery:
        site.use_nursery(nursery)
        url = await nursery.start(
            serve, ProxyHeaders(site.app, proxies), config, host, port, admission
        )
        log.info("ladder site listening", url=url)
        task_status.started(url)
