"""The journal's shape as its reader types it (gpudra.convert.journal.journal_of): a module of
its own, imported when a journal is read, so that only such a run imports msgspec. An unknown
field, a missing one or a value of another type refuses the whole journal."""

import msgspec


class JournalFile(msgspec.Struct, forbid_unknown_fields=True):
    path: str
    old: str | None  # the sha256 of what the file held when planned; None: it did not exist
    new: bytes  # base64 in the JSON


class Journal(msgspec.Struct, forbid_unknown_fields=True):
    version: int
    host: str
    roots: list[str]
    files: list[JournalFile]
