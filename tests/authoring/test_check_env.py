"""``check_env`` passes good environments and catches each deliberately broken one."""

from __future__ import annotations

import pytest

from openenv.core.testing import EnvCheckError, EnvContractTests, check_env
from openenv.envs.echo import EchoAction, EchoEnvironment
from tests.authoring import broken_envs as b


def statuses(report) -> dict[str, str]:
    return {r.name: r.status for r in report.results}


def messages(report) -> dict[str, str]:
    return {r.name: r.message for r in report.results}


def test_a_good_env_passes_every_check_in_process_and_over_the_wire():
    report = check_env(b.CountEnvironment, actions=[b.CountAction(n=2)])
    assert report.ok
    got = statuses(report)
    assert {name for name, status in got.items() if status != "pass"} == set()
    assert {"env.reset", "env.close", "wire.round_trip", "ws.capacity", "ws.step_after_done"} <= set(got)


def test_actions_are_sampled_from_the_schema_when_none_are_given():
    report = check_env(EchoEnvironment)
    assert statuses(report)["env.actions"] == "pass"
    assert "message" in messages(report)["env.actions"]


@pytest.mark.parametrize(
    ("env", "check", "words"),
    [
        (b.WrongObservationType, "env.step", "returned OtherObservation, expected CountObservation"),
        (b.WrongResetType, "env.reset", "returned dict, expected CountObservation"),
        (b.IgnoresSeed, "env.seed_determinism", "different first observation"),
        (b.NoisySteps, "env.step_determinism", "different observation at step 1: $.observation.start"),
        (b.FrozenState, "env.state", "step_count is 0 after 1 step"),
        (b.RaisingStep, "env.step", "ValueError: the step is broken"),
        (b.CrashesAfterDone, "env.step_after_done", "IndexError"),
        (b.LossyWire, "wire.round_trip", "does not rebuild into LossyObservation"),
        (b.LeaksAThread, "env.close", "leaked-worker"),
    ],
)
def test_each_broken_env_is_caught(env, check, words):
    b.LeaksAThread.stop.clear()
    try:
        report = check_env(env, actions=[b.CountAction(n=1)], raise_on_failure=False)
    finally:
        b.LeaksAThread.stop.set()
    assert statuses(report)[check] == "fail", report.format_text()
    assert words in messages(report)[check]


def test_an_async_only_close_is_honoured():
    report = check_env(b.ClosesAsync, actions=[b.CountAction()], wire=False, raise_on_failure=False)
    assert {r.name: r.status for r in report.results}["env.close"] == "pass"


def test_a_leaked_child_process_is_caught():
    try:
        report = check_env(b.LeaksAProcess, actions=[b.CountAction()], wire=False, raise_on_failure=False)
        assert statuses(report)["env.close"] == "fail"
        assert "child processes" in messages(report)["env.close"]
    finally:
        for proc in b.LeaksAProcess.started:
            proc.kill()
            proc.wait(timeout=10)


def test_broken_envs_are_caught_over_the_wire_too():
    assert statuses(check_env(b.IgnoresSeed, raise_on_failure=False))["ws.seed_determinism"] == "fail"
    noisy = check_env(b.NoisySteps, raise_on_failure=False)
    assert {r.name for r in noisy.failures} == {"env.step_determinism", "ws.step_determinism"}
    frozen = check_env(b.FrozenState, raise_on_failure=False)
    assert statuses(frozen)["ws.reset_step_state"] == "fail"
    assert "step_count 0 after 1 step" in messages(frozen)["ws.reset_step_state"]
    raising = check_env(b.RaisingStep, raise_on_failure=False)
    assert "EXECUTION_ERROR" in messages(raising)["ws.reset_step_state"]
    wrong = check_env(b.WrongObservationType, raise_on_failure=False)
    assert "does not match /schema" in messages(wrong)["ws.reset_step_state"]


def test_noisy_steps_can_be_declared():
    report = check_env(b.NoisySteps, deterministic_steps=False)
    skipped = {r.name: r.message for r in report.results if r.status == "skip"}
    assert skipped == dict.fromkeys(["env.step_determinism", "ws.step_determinism"], "steps declared non-deterministic")


def test_a_step_after_done_crash_is_a_coded_error_on_the_wire():
    report = check_env(b.CrashesAfterDone, raise_on_failure=False)
    assert statuses(report)["ws.step_after_done"] == "pass"
    assert "EXECUTION_ERROR" in messages(report)["ws.step_after_done"]


def test_check_env_raises_naming_the_failed_checks():
    with pytest.raises(EnvCheckError) as info:
        check_env(b.IgnoresSeed, wire=False)
    assert "env.seed_determinism" in str(info.value)
    assert info.value.code == "CHECK_FAILED"
    assert isinstance(info.value, AssertionError)
    assert not info.value.report.ok


def test_an_instance_is_checked_and_its_close_check_skipped():
    report = check_env(EchoEnvironment(), actions=[EchoAction(message="x")])
    assert statuses(report)["env.close"] == "skip"
    assert messages(report)["ws.capacity"] == "refused session 2 of 1, then released"  # one instance, one session


def test_an_unannotated_env_needs_actions():
    class Bare(b.CountEnvironment):
        def step(self, action, timeout_s=None, **kwargs):  # no annotations
            return super().step(action)

    report = check_env(Bare, raise_on_failure=False, wire=False)
    assert statuses(report)["env.actions"] == "fail"
    assert "annotate step" in messages(report)["env.actions"]
    assert check_env(Bare, action_cls=b.CountAction, wire=False).ok


class TestMixinOnAGoodEnv(EnvContractTests):
    env_factory = b.CountEnvironment
    actions = [b.CountAction(n=3)]


class _BrokenSeed(EnvContractTests):
    env_factory = b.IgnoresSeed


class _NeverDone(EnvContractTests):
    @staticmethod
    def env_factory():
        return EchoEnvironment()

    action_cls = EchoAction


def test_the_mixin_fails_the_broken_check_only():
    case = _BrokenSeed()
    case.test_reset_returns_an_observation()
    with pytest.raises(EnvCheckError, match="env.seed_determinism"):
        case.test_same_seed_gives_the_same_first_observation()
    with pytest.raises(EnvCheckError, match="ws.seed_determinism"):
        case.test_over_the_wire()


def test_the_mixin_skips_what_does_not_apply_and_takes_a_factory_function():
    case = _NeverDone()
    with pytest.raises(pytest.skip.Exception, match="did not end within 50 steps"):
        case.test_step_after_done_is_an_observation_or_a_coded_error()
    case.test_state_follows_the_episode()


def test_the_mixin_needs_a_factory():
    with pytest.raises(EnvCheckError, match="set env_factory"):
        EnvContractTests().test_reset_returns_an_observation()
