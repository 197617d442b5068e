"""The ladder (piranhas-ladder, docs/ladder.md): teams upload bots, a ladder plays the active
versions around the clock and rates them. The domain lives here (store, ratings, pairing,
seasons, the workers' jobs); the web service is `ladder.site`, its own process."""
