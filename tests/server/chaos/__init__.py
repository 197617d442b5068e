"""Chaos over real loopback TCP: many concurrent clients with seeded random behaviour against one
in-process server, to prove two promises of the project:

1. Bad input gets a clear error to the sender and never takes down the server, another
   connection or another game.
2. No result is ever lost: every game that starts ends with a result sent and recorded.

Well-behaved bots play legal moves; others send illegal moves, moves out of turn or for rooms
they are not in, coordinates off the board, garbage bytes, truncated XML, packets over the size
limit, half-written packets followed by silence; some disconnect abruptly at random points,
some never read, admins prepare rooms and observe/pause/step/cancel at random, pests send
requests that must be refused (wrong or reused reservation codes, unknown rooms, admin requests
without login), idlers fall silent for a while and must find their connection still open.
Afterwards a fresh pair of bots must play a complete game, every room the server ever created
must have exactly one consistent line in the results file (and a loadable replay matching it),
every result a client received must be the recorded one, every bot that stayed connected must
have received each of its rooms' result followed by `<left>`, no error may have been logged,
`serve()` must return normally and the lobby must be empty.

The default test runs 5 s of chaos, about 6 s in all (bounded by a trio.fail_after). The seed
is printed and attached to any failure; `CHAOS_SEED=<n>` replays a seed's decisions (the
timing, and so the exact interleaving, differs from run to run). No assertion depends on the
timing: a loaded machine changes which paths a run reaches, not whether it passes (the idle
timeout is far beyond the run; timeouts, expired reservations and late moves are all legal
outcomes that the checks accept).

The long variant is skipped unless `CHAOS_SECONDS` is set, e.g.
`CHAOS_SECONDS=60 .venv/bin/python -m pytest tests/server/chaos -k long`; it runs that many
seconds of chaos with more concurrent clients and a random seed (unless `CHAOS_SEED`). (It is
no `slow` test: .ci/run's slow group must not skip, and this one is opt-in.)

The package: `world.py` (the settings and the shared record of what every client saw),
`bots.py` (the behaviours, well-behaved and not), `runner.py` (the server, the run and the
checks afterwards), `test_chaos.py` (the two tests).
"""
