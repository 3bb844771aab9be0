"""Render a bound form like the page does, and read back what a browser would submit."""

from __future__ import annotations

from typing import Any

from tests.webui.formsim import submitted
from webui.forms import bind, build_form, parse_form
from webui.templating import environment


def render_form(bound: Any) -> str:
    template = environment().from_string('{% from "_form_widgets.html" import form %}{{ form(b) }}')
    return template.render(b=bound)


def round_trip(schema: dict[str, Any], value: Any) -> tuple[Any, list[dict[str, Any]], str]:
    """value -> form HTML -> browser submission -> parsed value (and parse errors, and the HTML)."""
    node = build_form(schema)
    html = render_form(bind(node, value))
    parsed, errors = parse_form(node, submitted(html))
    return parsed, errors, html
