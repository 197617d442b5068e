"""A league across machines: Dramatiq on Redis hands out matches, PostgreSQL stores the results
(docs/distributed.md).

`fleet.queue` configures the broker and the match actor, `fleet.worker` is the worker process,
`fleet.match` plays one match on the worker's own game server, `fleet.runs` keeps each match's
run (queued, running where and since when, done, failed, cancelled) next to the league store,
`league.postgres` is the store's PostgreSQL backend, `fleet.coordinator` schedules, watches and
cancels. The game server never imports this package.
"""
