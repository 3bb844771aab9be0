"""Token text from a tokenizer the user names: a real ``tokenizers`` file (a word-level vocabulary
written here) as a path or a directory, from the token view's field or the studio's setting; the
engine's own token text still wins; the pager keeps the choice; a path that does not load is a
message inside the token view, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from openenv.recording import EpisodeStore
from tests.studio.conftest import StudioClient, make_settings, running_studio
from webui.studio.token_view import PAGE_TOKENS
from webui.studio.tokenizer_text import TokenizerError, decode_ids, load_tokenizer

VOCAB = 3000


def _write_tokenizer(path: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(VOCAB)}, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One episode whose call read 1,200 prompt ids and sampled 30 (the engine's text for none of
    them but the last 5), and a word-level tokenizer in ``tok/tokenizer.json``."""
    root = tmp_path_factory.mktemp("token-text")
    _write_tokenizer(root / "tok" / "tokenizer.json")
    with EpisodeStore(root / "episodes.db") as store:
        eid = store.start_episode(store.create_run(env_name="echo", source="model"), observation={}, episode_id="a" * 32)
        store.append_step(eid, 1, action={"m": "x"}, observation={"y": 1}, reward=1.0, done=True)
        sampled = list(range(2000, 2030))
        store.record_turn(eid, 1, "model", {
            "model": "m", "messages": [{"role": "user", "content": "hi"}], "completion": "w2000", "finish_reason": "stop",
            "capture": {"level": "tokens", "node_id": "n0", "prompt_ids": [i % VOCAB for i in range(1, 1201)],
                        "sampled_ids": sampled, "logprobs": [-0.1] * 30,
                        "sampled_tokens": [None] * 25 + ["E0", "E1", "E2", "E3", "E4"]}})  # fmt: skip
    (root / "junk.json").write_text(json.dumps({"not": "a tokenizer"}))
    (root / "empty").mkdir()
    return root


@pytest.fixture(scope="module")
def urls(data: Path) -> Iterator[tuple[str, str]]:
    """A studio without the setting and one with it."""
    with running_studio(make_settings(data)) as plain, \
            running_studio(make_settings(data, tokenizer=str(data / "tok"), project="studio-tok")) as configured:
        yield plain, configured


def _client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=30.0, trust_env=False)


def _cells(doc, kind: str) -> list[str]:  # noqa: ANN001
    return [c.text() for strip in doc.with_class("token-strip") for c in strip.with_class("tok")
            if kind in c.attrs["class"].split()]


def test_ids_without_a_tokenizer_and_text_with_one(urls: tuple[str, str], data: Path) -> None:
    with _client(urls[0]) as http:
        rc = StudioClient(http)
        plain = rc.page("/episodes/" + "a" * 32 + "/tokens")
        assert _cells(plain, "ctx")[:3] == ["1", "2", "3"]
        assert _cells(rc.page("/episodes/" + "a" * 32 + "/tokens", params={"o0": str(PAGE_TOKENS)}), "s")[0] == "2000"
        for spec in (data / "tok" / "tokenizer.json", data / "tok"):
            doc = rc.page("/episodes/" + "a" * 32 + "/tokens", params={"tokenizer": str(spec)})
            assert _cells(doc, "ctx")[:3] == ["w1", "w2", "w3"]
            assert str(spec) in doc.by_id("tokenizer-used").text()
            assert doc.by_id("tokenizer-path").attrs["value"] == str(spec)
            later = doc.with_class("token-page-next")[0].attrs["href"]
            assert f"o0={PAGE_TOKENS}" in later and "tokenizer=" in later
            second = rc.page("/episodes/" + "a" * 32 + "/tokens" + later.split("#")[0])
            assert _cells(second, "ctx")[0] == f"w{PAGE_TOKENS + 1}"
            sampled = _cells(second, "s")  # the prompt's last 176 tokens, then the 30 sampled
            assert sampled[:2] == ["w2000", "w2001"] and sampled[-5:] == ["E0", "E1", "E2", "E3", "E4"]  # engine's wins


@pytest.mark.parametrize(("name", "says"), [
    ("nowhere/tokenizer.json", "there is no file or directory"),
    ("junk.json", "is not a tokenizer file"),
    ("empty", "is a directory without a tokenizer.json"),
])  # fmt: skip
def test_a_path_that_does_not_load_is_said_inside_the_view(urls: tuple[str, str], data: Path, name: str,
                                                           says: str) -> None:  # fmt: skip
    with _client(urls[0]) as http:
        for headers in ({}, {"HX-Request": "true"}):
            resp = http.get("/episodes/" + "a" * 32 + "/tokens", params={"tokenizer": str(data / name)}, headers=headers)
            assert resp.status_code == 200 and "Traceback" not in resp.text
            doc = StudioClient(http).page("/episodes/" + "a" * 32 + "/tokens", params={"tokenizer": str(data / name)})
            assert says in doc.by_id("tokenizer-error").text()
            assert _cells(doc, "ctx")[:2] == ["1", "2"]  # the ids are still shown


def test_the_setting_names_the_tokenizer_and_the_field_overrides_it(urls: tuple[str, str], data: Path) -> None:
    with _client(urls[1]) as http:
        rc = StudioClient(http)
        doc = rc.page("/episodes/" + "a" * 32 + "/tokens")
        assert _cells(doc, "ctx")[0] == "w1" and doc.by_id("tokenizer-path").attrs["value"] == str(data / "tok")
        cleared = rc.page("/episodes/" + "a" * 32 + "/tokens", params={"tokenizer": ""})
        assert _cells(cleared, "ctx")[0] == "1"


def test_decoding_leaves_unknown_ids_out_and_bad_paths_raise(data: Path) -> None:
    tok = load_tokenizer(str(data / "tok"))
    assert load_tokenizer(str(data / "tok" / "tokenizer.json")) is tok  # kept loaded
    assert decode_ids(tok, [5, 5, -1, VOCAB + 7]) == {5: "w5"}
    with pytest.raises(TokenizerError, match="not a file path"):
        load_tokenizer("x" * 5000)
