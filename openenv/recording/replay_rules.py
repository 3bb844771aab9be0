"""What a replay (re-run, fork) does not hold against an environment: fields that are not
expected to repeat (the REPL's timings) and float noise within a tolerance.

    rules = rules_for("repl")
    kept, ignored = rules.apply(diff(recorded, replayed))

``RULES`` holds the known environments' rules (by env name; ``*`` for every env);
``register_rules`` adds or replaces one. A field is named by its key anywhere in the value
(``execution_time``) or by its path with ``*`` wildcards (``result.*_time``).
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, field

from .diff import Change, Diff

__all__ = ["DEFAULT_ABS_TOL", "DEFAULT_REL_TOL", "RULES", "ReplayRules", "register_rules", "rules_for"]

DEFAULT_REL_TOL = 1e-9
DEFAULT_ABS_TOL = 1e-12
_LAST_KEY = re.compile(r"(?:^|\.)([A-Za-z_][A-Za-z0-9_]*)$|\['([^']*)'\]$")


@dataclass(frozen=True)
class ReplayRules:
    """Volatile fields (``ignore``: key names or path patterns) and the float tolerance."""

    ignore: tuple[str, ...] = ()
    rel_tol: float = DEFAULT_REL_TOL
    abs_tol: float = DEFAULT_ABS_TOL
    why: str = ""

    def ignores(self, path: str) -> bool:
        m = _LAST_KEY.search(path)
        key = (m.group(1) or m.group(2)) if m else path
        return any(fnmatch.fnmatchcase(key, p) or fnmatch.fnmatchcase(path, p) for p in self.ignore)

    def close(self, a: object, b: object) -> bool:
        """Two numbers within the tolerance (booleans are not numbers here)."""
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        return math.isclose(a, b, rel_tol=self.rel_tol, abs_tol=self.abs_tol)

    def apply(self, d: Diff) -> tuple[Diff, list[Change]]:
        """``(what still differs, what the rules let pass)``."""
        kept = Diff()
        passed: list[Change] = []
        for name in ("added", "removed", "changed"):
            for c in getattr(d, name):
                if self.ignores(c.path) or (name == "changed" and self.close(c.before, c.after)):
                    passed.append(c)
                else:
                    getattr(kept, name).append(c)
        return kept, passed

    def describe(self) -> str:
        parts = []
        if self.ignore:
            parts.append("ignores " + ", ".join(self.ignore))
        parts.append(f"floats equal within rel {self.rel_tol:g} / abs {self.abs_tol:g}")
        return "; ".join(parts) + (f" ({self.why})" if self.why else "")


RULES: dict[str, ReplayRules] = {
    "*": ReplayRules(),
    "repl": ReplayRules(ignore=("execution_time", "total_execution_time"), rel_tol=1e-9, abs_tol=1e-9,
                        why="a cell's run time is measured, not computed"),
}
_ALIASES = {"repl_env": "repl", "coding": "repl"}


def register_rules(env_name: str, rules: ReplayRules) -> None:
    """Use ``rules`` when replaying episodes of ``env_name``."""
    RULES[env_name] = rules


def rules_for(env_name: str | None) -> ReplayRules:
    """The rules for an env name (its base name: ``repl-2`` and ``REPL`` are ``repl``), else ``*``'s."""
    name = (env_name or "").strip().lower()
    if name in RULES:
        return RULES[name]
    base = re.split(r"[-_:/@ ]", name, maxsplit=1)[0]
    base = _ALIASES.get(name, _ALIASES.get(base, base))
    return RULES.get(base, RULES["*"])


@dataclass
class Passed:
    """What the rules let pass during one replay, per field path (for the divergence report)."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, changes: list[Change]) -> None:
        for c in changes:
            self.counts[c.path] = self.counts.get(c.path, 0) + 1
