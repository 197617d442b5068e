"""Built-in bots (`random`, `greedy`, `search`): move choosers on the engine, and a console
script that plays them over the SC protocol. Clients of the game server; the server never
imports them.
"""
