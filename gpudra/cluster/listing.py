"""Paged lists: `limit` + `continue`, one page in memory at a time, complete objects out.

A real API server leaves `kind` and `apiVersion` out of list items (kubernetes/kubernetes#3030);
they are filled in from the list (`PodList` -> `Pod`, the group/version requested), first in
each object, so downstream code sees the same objects as in a manifest.

**Expired continue tokens (410 Gone).** When etcd has compacted past the list's revision, the
next page fails with 410 Expired. The list restarts from the beginning (no `continue`), at most
`RetryPolicy.list_restarts` times, and objects already handed out are skipped by
`metadata.uid` (namespace/name for the rare object without one). So every object comes out
once, in the version first seen. The cost is one set of uid strings per list (about 2 MB for
20,000 objects), kept for every list because a 410 can come on any page; the alternative,
buffering a whole resource type until its list completes, would hold every object at once.
Continuing with the "inconsistent" token a 410 carries was not chosen: it skips objects
created meanwhile before the resume point, which a restart does not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from gpudra.cluster.errors import ClusterRequestError
from gpudra.cluster.records import ListProgress, ResourceError, ResourceType
from gpudra.k8s.objects import noun_for, plural

if TYPE_CHECKING:
    from gpudra.cluster.transport import Transport

ProgressHook = Callable[[ListProgress], None]
Object = dict[str, Any]
# The most pages one list may take. Kubernetes' largest tested clusters hold 150,000 pods: 300
# pages of 500. 2,000 pages (a million objects) is far past any real resource type, and stops a
# server that hands out continue tokens forever.
MAX_LIST_PAGES = 2000


class Listing:
    """One list of one resource type, read lazily: iterate for pages (lists of objects).

        listing = cluster.list(pods)
        for page in listing:
            ...
        if listing.error: ...        # a ResourceError; also in cluster.errors

    After the iteration: `complete` (every page was read), `not_served` (404: the type went
    away, nothing read, no error), `error`, `objects`, `pages`, `restarts`. A Listing can be
    iterated once.
    """

    def __init__(self, transport: Transport, resource: ResourceType, namespace: str | None, *,
                 page_size: int, label_selector: str | None, field_selector: str | None,
                 max_restarts: int, parse: Callable[[bytes, str], Any],
                 record: Callable[[ResourceError], None],
                 on_page: ProgressHook | None = None) -> None:
        self.resource = resource
        self.namespace = namespace if resource.namespaced else None
        self._transport = transport
        self._query = {"limit": str(page_size)}
        if label_selector:
            self._query["labelSelector"] = label_selector
        if field_selector:
            self._query["fieldSelector"] = field_selector
        self._max_restarts = max_restarts
        self._parse = parse
        self._record = record
        self._on_page = on_page
        self._started = False
        self.complete = False
        self.not_served = False
        self.error: ResourceError | None = None
        self.objects = 0
        self.pages = 0
        self.restarts = 0

    def __iter__(self) -> Iterator[list[Object]]:
        if self._started:
            raise RuntimeError(f"the list of {self.resource.qualified_name} was already read")
        self._started = True
        return self._pages()

    def items(self) -> Iterator[Object]:
        """The objects one by one (still read page by page)."""
        for page in self:
            yield from page

    def _pages(self) -> Iterator[list[Object]]:
        resource = self.resource
        path = resource.collection_path(self.namespace)
        seen: set[str] = set()
        tokens: set[str] = set()  # every continue token of this list: one seen again loops
        token = ""
        while True:
            query = {**self._query, "continue": token} if token else self._query
            try:
                if self.pages >= MAX_LIST_PAGES:
                    raise self._invalid(path, f"the list did not end after {MAX_LIST_PAGES:,} "
                                              "pages (continue tokens without end)")
                document = self._parse(self._transport.get(path, query), path)
                page, token = self._page(path, document, seen)
                if token and token in tokens:
                    raise self._invalid(path, "the server sent a continue token it had sent "
                                              "before (the list would never end)")
                tokens.add(token)
            except ClusterRequestError as error:
                if error.status == 410 and token and self.restarts < self._max_restarts:
                    self.restarts += 1
                    token = ""
                    tokens.clear()
                    continue
                self._fail(error)
                return
            metadata = document.get("metadata") or {}
            self.objects += len(page)
            self.pages += 1
            if self._on_page is not None:
                self._on_page(ListProgress(resource, self.namespace, self.objects, self.pages,
                                           metadata.get("remainingItemCount"), self.restarts,
                                           done=not token))
            if page:
                yield page
            if not token:
                self.complete = True
                return

    def _page(self, path: str, document: Any, seen: set[str]) -> tuple[list[Object], str]:
        """The page's new objects and its continue token; a ClusterRequestError for an answer
        that is not a list of objects, or holds more than `limit` of them."""
        if not isinstance(document, dict) or not isinstance(document.get("metadata") or {}, dict):
            raise self._invalid(path, f"the answer is a JSON {_shape(document)}, not a list "
                                      "object")
        items = document.get("items") or []
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise self._invalid(path, "its items are not all objects")
        limit = int(self._query["limit"])
        if len(items) > limit:
            raise self._invalid(path, f"one page held {len(items):,} "
                                      f"{noun_for(len(items), 'object')} though gpudra asked "
                                      f"for at most {limit} (limit ignored)")
        token = (document.get("metadata") or {}).get("continue") or ""
        if not isinstance(token, str):
            raise self._invalid(path, "its continue token is not a string")
        return self._complete(document, seen), token

    @staticmethod
    def _invalid(path: str, problem: str) -> ClusterRequestError:
        return ClusterRequestError(f"the answer to GET {path} is malformed: {problem}",
                                   path=path, status=200, reason="InvalidResponse",
                                   server_message=f"malformed answer: {problem}")

    def _complete(self, document: dict[str, Any], seen: set[str]) -> list[Object]:
        """The page's new objects, with kind and apiVersion."""
        list_kind = str(document.get("kind") or "")
        kind = list_kind[:-4] if list_kind.endswith("List") and len(list_kind) > 4 \
            else self.resource.kind
        api_version = str(document.get("apiVersion") or self.resource.api_version)
        restarted = self.restarts > 0
        page = []
        for item in document.get("items") or ():
            metadata = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
            uid = metadata.get("uid")  # a str from a real server; anything from a hostile one
            key = uid if isinstance(uid, str) and uid else \
                f"{metadata.get('namespace')}/{metadata.get('name')}"
            if restarted and key in seen:
                continue
            seen.add(key)
            if "kind" not in item or "apiVersion" not in item:
                item = {"apiVersion": api_version, "kind": kind, **item}
            page.append(item)
        return page

    def _fail(self, error: ClusterRequestError) -> None:
        if error.status == 404:  # the type went away since discovery (a CRD was deleted)
            self.not_served = True
            resulting_error = None
        else:
            message = error.server_message
            if error.status == 410:
                message += f" (the list was restarted {plural(self.restarts, 'time')})"
            resulting_error = ResourceError(
                "list", self.resource.group, self.resource.name, self.resource.version,
                self.namespace, error.status, error.reason, message, self.objects)
            self.error = resulting_error
            self._record(resulting_error)
        if self._on_page is not None:
            self._on_page(ListProgress(self.resource, self.namespace, self.objects, self.pages,
                                       None, self.restarts, done=True, error=resulting_error))


def _shape(value: Any) -> str:
    return {list: "array", str: "string", type(None): "null", bool: "boolean"}.get(
        type(value), "number" if isinstance(value, (int, float)) else "object")
