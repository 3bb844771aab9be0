"""0.10's ``openenv.core.harness.capture.upstream``: the client to one inference engine."""

from openenv.capture.engine import CAPTURE_LEVELS, NON_POLICY_SAMPLING, truncating_params
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

__all__ = ["CAPTURE_LEVELS", "NON_POLICY_SAMPLING", "InferenceClient", "UpstreamError", "UpstreamHTTPError",
           "UpstreamRequestError", "UpstreamTimeoutError", "UpstreamTransportError", "normalize_response",
           "openai_api_base", "prepare_request", "truncating_params"]
