"""Print the public surface of ``openenv.core.harness.{rollout,training,collect}`` as JSON: every
``__all__`` name with its kind and, for callables, each parameter's name, kind and default (no
annotations: those are spelled differently). Run under either interpreter."""

import dataclasses
import importlib
import inspect
import json

MODULES = ["openenv.core.harness.rollout", "openenv.core.harness.training", "openenv.core.harness.collect"]
EXTRA = {"openenv.core.harness.training": ["TrainingTrace", "TrainingTurn"]}


def params(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [[p.name, p.kind.name, repr(p.default) if p.default is not inspect.Parameter.empty else None]
            for p in sig.parameters.values()]


def describe(obj):
    if inspect.isclass(obj):
        out = {"kind": "class", "init": params(obj)}
        if dataclasses.is_dataclass(obj):
            out["fields"] = [f.name for f in dataclasses.fields(obj)]
        if hasattr(obj, "model_fields"):
            out["fields"] = list(obj.model_fields)
        methods = {n: params(getattr(obj, n)) for n in sorted(vars(obj)) if not n.startswith("_")
                   and callable(getattr(obj, n)) and n not in ("model_config",)}
        out["methods"] = methods
        return out
    if callable(obj):
        return {"kind": "function", "params": params(obj)}
    return {"kind": type(obj).__name__, "value": sorted(obj) if isinstance(obj, frozenset) else repr(obj)}


surface = {}
for name in MODULES:
    mod = importlib.import_module(name)
    names = getattr(mod, "__all__", None) or EXTRA.get(name, [])
    surface[name] = {n: describe(getattr(mod, n)) for n in sorted(names)}
print(json.dumps(surface, sort_keys=True))
