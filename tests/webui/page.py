"""Read the /web page like a browser would: its session, its forms' submissions, fragment URLs."""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx

from tests.webui.formsim import submitted

HX = {"HX-Request": "true"}


def form_fields(html: str, form_id: str) -> dict[str, list[str]]:
    """What submitting the form ``form_id`` in ``html`` would post."""
    start = html.index(f'<form id="{form_id}"')
    return submitted(html[start:html.index("</form>", start)])


@dataclass
class Tab:
    """One browser tab on /web: its own session id and fragment URLs."""

    client: httpx.Client
    html: str
    sid: str

    @classmethod
    def open(cls, client: httpx.Client, path: str = "/web") -> Tab:
        resp = client.get(path)
        assert resp.status_code == 200, resp.text
        sid = re.search(r'data-session="([^"]+)"', resp.text).group(1)
        return cls(client, resp.text, sid)

    def post(self, what: str, data: dict[str, list[str]], *, htmx: bool = True, **params: str) -> httpx.Response:
        return self.client.post(f"/web/s/{self.sid}/{what}", data=data, headers=HX if htmx else {}, params=params)

    def get(self, what: str, **params: str) -> httpx.Response:
        return self.client.get(f"/web/s/{self.sid}/{what}", headers=HX, params=params)

    def step(self, **fields: str) -> httpx.Response:
        """Step with the action form's fields (same "none" handling as :meth:`reset`)."""
        data = form_fields(self.html, "step-form")
        data.update({k: [v] for k, v in fields.items()})
        for name in fields:
            data.pop(f"{name}.~null", None)
        return self.post("step", data)

    def reset(self, **fields: str) -> httpx.Response:
        """Reset with the reset form's fields; a given value unticks that field's "none" box (as the JS does)."""
        data = form_fields(self.html, "reset-form")
        data.update({k: [v] for k, v in fields.items()})
        for name in fields:
            data.pop(f"{name}.~null", None)
        return self.post("reset", data)
