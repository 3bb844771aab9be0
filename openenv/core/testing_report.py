"""Check results and reports, shared by ``check_env`` and ``openenv validate``.

A check is a function that returns an optional note when it passes, raises
:class:`CheckFailed` (or ``AssertionError``) when the environment breaks the contract, and
raises :class:`CheckSkipped` when it does not apply.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from openenv.core.env_server.serialization import safe_error_text
from openenv.core.errors import OpenEnvError

__all__ = [
    "FAIL",
    "PASS",
    "SKIP",
    "WARN",
    "CheckFailed",
    "CheckReport",
    "CheckResult",
    "CheckSkipped",
    "CheckWarning",
    "EnvCheckError",
    "episode_id_warning",
    "first_difference",
]

PASS, FAIL, SKIP, WARN = "pass", "fail", "skip", "warn"


class EnvCheckError(OpenEnvError, AssertionError):
    """An environment or server broke the contract; ``report`` holds every result."""

    code = "CHECK_FAILED"


class CheckFailed(AssertionError):
    """Raised by a check: the contract is broken (the message says how)."""


class CheckSkipped(Exception):
    """Raised by a check that does not apply (the message says why)."""


class CheckWarning(Exception):
    """Raised by a check that found something worth fixing but not a contract break."""


@dataclass
class CheckResult:
    """The outcome of one named check."""

    name: str
    status: str
    message: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "message": self.message}


@dataclass
class CheckReport:
    """Results of a run of checks against one target (an env, a directory or a URL)."""

    target: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == FAIL]

    def run(self, name: str, check: Callable[[], str | None]) -> CheckResult:
        """Run ``check`` and record its outcome under ``name``; never raises for a broken env."""
        try:
            note = check()
            result = CheckResult(name, PASS, note or "")
        except CheckSkipped as exc:
            result = CheckResult(name, SKIP, str(exc))
        except CheckWarning as exc:
            result = CheckResult(name, WARN, str(exc))
        except AssertionError as exc:
            result = CheckResult(name, FAIL, str(exc) or "assertion failed")
        except OpenEnvError as exc:
            result = CheckResult(name, FAIL, f"{exc.code}: {exc.message}")
        except Exception as exc:  # the env under test raised: that is the finding
            result = CheckResult(name, FAIL, f"raised {safe_error_text(exc)}")
        self.results.append(result)
        return result

    def add(self, name: str, status: str, message: str = "") -> CheckResult:
        result = CheckResult(name, status, message)
        self.results.append(result)
        return result

    def extend(self, other: CheckReport) -> None:
        self.results.extend(other.results)

    def to_dict(self) -> dict[str, Any]:
        counts = {s: sum(r.status == s for r in self.results) for s in (PASS, FAIL, SKIP, WARN)}
        return {
            "target": self.target,
            "ok": self.ok,
            "counts": counts,
            "checks": [r.to_dict() for r in self.results],
        }

    def format_text(self) -> str:
        """A human-readable report, one line per check."""
        marks = {PASS: "PASS", FAIL: "FAIL", SKIP: "SKIP", WARN: "WARN"}
        width = max((len(r.name) for r in self.results), default=0)
        lines = [f"checks of {self.target}"]
        for r in self.results:
            line = f"  {marks[r.status]}  {r.name.ljust(width)}"
            lines.append(f"{line}  {r.message}".rstrip())
        verdict = "OK" if self.ok else f"FAILED ({len(self.failures)} check(s))"
        lines.append(f"{verdict}: {len(self.results)} checks")
        return "\n".join(lines)

    def raise_for_failures(self) -> None:
        """Raise :class:`EnvCheckError` naming every failed check."""
        if self.ok:
            return
        lines = "; ".join(f"{r.name}: {r.message}" for r in self.failures)
        err = EnvCheckError(f"{self.target} failed {len(self.failures)} check(s): {lines}")
        err.report = self  # type: ignore[attr-defined]
        raise err


def episode_id_warning(seen: Any, expected: str) -> str:
    """A note when an env did not keep ``reset(episode_id=...)`` (0.10 allows it: a warning, not a
    failure); ``""`` when it did."""
    if seen == expected:
        return ""
    return f"state.episode_id is {seen!r} after reset(episode_id={expected!r}): the env ignores the id it is given"


def first_difference(one: Any, two: Any, path: str = "$") -> str:
    """Where two JSON values first differ, e.g. ``$.observation.x: 1 vs 2``."""
    if isinstance(one, dict) and isinstance(two, dict):
        for key in list(one) + [k for k in two if k not in one]:
            if key not in one or key not in two:
                return f"{path}.{key}: present in only one"
            if one[key] != two[key]:
                return first_difference(one[key], two[key], f"{path}.{key}")
    if isinstance(one, list) and isinstance(two, list) and len(one) == len(two):
        for i, (a, b) in enumerate(zip(one, two, strict=True)):
            if a != b:
                return first_difference(a, b, f"{path}[{i}]")
    return f"{path}: {str(one)[:60]} vs {str(two)[:60]}"
