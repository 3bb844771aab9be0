"""Run under ours or under the published 0.10: prints, as JSON, what ``openenv.core.evals`` does
(schemas, validation errors, harness results, the kwargs given to inspect_ai.eval, score
flattening, the error without inspect-ai). Never imports inspect-ai."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

sys.modules["inspect_ai"] = None  # type: ignore[assignment]  # as if the extra were not installed

from pydantic import ValidationError  # noqa: E402

import openenv.core.evals as evals  # noqa: E402
from openenv.core.evals import EvalConfig, EvalHarness, EvalResult, InspectAIHarness  # noqa: E402

out: dict = {"all": sorted(evals.__all__)}
out["schemas"] = [EvalConfig.model_json_schema(), EvalResult.model_json_schema()]
base = {"harness_name": "h", "harness_version": "1", "library_versions": {"x": "2"}, "dataset": "d",
        "eval_parameters": {"k": 1}}


def errors(fn) -> list:
    try:
        fn()
    except ValidationError as exc:
        return [(e["type"], list(e["loc"])) for e in exc.errors()]
    return []


def assign_bad() -> None:
    EvalConfig(**base).dataset = 3  # type: ignore[assignment]


out["errors"] = [errors(lambda: EvalConfig(**base, extra=1)), errors(lambda: EvalConfig(harness_name="h")),
                 errors(assign_bad), errors(lambda: EvalResult(config=base, scores=[1])),
                 errors(lambda: EvalConfig(**{**base, "library_versions": {"x": 2}}))]


class Echo(EvalHarness):
    def run(self, harness_version, library_versions, dataset, eval_parameters):
        return {"seen": [harness_version, library_versions, dataset, eval_parameters]}


result = Echo().run_from_config(EvalConfig(**base))
out["result"] = [type(result).__name__, result.model_dump(), result.model_dump_json(), Echo().name]
try:
    EvalHarness()  # type: ignore[abstract]
except TypeError as exc:
    out["abstract"] = type(exc).__name__
h = InspectAIHarness(log_dir="/tmp/x")
out["inspect"] = [h.name, h.log_dir, InspectAIHarness().log_dir]
try:
    InspectAIHarness("/tmp/x")  # type: ignore[misc]
except TypeError:
    out["positional"] = "TypeError"
params = {"model": "m", "task_args": {}, "model_args": {"a": 1}, "max_samples": 0, "temperature": None,
          "epochs": 2, "solver": ["s"], "model_base_url": "http://x", "other": 5}
out["kwargs"] = [h._build_eval_kwargs(params), InspectAIHarness()._build_eval_kwargs({"task_args": {"b": 1}})]
metric = SimpleNamespace
log = SimpleNamespace(results=SimpleNamespace(scores=[
    SimpleNamespace(metrics={"accuracy": metric(value=0.5), "stderr": metric(value=0.1)}),
    SimpleNamespace(metrics={"mean": metric(value=3), "accuracy": metric(value=0.75)})]))
out["extract"] = [h._extract_scores(log), h._extract_scores(SimpleNamespace(results=None))]
try:
    h.run("1", {}, "d", {"model": "m"})
except ImportError as exc:
    out["missing"] = str(exc)
print(json.dumps(out, sort_keys=True, default=repr))
