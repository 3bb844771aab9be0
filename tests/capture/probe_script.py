"""Run by either interpreter with ``-P``: ``validate_llm`` over the (url, model, kwargs) cases on
stdin, each report printed as JSON (finding codes only: the sentences are each project's own)."""

from __future__ import annotations

import json
import re
import sys

from openenv.core.harness.capture import validate_llm


def main() -> None:
    out = []
    for url, model, kw in json.load(sys.stdin):
        r = validate_llm(url, model, timeout=20, **kw)
        out.append({"ok": r.ok, "reachable": r.reachable, "trainable": r.trainable, "level": r.capture_level,
                    "rollout_type": r.rollout_type, "n_prompt_ids": r.n_prompt_ids,
                    "n_completion_ids": r.n_completion_ids, "served": r.served_models, "tools": r.tool_support,
                    "mode": r.logprobs_mode, "n_fixes": len(r.param_fixes),
                    "codes": sorted(set(re.findall(r"\[(?:FATAL|WARN)\] (\w+)", " ".join(r.findings))))})
    json.dump(out, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
