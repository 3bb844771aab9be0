"""Publish a collected directory as a Hugging Face dataset (``huggingface_hub``, imported on use).

The dataset card's YAML front-matter names ``results.jsonl`` as the only data file, so the Hub's
viewer does not try to read ``metadata.json`` as rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["README_FILENAME", "build_dataset_readme", "push_to_hf_hub"]

README_FILENAME = "README.md"
_RESULTS, _METADATA = "results.jsonl", "metadata.json"
_FRONT_MATTER = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: "results.jsonl"
---"""
_SCHEMA = [
    "## Schema", "", "Each line of `results.jsonl` is one episode:", "",
    "- `episode_id` (string)", "- `messages` (chat transcript; TRL `SFTTrainer`-compatible)",
    "- `reward` (float)", "- `done` (bool)", "- `tool_trace` (list of `{tool_name, arguments, result}`)",
    "- `metrics`, `verify_metrics`, `artifacts`", "- `task`, `extra` (optional call-site annotations)", "",
    "## Load", "", "```python", "from datasets import load_dataset",
    'ds = load_dataset("<user>/<repo>", split="train")', "```", "",
]  # fmt: skip


def _count_episodes(results: Path) -> int:
    if not results.exists():
        return 0
    with results.open("r", encoding="utf-8") as fh:
        return sum(1 for line in fh if line.strip())


def build_dataset_readme(output_dir: Path) -> str:
    """The ``README.md`` dataset card for ``output_dir`` (episode count, run metadata, schema)."""
    output_dir = Path(output_dir)
    metadata: dict[str, Any] = {}
    try:
        loaded = json.loads((output_dir / _METADATA).read_text(encoding="utf-8"))
        metadata = loaded if isinstance(loaded, dict) else {}
    except (OSError, json.JSONDecodeError):
        pass
    lines = [_FRONT_MATTER, "", "# OpenEnv rollouts", "",
             "Collected with [OpenEnv](https://github.com/huggingface/OpenEnv) (`openenv collect`).", "",
             f"- **Episodes:** {_count_episodes(output_dir / _RESULTS)}"]  # fmt: skip
    if metadata:
        lines += ["- **Run metadata:**", "", "  | key | value |", "  | --- | --- |"]
        lines += [f"  | `{k}` | `{v}` |" for k, v in metadata.items()]
    return "\n".join([*lines, "", *_SCHEMA])


def push_to_hf_hub(output_dir: Path | str, repo_id: str, *, private: bool = False, commit_message: str | None = None,
                   token: str | None = None) -> str:  # fmt: skip
    """Upload ``results.jsonl``, ``metadata.json`` and a generated ``README.md`` to the dataset repo
    ``repo_id`` (created if missing); returns its URL. ``FileNotFoundError`` without results."""
    output_dir = Path(output_dir)
    results = output_dir / _RESULTS
    if not results.exists():
        raise FileNotFoundError(f"No {_RESULTS} found in {output_dir}. Run a collect job before pushing to the Hub.")
    (output_dir / README_FILENAME).write_text(build_dataset_readme(output_dir), encoding="utf-8")
    message = commit_message or f"Add {_count_episodes(results)} collected episode(s)"
    try:
        from huggingface_hub import HfApi
    except ImportError as exc:
        raise ImportError("push_to_hf_hub needs huggingface_hub: pip install huggingface_hub") from exc
    api = HfApi(token=token)
    api.create_repo(repo_id=repo_id, repo_type="dataset", private=private, exist_ok=True)
    api.upload_folder(folder_path=str(output_dir), repo_id=repo_id, repo_type="dataset", commit_message=message)
    return f"https://huggingface.co/datasets/{repo_id}"
