"""What a browser would submit for a rendered form (inputs outside <template> and disabled fieldsets)."""

from __future__ import annotations

from html.parser import HTMLParser


class _Submit(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pairs: list[tuple[str, str]] = []
        self.stack: list[tuple[str, bool]] = []
        self._select: tuple[str, list[tuple[str, bool]]] | None = None
        self._option: list[str] | None = None
        self._option_attrs: dict[str, str | None] = {}
        self._textarea: tuple[str, list[str]] | None = None

    @property
    def dead(self) -> bool:
        return any(off for _, off in self.stack)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("template", "fieldset"):
            self.stack.append((tag, tag == "template" or "disabled" in a))
        elif tag == "input":
            self._input(a)
        elif tag == "select" and not self.dead and "disabled" not in a and a.get("name"):
            self._select = (a["name"], [])
        elif tag == "option" and self._select is not None:
            self._option, self._option_attrs = [], a
        elif tag == "textarea" and not self.dead and "disabled" not in a and a.get("name"):
            self._textarea = (a["name"], [])

    def handle_endtag(self, tag):
        if tag in ("template", "fieldset") and self.stack:
            self.stack.pop()
        elif tag == "option" and self._select is not None and self._option is not None:
            a = self._option_attrs
            value = a["value"] if a.get("value") is not None else "".join(self._option)
            self._select[1].append((value or "", "selected" in a))
            self._option = None
        elif tag == "select" and self._select is not None:
            name, options = self._select
            chosen = [v for v, sel in options if sel] or [v for v, _ in options[:1]]
            self.pairs += [(name, v) for v in chosen[-1:]]
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            name, chunks = self._textarea
            text = "".join(chunks)
            self.pairs.append((name, text[1:] if text.startswith("\n") else text))
            self._textarea = None

    def handle_data(self, data):
        if self._option is not None:
            self._option.append(data)
        if self._textarea is not None:
            self._textarea[1].append(data)

    def _input(self, a):
        if self.dead or "disabled" in a or not a.get("name"):
            return
        kind = (a.get("type") or "text").lower()
        if kind in ("checkbox", "radio") and "checked" not in a:
            return
        if kind in ("button", "submit", "reset", "image", "file"):
            return
        default = "on" if kind in ("checkbox", "radio") else ""
        self.pairs.append((a["name"], a.get("value") if a.get("value") is not None else default))


def submitted(html: str) -> dict[str, list[str]]:
    """Form fields as a browser would post them: name -> values, in document order."""
    p = _Submit()
    p.feed(html)
    p.close()
    out: dict[str, list[str]] = {}
    for name, value in p.pairs:
        out.setdefault(name, []).append(value)
    return out
