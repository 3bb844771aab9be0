"""A small tic-tac-toe environment package shaped like the catalogue's ``openspiel_env``.

Same module layout and names (``client.OpenSpielEnv``, ``models.OpenSpielAction``...,
``harness.OpenSpielSessionFactory``) so ``openenv collect openspiel:tic_tac_toe`` of ours and of
the published 0.10 both find it on ``PYTHONPATH``; written for these tests (no OpenSpiel needed).
The server (``server.py``) plays O and always takes the highest free cell.
"""
