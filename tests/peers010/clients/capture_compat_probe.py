"""Run 0.10's capture helpers TRL and harness integrations import over a fixed set of inputs, with
whichever ``openenv`` this interpreter has; print one JSON line per call (value or error).

``diagnose`` on providers' 400 bodies, ``ParamFix.apply``, ``training_sampling``, ``auth_headers``,
``normalise_engine_base`` and ``behaviour_warnings`` (``capture_compat_probe.py``, no arguments).
"""

import json

from openenv.core.harness.capture.compat import behaviour_warnings
from openenv.core.harness.capture.upstream import (
    MAX_FIXES,
    ParamFix,
    auth_headers,
    diagnose,
    normalise_engine_base,
    training_sampling,
)

BODIES = [
    {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
               "Use 'max_completion_tokens' instead.", "param": "max_tokens", "code": "unsupported_parameter"}},
    {"error": {"message": "Unsupported value: 'temperature' does not support 0 with this model. Only the default "
               "(1) value is supported.", "param": "temperature", "code": "unsupported_value"}},
    {"error": {"message": "Unrecognized request argument supplied: return_token_ids", "code": None}},
    {"error": {"message": "Unknown parameter: 'return_token_ids'.", "code": "unknown_parameter"}},
    {"error": {"message": "Function tools with reasoning_effort are not supported for gpt-5.6-sol in "
               "/v1/chat/completions. To use function tools, use /v1/responses or set reasoning_effort to 'none'."}},
    {"error": {"message": "You are not allowed to request logprobs from this model"}},
    {"error": {"message": "Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported."}},
    {"error": {"message": "Setting 'top_p' and 'temperature' at the same time is not supported."}},
    {"error": {"message": "`temperature` is deprecated for this model.", "code": "invalid_request_error"}},
    {"error": {"message": "`messages` must not be empty", "code": "invalid_request_error"}},
    {"error": {"message": "Unsupported parameter: 'messages' is not supported.", "code": "unsupported_parameter"}},
    {"error": {"message": "Unsupported parameter", "param": None, "code": "unsupported_parameter"}},
    {"error": {"message": "Use 'temperature' instead.", "param": "temperature", "code": "unsupported_value"}},
    {"error": "Unrecognized request argument supplied: logprobs"},
    {"message": "Unknown parameter: 'seed'.", "code": "unknown_parameter"},
    "Unrecognized request argument supplied: foo[0]",
    {"error": {"message": "Please set stream to 'true'"}},
    None, 42, {"error": 7}, {},
]
SAMPLINGS = [
    None, {}, [], {"temperature": 1.0}, {"temperature": 0.7, "top_p": 1.0, "top_k": 0}, {"temperature": 2},
    {"temperature": 1.0, "top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0}, {"temperature": 0},
    {"temperature": True}, {"temperature": float("inf")}, {"temperature": 1.0, "top_p": 0.9},
    {"temperature": 1.0, "top_k": 50}, {"temperature": 1.0, "seed": 3, "max_tokens": 9}, {"top_p": 1.0},
    {"temperature": 1.0, "top_p": "1"}, {"temperature": 1.0, "min_p": False}, {"temperature": "1"},
]
FIXES = [ParamFix("max_tokens", "max_completion_tokens"), ParamFix("logprobs"), ParamFix("seed"),
         ParamFix("reasoning_effort", value="none"), ParamFix("temperature")]
BODY = {"model": "m", "max_tokens": 5, "logprobs": True, "top_logprobs": 0, "temperature": 0.0}


def emit(kind, arg, call):
    try:
        value = call()
    except Exception as exc:  # noqa: BLE001 - the error is the result
        value = {"error": type(exc).__name__, "message": str(exc)}
    print(json.dumps({"kind": kind, "arg": repr(arg), "value": value}, sort_keys=True, default=repr))


def fix_view(fix):
    return None if fix is None else [fix.param, fix.replacement, fix.value, fix.action, str(fix)]


emit("MAX_FIXES", None, lambda: MAX_FIXES)
for body in BODIES:
    emit("diagnose", body, lambda b=body: fix_view(diagnose(b)))
for fix in FIXES:
    def apply(f=fix):
        body = dict(BODY)
        changed = f.apply(body)
        return [changed, body, f.apply(body), body]
    emit("apply", fix, apply)
for sampling in SAMPLINGS:
    emit("training_sampling", sampling, lambda s=sampling: training_sampling(s))
for key, header in [(None, "Authorization"), ("", "x-api-key"), ("k", "Authorization"), ("k", "authorization"),
                    ("k", " x-api-key "), ("k", ""), ("k", None)]:
    emit("auth_headers", (key, header), lambda k=key, h=header: auth_headers(k, h))
for url in ["http://h:8000/v1", "http://h:8000/v1/", "https://api.anthropic.com", "http://h/v1beta/openai",
            "http://h/api/v1/", "http://h/v10"]:
    emit("normalise_engine_base", url, lambda u=url: normalise_engine_base(u))
# which fixes warn (the wording is each project's own)
emit("behaviour_warnings", "fixes", lambda: [w.split(":")[0] for w in behaviour_warnings([*FIXES, "dropped top_p"])])
