"""A league of Piranhas bots: league files, schedules, a resumable results store, SC standings
and audited game records. See docs/league.md."""
