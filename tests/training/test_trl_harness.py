"""TRL's AsyncGRPO harness worker (``trl.experimental.async_grpo.openenv_harness``) imports on ours,
and the 0.10 names it uses are ours."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.training import require_trl
from tests.training.conftest import ROOT

PROBE = """
import openenv.core.harness as harness
from openenv.core.harness.capture import upstream
from trl.experimental.async_grpo import openenv_harness as trl_harness

assert trl_harness.HarnessRolloutWorker._loop_cls.__name__ == "_HarnessRolloutLoop"
assert trl_harness.training_sampling is upstream.training_sampling
assert upstream.training_sampling.__module__ == "openenv.capture.engine"
for name in ("HarnessAdapter", "HarnessRunLimits", "ModelStepResult", "ResourceSessionFactory", "TraceEntry",
             "TrainableSession", "TrainingTrace"):
    assert getattr(trl_harness, name) is getattr(harness, name), name
policy = trl_harness.training_sampling({"temperature": 0.8, "top_p": 1.0, "top_k": 0})
assert policy == {"temperature": 0.8, **upstream.NON_POLICY_SAMPLING}, policy
print("ok")
"""


def test_asyncgrpo_harness_worker_imports_on_ours() -> None:
    require_trl()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRL_EXPERIMENTAL_SILENCE": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=str(ROOT), capture_output=True, text=True,
                          timeout=240)  # fmt: skip
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
