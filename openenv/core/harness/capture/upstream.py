"""0.10's ``openenv.core.harness.capture.upstream``: the client to one inference engine."""

from openenv.capture.engine import (
    CAPTURE_LEVELS,
    NON_POLICY_SAMPLING,
    auth_headers,
    normalise_engine_base,
    training_sampling,
    truncating_params,
)
from openenv.capture.inference import (
    InferenceClient,
    UpstreamError,
    UpstreamHTTPError,
    UpstreamRequestError,
    UpstreamTimeoutError,
    UpstreamTransportError,
    normalize_response,
    openai_api_base,
)
from openenv.capture.inference import prepare_capture_request as prepare_request
from openenv.capture.param_fixes import MAX_FIXES, ParamFix, diagnose

__all__ = ["CAPTURE_LEVELS", "MAX_FIXES", "NON_POLICY_SAMPLING", "InferenceClient", "ParamFix", "UpstreamError",
           "UpstreamHTTPError", "UpstreamRequestError", "UpstreamTimeoutError", "UpstreamTransportError",
           "auth_headers", "diagnose", "normalise_engine_base", "normalize_response", "openai_api_base",
           "prepare_request", "training_sampling", "truncating_params"]
