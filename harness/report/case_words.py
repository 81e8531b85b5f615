"""Upstream's own words behind each case release's role, and the findings upstream does not have.

Each case folder may hold an `upstream.toml` (written by hand, since no run measures it):

- `[[words]]`: for some releases (`releases`, named as the page names them: `2.18.0 (last line-buffered)`),
  the `role` their case.toml gives, and the documentation or maintainer statement it rests on: `quote`d
  exactly from `source`, with where it was `checked` (a tag's file, a changelog, the thread read);
- `[[unreported]]`: a `finding` no upstream thread reports, on which `releases`, with the `queries` searched
  (`searched`: where and when) and the `nearest` threads they found and why each is not it;
- `[report]`: what a case's report.md says beside its run: the `settings` that are not the framework's
  defaults and why, the `waits` to expect, the related upstream `threads`, and a reproduction with the framework
  alone: its script (`framework_only`, in the case folder) and the output of its runs (`framework_only_output`);
  the `mechanism` in the framework's own terms, which titles the report; the `source` lines involved, in the
  source a maintainer edits at the release's tag beside the published file's; a candidate `fix` (its patches,
  in the case folder: the source's first), how it was checked (`fix_note`) and that check's output
  (`fix_output`);
- `[bisect]`: the `gaps`, each release upstream tagged that the registry reachable here lacks between the
  releases a bisection reports, with what upstream's changelog says changed there.

The analyses page, the READMEs' generated blocks and report.md read it from here; tests/test_case_numbers.py
holds every role in it to its case.toml.
"""

from __future__ import annotations

import os

import tomllib

from killtest.harness.design.case_spec import CASES_FOLDER, load_cases
from killtest.harness.errors import KilltestError

WORDS_FILE = "upstream.toml"
_KEYS = {"words": {"releases", "role", "source", "quote", "checked"},
         "unreported": {"finding", "releases", "searched", "queries", "nearest"},
         "bisect": {"gaps"},
         "report": {"settings", "waits", "threads", "framework_only", "framework_only_output",
                    "mechanism", "source", "fix", "fix_output", "fix_note"}}


def case_words(name: str, root: str = CASES_FOLDER) -> dict:
    """The case's upstream.toml as {words: [...], unreported: [...], report: {...}, bisect: {...}}; empty when it
    has none.
    A key this module does not know is a one-line error naming the file and the key."""
    path = os.path.join(root, name, WORDS_FILE)
    try:
        with open(path, "rb") as src:
            data = tomllib.load(src)
    except FileNotFoundError:
        return {"words": [], "unreported": [], "report": {}, "bisect": {}}
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise KilltestError(f"{os.path.relpath(path, root)}: {err}") from None
    for table, rows in data.items():
        if table not in _KEYS:
            raise KilltestError(f"{name}/{WORDS_FILE}: unknown table [{table}]; it may hold {', '.join(_KEYS)}")
        for row in rows if isinstance(rows, list) else [rows]:
            extra = set(row) - _KEYS[table]
            if extra:
                raise KilltestError(f"{name}/{WORDS_FILE}: unknown key {table}.{sorted(extra)[0]};"
                                    f" [{table}] may hold {', '.join(sorted(_KEYS[table]))}")
    return {"words": data.get("words", []), "unreported": data.get("unreported", []),
            "report": data.get("report", {}), "bisect": data.get("bisect", {})}


def release_name(version: str, label: str = "") -> str:
    """`2.18.0 (last line-buffered)`: a release as the page and upstream.toml name it."""
    return version + (f" ({label})" if label else "")


def words_for(name: str, version: str, label: str = "") -> list[dict]:
    """The [[words]] entries that name this release (a document and a maintainer's word may both stand)."""
    wanted = release_name(version, label)
    return [w for w in case_words(name)["words"] if wanted in w.get("releases", [])]


def words_line(name: str, version: str, label: str = "") -> str:
    """`Upstream's words for this role (<source>): "..." Checked: ...`, each entry's; empty when there are none."""
    return " ".join(f"Upstream's words for this role (<{w['source']}>): \"{w['quote']}\" Checked: {w['checked']}."
                    for w in words_for(name, version, label))


def unreported_section(names: list[str]) -> list[str]:
    """The analyses page's section: how many findings no upstream thread reports, each with its searches."""
    found = [(name, row) for name in names for row in case_words(name)["unreported"]]
    lines = ["## Findings upstream does not have", "",
             f"{len(found)} finding{'' if len(found) == 1 else 's'} of these cases no upstream issue or pull"
             " request reports, as far as the searches below found (each case's upstream.toml keeps them; a"
             " search that finds nothing is not proof that nothing exists). Every other flagged release"
             " quotes the upstream thread or documentation it rests on, in its section above."]
    for i, (name, row) in enumerate(found, 1):
        lines += ["", f"{i}. **[{name}](#{name})**, {', '.join(row['releases'])}: {row['finding']}",
                  f"   Searched {row['searched']}, for:",
                  *[f"   - `{query}`" for query in row["queries"]],
                  "   The nearest threads they found, and why each is not this finding:",
                  *[f"   - {thread}" for thread in row["nearest"]]]
    return lines


def fix_lines(name: str) -> list[str]:
    """The analyses page's line for a case's candidate fix, if its upstream.toml names one."""
    said = case_words(name)["report"]
    if not said.get("fix"):
        return []
    return ["", f"A candidate fix ([patch](../../scrapers/cases/{name}/{said['fix'][0]}), [its check, before and"
                f" after](../../scrapers/cases/{name}/{said.get('fix_output', '')})): {said.get('fix_note', '')}"]


def given_roles() -> dict[tuple[str, str, str], str]:
    """{(case, version, label): role} as every case.toml gives it now."""
    try:
        return {(c.name, r.version, r.label): r.role for c in load_cases() for r in c.releases}
    except KilltestError:  # a case.toml being edited: the measured roles stand
        return {}


def roles_by_key(name: str) -> dict[str, str]:
    """{release key (results/cases/<case>/<key>/): role} as the case's case.toml gives it now: an exploration or
    a bisection recorded the role of its day, and a role is a label that changes without a run."""
    try:
        return {r.key: r.role for c in load_cases(only=[name]) for r in c.releases}
    except KilltestError:  # a case no longer shipped, or a case.toml being edited: the recorded roles stand
        return {}


def relabelled(data: dict) -> dict:
    """cases.json with each release's role as its case.toml gives it now: a role is a label, not a measured
    figure, and a case.toml's role changes without a run (the figures stay as measured)."""
    given = given_roles()
    for name, case in data.get("cases", {}).items():
        for r in case["releases"]:
            r["role"] = given.get((name, r["version"], r.get("label", "")), r.get("role", ""))
    return data


# The reported bugs read and not (yet) made cases, and why: written by hand, since no run measures them.
NOT_CASES = """\
## Reported, read, and not a case

- **crawlee-python #1501** (a migration, SIGTERM then a kill, resets the handled count, so the crawl runs
  again): not measured yet. The bug is in the statistics a migration persists, and a lost count is not a
  lost or duplicated record: the case would need a promise on repeated requests across a migration
  (`bounded_requests` on the `d<seconds>:<grace>` redeploy point), which is still to be written.
- **Scrapy #3333 / #845 / #3413, queuelib #59** (a disk queue's file cut short, `struct.error: unpack
  requires a buffer of 4 bytes` on resume): no timed schedule reproduced it on every run, but
  `killtest cases --explore scrapy-7094` found a store-write point that does: `w5` on 2.13.4, killed at
  the first write of `requests.queue/0`, whose 4-byte header queuelib buffers with the first record
  (scrapy-7094's README has the mechanism and the replay line). Not a case of its own yet.
- **apify-sdk-python #1104** (graceful stop on migration): it reacts to the platform's `MIGRATING` and
  `ABORTING` events, which the SDK listens for only on the platform; the local SIGTERM stops Twisted and
  exits cleanly on both 4.0.1 and 4.0.2, so #1103 is shown under a hard kill instead.
- **Scrapy #7978** ("Support crash-tolerant crawls", open since 2026-08): a feature request, not a bug
  with a fixed release. It states what scrapy-4106 and scrapy-7094 measure (`JOBDIR` survives only a
  clean stop) and proposes an opt-in crash-tolerant mode (crash-safe queues and duplicate filter, a
  durable `active.json`, in-flight requests and items tracked, resumable feeds) that no release has yet;
  when one does, the pair is that mode off (flagged) and on (clean). The one part released, #7877's
  SQLite-backed queues (an opt-in in 2.19.0), does not change scrapy-4106 by itself: with
  `SCHEDULER_DISK_QUEUE=scrapy.squeues.PickleLifoSQLiteQueue` and `SCHEDULER_START_DISK_QUEUE=
  scrapy.squeues.PickleFifoSQLiteQueue` the same `r250` kill still lost 290 of 500 (`killtest run`, one
  run, 2.19.0's env), as #7978 says: `active.json` is written only at close.
- **crawlee #847** (Apify SDK 0.21: an empty file in the file-system queue's `pending` folder after an
  interrupt; "will be fixed in 0.22 by a new RequestQueue implementation", SQLite): the symptom is the
  one crawlee-node-1736 and crawlee-node-2085 show on Crawlee 3.x, but the release it was reported on,
  `apify` 0.21.x, declares `"node": "^10.17.0 || ^12.3.0"`, and the only Node.js here and in CI is 20.
  A case on an engine the release refuses would measure that mismatch, not the bug; it was not run.
- **Scrapy's other feed exporters** (JSON, CSV, XML; the cases use `-o FILE:jsonlines`): under every
  format Scrapy writes the feed through the same buffered `FileFeedStorage`, so what a SIGKILL costs in
  items is what the JSON-lines runs show. The other formats add breakage of their own that killtest's
  stores cannot read: a JSON array cut by a kill has no closing `]` and, appended to by the next start's
  `-o`, is no longer JSON (Scrapy's tutorial says so and recommends JSON lines for appending); the
  `jsonl` store reads one object per line, which the array's `{...},` lines are not; and killtest has no
  CSV or XML store kind (a CSV feed appended to repeats its header, an XML one is left without
  `</items>`). A case of them would report the format, not the crash-safety bug."""
