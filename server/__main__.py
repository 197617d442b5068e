"""`python -m server`: the same as the `piranhas-server` command."""

from server.cli import main

raise SystemExit(main())
