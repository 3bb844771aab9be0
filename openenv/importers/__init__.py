"""Bring other ecosystems' environments in: verifiers and the Open Reward Standard (ORS).

* :mod:`openenv.importers.detect` finds an entry point in a source tree without importing it;
* :mod:`openenv.importers.package` writes an OpenEnv package around it (``openenv import``);
* :mod:`openenv.importers.live` serves one directly (``openenv serve verifiers:MODULE[:ARGS]``,
  ``openenv serve ors:MODULE[:CLASS]``), driven turn by turn by
  :mod:`openenv.importers.verifiers_env` and :mod:`openenv.importers.ors_env`.

verifiers and openreward are optional extras (``pip install openenv[verifiers]`` / ``[ors]``),
imported only when an environment of theirs is served.
"""

LIVE_PREFIXES = ("verifiers:", "ors:")

__all__ = ["LIVE_PREFIXES"]
