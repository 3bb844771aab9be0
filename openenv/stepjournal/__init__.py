"""The recording step journal's file format and its committer (standard library and orjson only).

Kept apart from ``openenv.recording`` so the committer process imports nothing heavy: see
``format.py`` for the file, ``committer.py`` for what turns journal records into SQLite rows.
"""
