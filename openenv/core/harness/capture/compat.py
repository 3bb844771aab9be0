"""0.10's ``openenv.core.harness.capture.compat``: the request edit an engine's 400 asks for."""

from openenv.capture.param_fixes import (
    BEHAVIOUR_ALTERING,
    BEHAVIOUR_WARNINGS,
    LEGACY_ALIASES,
    MAX_FIXES,
    PROTECTED,
    ParamFix,
    behaviour_warnings,
    diagnose,
)

__all__ = ["BEHAVIOUR_ALTERING", "BEHAVIOUR_WARNINGS", "LEGACY_ALIASES", "MAX_FIXES", "PROTECTED", "ParamFix",
           "behaviour_warnings", "diagnose"]
