"""One read path for steps: episodes written through every write path (journaled wire steps from a
recording client, ``step`` rows with ``journal=False``, an import) read the same through every
reader (the store's API, the chart, the episode page, the timeline, the diff, a re-run, an
export, the CLI and ``Replay``); and no module outside the recording library queries step storage."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from openenv.core import GenericEnvClient
from openenv.recording import EpisodeStore, Replay, export_jsonl, import_jsonl, record, rerun_sync
from tests.recording.conftest import pg_url  # noqa: F401 - a fresh PostgreSQL database
from tests.studio.conftest import HX, make_settings, running_studio
from tests.studio.html import fragment, page

MESSAGES = ["hello", "hello!", "a longer message"]  # echo: reward 0.1 per character
REWARDS = [0.5, 0.6, 1.6]
ROOT = Path(__file__).resolve().parents[2]


def _play(store: EpisodeStore, url: str) -> str:
    with record(GenericEnvClient(base_url=url).sync(), store=store, label="read-path") as env:
        env.reset()
        for m in MESSAGES:
            env.step({"message": m})
        eid = env.episode_id
    store.flush()
    return eid


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, echo_url: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A studio over one database holding the same episode written three ways."""
    data = tmp_path_factory.mktemp("read-path")
    db = data / "episodes.db"
    ids: dict[str, str] = {}
    journaled = EpisodeStore(db)
    assert journaled.journaled
    ids["journal"] = _play(journaled, echo_url)
    rows = EpisodeStore(db, journal=False)
    ids["rows"] = _play(rows, echo_url)
    buf = io.StringIO()
    export_jsonl(journaled, buf, episode_ids=[ids["journal"]])
    other = EpisodeStore(data / "other.db")
    import_jsonl(other, io.StringIO(buf.getvalue()))  # through a second store: same id, a fresh file
    buf2 = io.StringIO()
    export_jsonl(other, buf2)
    line = json.loads(buf2.getvalue().splitlines()[0])
    line["id"] = "f" * 32  # the imported copy gets its own id in the studio's store
    import_jsonl(rows, io.StringIO(json.dumps(line) + "\n"))
    ids["import"] = line["id"]
    for s in (journaled, rows, other):
        s.close()
    with running_studio(make_settings(data)) as url:
        yield url, ids | {"db": str(db)}


def _steps_kept_as(db: str, eid: str) -> tuple[int, int]:
    import sqlite3

    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT COUNT(*) FROM step WHERE episode_id = ? AND idx > 0", (eid,)).fetchone()[0]
        chunks = con.execute("SELECT COUNT(*) FROM step_chunk WHERE episode_id = ?", (eid,)).fetchone()[0]
        return rows, chunks
    finally:
        con.close()


def test_the_write_paths_store_steps_differently(recorded: tuple[str, dict[str, str]]) -> None:
    _, ids = recorded
    assert _steps_kept_as(ids["db"], ids["journal"]) == (0, 1)  # wire steps in one chunk
    assert _steps_kept_as(ids["db"], ids["rows"]) == (3, 0)
    assert _steps_kept_as(ids["db"], ids["import"]) == (3, 0)


@pytest.mark.parametrize("how", ["journal", "rows", "import"])
def test_every_reader_sees_the_same_steps(recorded: tuple[str, dict[str, str]], how: str, echo_url: str) -> None:
    url, ids = recorded
    eid = ids[how]
    store = EpisodeStore(ids["db"])
    try:
        ep = store.get_episode(eid)
        assert ep.step_count == 3 and ep.total_reward == pytest.approx(sum(REWARDS))
        steps = store.load_steps(eid)
        assert [s.reward for s in steps[1:]] == pytest.approx(REWARDS)
        assert [s.action for s in steps[1:]] == [{"message": m} for m in MESSAGES]
        assert store.load_rewards(eid)[1:] == pytest.approx(REWARDS)
        replay = Replay(store, eid)
        assert len(replay) == 4 and [s.reward for s in replay][1:] == pytest.approx(REWARDS)
        assert replay[2].observation["echoed_message"] == "hello!"
        assert [c.path for c in replay.changes(2).changed] == ["echoed_message", "message_length"]
        buf = io.StringIO()
        export_jsonl(store, buf, episode_ids=[eid])
        exported = json.loads(buf.getvalue())
        assert [s["reward"] for s in exported["steps"]][1:] == pytest.approx(REWARDS)
        with GenericEnvClient(base_url=echo_url).sync() as client:
            assert rerun_sync(store, eid, client).deterministic
    finally:
        store.close()

    from openenv.cli.main import cli

    out = CliRunner().invoke(cli, ["episodes", "--db", ids["db"], "show", eid, "--json"])
    assert out.exit_code == 0, out.output
    assert [s["reward"] for s in json.loads(out.output)["steps"]][1:] == pytest.approx(REWARDS)

    with httpx.Client(base_url=url, timeout=30, trust_env=False) as http:
        doc = page(http.get(f"/episodes/{eid}").text)
        chart = doc.find("svg", class_="chart")
        assert chart is not None and chart.attrs["data-points"] == "4"
        assert chart.find("title").text() == "return 2.7 after 3 steps"
        assert doc.by_id("total-return").text() == "2.7"
        assert len(chart.find_all("rect", class_="bar")) == 3
        window = [r.attrs["data-index"] for r in doc.with_class("history-row")]
        assert window == ["0", "1", "2", "3"]
        for k, reward in enumerate(REWARDS, start=1):
            step = fragment(http.get(f"/episodes/{eid}/step", params={"step": str(k)}, headers=HX).text)
            badge = step.find("span", class_="badge reward").text()
            assert float(badge.split()[-1]) == pytest.approx(reward)
            assert step.find("div", class_="step-action").text().count(MESSAGES[k - 1]) == 1
            changed = [c.find("span", class_="mono path").text() for c in step.find_all("li", class_="diff-changed")]
            assert changed == ["echoed_message", "message_length"]
        live = fragment(http.get(f"/episodes/{eid}/live", headers=HX).text)
        assert live.find("svg", class_="chart").attrs["data-points"] == "4"
        body = http.get(f"/episodes/{eid}/export", params={"format": "jsonl"}).text
        assert [s["reward"] for s in json.loads(body)["steps"]][1:] == pytest.approx(REWARDS)


_STEP_SQL = re.compile(r"""(FROM|JOIN|INTO|UPDATE|TABLE)\s+["`]?(step|step_chunk)\b""", re.IGNORECASE)
_STEP_MODELS = re.compile(r"\b(Step|StepChunk)\.__table__|\bfrom openenv\.recording\.models import\b")


def test_no_module_outside_the_store_queries_step_storage() -> None:
    """Step rows and chunks are read only by ``openenv/recording`` and ``openenv/stepjournal``:
    every other reader goes through the store's API (``load_steps``, ``load_rewards``...)."""
    allowed = (ROOT / "openenv" / "recording", ROOT / "openenv" / "stepjournal")
    offenders = []
    for folder in ("openenv", "webui"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if any(path.is_relative_to(a) for a in allowed):
                continue
            text = path.read_text(encoding="utf-8")
            for pattern in (_STEP_SQL, _STEP_MODELS):
                for m in pattern.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    offenders.append(f"{path.relative_to(ROOT)}:{line}: {m.group(0)}")
    assert offenders == []


def test_the_guard_finds_a_query_of_its_own() -> None:
    assert _STEP_SQL.search('text("SELECT reward FROM step WHERE episode_id = :e")')
    assert _STEP_SQL.search("conn.exec_driver_sql('select data from step_chunk')")
    assert _STEP_MODELS.search("rows = select(Step.__table__)")
    assert not _STEP_SQL.search("the next step of the episode")


@pytest.mark.postgres
def test_rewards_read_the_same_on_postgres(pg_url: str, echo_url: str) -> None:  # noqa: F811
    store = EpisodeStore(pg_url)
    try:
        eid = _play(store, echo_url)
        assert store.load_rewards(eid)[1:] == pytest.approx(REWARDS)
        assert [s.reward for s in store.load_steps(eid)][1:] == pytest.approx(REWARDS)
        assert store.load_rewards("0" * 32) == []
    finally:
        store.close()
