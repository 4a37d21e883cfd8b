"""Read an HTML report back (what a renderer wrote, or a browser's --dump-dom): the text of
each element by id, every tag with its attributes, and the figures' numbers."""

from __future__ import annotations

import re
from html.parser import HTMLParser

VOID = frozenset({"meta", "br", "link", "img", "input", "hr", "source", "rect", "path"})
# Elements whose text is a unit of its own: their text is joined to the next with a space.
BLOCKS = frozenset({"td", "th", "tr", "li", "p", "div", "dt", "dd", "caption", "summary",
                    "h1", "h2", "figcaption", "section", "table", "thead", "tbody"})


class Page(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text_by_id: dict[str, str] = {}
        self.script_texts: list[str] = []
        self._open: list[tuple[str, str | None, list[str]]] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag in VOID:
            return
        self._open.append((tag, attributes.get("id"), []))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        while self._open:
            name, id_, parts = self._open.pop()
            text = "".join(parts)
            if name == "script":
                self.script_texts.append(text)
            if id_:
                self.text_by_id[id_] = " ".join(text.split())
            if self._open:
                self._open[-1][2].append(f" {text} " if name in BLOCKS else text)
            if name == tag:
                break

    def handle_data(self, data):
        if self._open:
            self._open[-1][2].append(data)

    def number(self, id_: str) -> float:
        """The number an element's text shows: `1,234` -> 1234, `33.3%` -> 33.3."""
        match = re.search(r"-?[0-9][0-9,]*(?:\.[0-9]+)?", self.text_by_id[id_])
        assert match, f"no number in #{id_}: {self.text_by_id[id_]!r}"
        return float(match.group().replace(",", ""))

    def count(self, tag: str, **attrs: str) -> int:
        return sum(1 for name, a in self.tags
                   if name == tag and all(a.get(k) == v for k, v in attrs.items()))

    def loads(self) -> list[str]:
        """Every URL the page would fetch or link to (src, href, srcset, action, data,
        CSS url() and @import)."""
        urls = [v for _, a in self.tags for k, v in a.items()
                if k in ("src", "href", "srcset", "action", "data", "poster",
                         "xlink:href") and v]
        return urls


def network_urls(page: Page, raw: str) -> list[str]:
    found = [u for u in page.loads() if re.match(r"\s*(https?:)?//", u, re.I)]
    style = " ".join(re.findall(r"<style>(.*?)</style>", raw, re.S))
    found += re.findall(r"url\(|@import", style)
    return found
