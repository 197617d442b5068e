"""What the test files share, in one place (see tests/README.md):

- `tests.helpers.lobby`: fake peers (`FakePeer`), a running lobby (`Harness`), `start_game`,
  `result_of` — the lobby without sockets;
- `tests.helpers.rawclient`: `RawClient`, the client session with every received byte kept and
  exact bytes out, over TCP or a memory stream; `RecordingStream`;
- `tests.helpers.server`: `running_server` (the whole server in-process on loopback port 0)
  and `join_pair`;
- `tests.helpers.process`: the repository paths, the environment for subprocesses of this
  checkout, and `server_process` (the real `piranhas-server` command on port 0);
- `tests.helpers.socha`: our names as the official socha client spells them.

The `make_harness` fixture lives in tests/server/conftest.py and builds a `Harness`.
"""
