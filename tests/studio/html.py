"""Parse studio HTML strictly (every non-void element closed in order) and query it."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = frozenset("area base br col embed hr img input link meta source track wbr".split())


@dataclass(eq=False)
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.iter()

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Node]:
        want = {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items()}
        return [n for n in self.iter() if (tag is None or n.tag == tag)
                and all(n.attrs.get(k) == v for k, v in want.items())]

    def find(self, tag: str | None = None, **attrs: str) -> Node | None:
        found = self.find_all(tag, **attrs)
        return found[0] if found else None

    def by_id(self, element_id: str) -> Node:
        found = self.find(id=element_id)
        assert found is not None, f"no element #{element_id}"
        return found

    def has_class(self, name: str) -> bool:
        return name in self.attrs.get("class", "").split()

    def with_class(self, name: str) -> list[Node]:
        return [n for n in self.iter() if n.has_class(name)]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v if v is not None else "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        node = Node(tag, {k: v if v is not None else "" for k, v in attrs})
        self.stack[-1].children.append(node)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        top = self.stack[-1]
        assert top.tag == tag, f"</{tag}> closes <{top.tag}> (open: {[n.tag for n in self.stack[1:]]})"
        self.stack.pop()

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(html: str) -> Node:
    """The document tree; fails on a mismatched or unclosed element."""
    b = _Builder()
    b.feed(html)
    b.close()
    assert len(b.stack) == 1, f"unclosed elements: {[n.tag for n in b.stack[1:]]}"
    return b.root


def page(html: str) -> Node:
    """A full studio page: doctype, one <main>, the nav and the CSRF header holder."""
    assert html.lstrip().lower().startswith("<!doctype html>")
    root = parse(html)
    assert len(root.find_all("main")) == 1
    assert root.find("nav") is not None
    return root


def fragment(html: str) -> Node:
    """An htmx fragment: no document shell."""
    assert "<html" not in html.lower() and "<!doctype" not in html.lower()
    return parse(html)
