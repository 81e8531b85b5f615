"""What changed between a recording and the one `killtest record` just made over it, said before it is replaced.

A recording goes stale as its site changes. Recording again over it compares the two, so the user
sees what the live site now does differently before the old files go (they are replaced only once
the new WARC and reference are complete, by rename):
- pages: a page is its request (method and URL, credentials masked); added, removed, or changed
  (another status, or another text once decoded);
- reference records: by key; added, removed, or changed (another value of a field).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass

from killtest.fixture_site.recordings.recorded_site import RecordedSite, load_recorded_site, reference_path

EXAMPLES = 3


@dataclass(frozen=True)
class Changes:
    """Added, removed and changed pages (their match keys) and reference records (their keys), sorted."""

    pages_added: tuple[str, ...]
    pages_removed: tuple[str, ...]
    pages_changed: tuple[str, ...]
    records_added: tuple[str, ...]
    records_removed: tuple[str, ...]
    records_changed: tuple[str, ...]

    @property
    def none(self) -> bool:
        return not any((self.pages_added, self.pages_removed, self.pages_changed, self.records_added,
                        self.records_removed, self.records_changed))

    def lines(self) -> list[str]:
        """Two lines: pages, then reference records, each count with its first examples."""
        def part(word: str, found: tuple[str, ...]) -> str:
            listed = f" ({', '.join(found[:EXAMPLES])}{', ...' if len(found) > EXAMPLES else ''})" if found else ""
            return f"{len(found)} {word}{listed}"

        return [f"pages: {part('added', self.pages_added)}, {part('removed', self.pages_removed)},"
                f" {part('changed', self.pages_changed)}",
                f"reference records: {part('added', self.records_added)}, {part('removed', self.records_removed)},"
                f" {part('changed', self.records_changed)}"]


def _old_records(recording: str, urls: Callable[[str], str]) -> dict[str, dict[str, str]]:
    """The old reference's records, their URLs masked as the new one's are (an old reference may predate that)."""
    try:
        with open(reference_path(recording), encoding="utf-8") as src:
            return {urls(str(r["key"])): {k: urls(str(v)) for k, v in r["fields"].items()}
                    for r in json.load(src)["records"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # no reference (or a damaged one): every new record counts as added


def compare(old_recording: str, new: RecordedSite, new_records: dict[str, dict[str, str]]) -> Changes | None:
    """The changes from the recording at `old_recording` to `new`; None when there is no old recording.
    A recording that cannot be read raises ValueError (one line)."""
    if not os.path.exists(old_recording):
        return None
    old = load_recorded_site(old_recording, new.start_url, new.ignore_params, need_reference=False,
                             redaction=new.redaction)
    before, after = old.exchanges, new.exchanges
    common = set(before) & set(after)
    changed_pages = [k for k in common if (before[k].status, before[k].text()) != (after[k].status, after[k].text())]
    records = _old_records(old_recording, new.redaction.urls)
    return Changes(
        pages_added=tuple(sorted(set(after) - set(before))), pages_removed=tuple(sorted(set(before) - set(after))),
        pages_changed=tuple(sorted(changed_pages)),
        records_added=tuple(sorted(set(new_records) - set(records))),
        records_removed=tuple(sorted(set(records) - set(new_records))),
        records_changed=tuple(sorted(k for k in set(records) & set(new_records) if records[k] != new_records[k])))
