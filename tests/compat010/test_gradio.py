"""A ``gradio_builder`` is mounted when Gradio is installed: our package served by the 0.10 peer's
interpreter (which has Gradio) with our code first on the path; our /web page stays."""

from __future__ import annotations

import httpx

from tests.peer010 import PEERS010, _serving, peer010_python


def test_gradio_builder_is_mounted_beside_our_page() -> None:
    with _serving(peer010_python(), PEERS010 / "envs" / "gradio_env.py", "app", ours=True, extra_env=None) as url:
        config = httpx.get(url + "/web/gradio/config", timeout=30)
        assert config.status_code == 200, config.text[:500]
        labels = {c.get("props", {}).get("label") for c in config.json()["components"]}
        assert {"Say something", "Result"} <= labels
        assert httpx.get(url + "/web/gradio/", timeout=30).status_code == 200
        page = httpx.get(url + "/web", timeout=30)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        probe = httpx.post(url + "/probe", json={"text": "hey"}, timeout=30).json()
        assert probe["result"]["observation"]["echoed"] == "hey" and probe["result"]["reward"] == 3.0
        assert probe["title"] == "Say UI" and probe["chat"] is False
        assert [f["name"] for f in probe["fields"]] == ["text"]
        health = httpx.get(url + "/health", timeout=30).json()
        assert health["status"] == "healthy"
