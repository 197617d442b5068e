"""The match runner for bot developers (`piranhas-match`): many games between two bots, paired
boards, statistics, reproducers. A client of the game server; the server never imports it.
"""
