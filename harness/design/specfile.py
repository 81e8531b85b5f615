"""Read a design spec: a small TOML file that describes any scraper, in any language, to killtest.

    [design]
    name = "my-scraper"
    claims_idempotence = true
    command = ["node", "{spec_dir}/scraper.js", "--site", "{base_url}", "--db", "{store}"]

    [store]
    kind = "sqlite"
    path = "{work_dir}/records.sqlite"
    records = "SELECT sku, price, first_seen, last_changed FROM products"
    key = "sku"
    fields = ["price"]

Every mistake is one line that names the file and the line to fix. The placeholders are listed in
harness/design/model.py; the README has a complete example.
"""

from __future__ import annotations

import os
import re
import string
import sys

from harness.design.model import PLACEHOLDERS, STORE_KINDS, Design, StoreSpec
from harness.errors import KilltestError
from fixture_site.catalog import TRUTH_FIELDS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 takes the same parser from PyPI
    import tomli as tomllib

DESIGN_KEYS = {"name", "claims_idempotence", "control", "module", "args", "command", "env", "commit_path",
               "side_effects"}
STORE_KEYS = {"kind", "path", "records", "key", "fields", "written_at", "changed_at", "leases", "files", "counter"}
SECTIONS = {"design", "store", "zoo"}  # [zoo]: the scenario that exposes a zoo design's bug (harness/faults/zoo_scenarios.py)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class SpecFile:
    """The parsed TOML and its text, so that every error can name a line.

    `extends = "other.toml"` (a path relative to the spec) starts from another spec's tables and
    replaces the keys this one sets: a design that differs from another in one line says only that.
    """

    def __init__(self, path: str, extended_by: tuple[str, ...] = ()) -> None:
        self.path = path
        self.base: SpecFile | None = None
        try:
            with open(path, "rb") as src:
                raw = src.read()
        except OSError as error:
            raise KilltestError(f"cannot read the design spec {path!r}: {error.strerror}") from None
        try:
            self.data = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise KilltestError(f"{path}: not a valid TOML file: {error}") from None
        self.lines = raw.decode("utf-8").splitlines()
        base = self.data.pop("extends", None)
        if base is not None:
            if not isinstance(base, str):
                raise self.error("", "extends", "extends must be the path of another spec, as a string")
            base_path = os.path.normpath(os.path.join(os.path.dirname(path), base))
            if os.path.abspath(base_path) in extended_by + (os.path.abspath(path),):
                raise self.error("", "extends", f"extends {base!r} goes round in a circle")
            self.base = SpecFile(base_path, extended_by + (os.path.abspath(path),))
            merged = {section: dict(table) for section, table in self.base.data.items() if section != "zoo"}
            for section, table in self.data.items():
                merged[section] = {**merged.get(section, {}), **table} if isinstance(table, dict) else table
            self.data = merged

    def line_of(self, section: str, key: str | None = None) -> int | None:
        """The line of `key` in `[section]` (or of the section header), counted from 1; "" is the top."""
        current = ""
        for number, text in enumerate(self.lines, start=1):
            stripped = text.strip()
            header = re.match(r"^\[([^\[\]]+)\]", stripped)
            if header:
                current = header.group(1).strip()
                if key is None and current == section:
                    return number
            elif current == section and key is not None and re.match(rf"^{re.escape(key)}\s*=", stripped):
                return number
        return None

    def place(self, section: str, key: str | None = None) -> str | None:
        """`FILE:LINE` of a key, in this spec or the one it extends, wherever it was written."""
        line = self.line_of(section, key)
        if line is not None:
            return f"{self.path}:{line}"
        return self.base.place(section, key) if self.base is not None and key is not None else None

    def where(self, section: str, key: str | None = None) -> str:
        return self.place(section, key) or self.path

    def error(self, section: str, key: str | None, message: str) -> KilltestError:
        return KilltestError(f"{self.where(section, key)}: {message}")

    def table(self, section: str, known: set[str], required: bool = True) -> dict:
        table = self.data.get(section)
        if table is None:
            if required:
                raise KilltestError(f"{self.path}: missing the [{section}] table")
            return {}
        if not isinstance(table, dict):
            raise self.error(section, None, f"[{section}] must be a table")
        for key in table:
            if key not in known:
                raise self.error(section, key, f"unknown key {section}.{key}; known: {', '.join(sorted(known))}")
        return table

    def string(self, table: dict, section: str, key: str, required: bool = False) -> str | None:
        value = table.get(key)
        if value is None:
            if required:
                raise self.error(section, None, f"[{section}] needs {key} = \"...\"")
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.error(section, key, f"{section}.{key} must be a non-empty string")
        self.check_placeholders(section, key, value)
        return value

    def strings(self, table: dict, section: str, key: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(section, key, f"{section}.{key} must be a list of strings")
        for part in value:
            self.check_placeholders(section, key, part)
        return tuple(value)

    def check_placeholders(self, section: str, key: str, text: str) -> None:
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
        except ValueError as error:
            raise self.error(section, key, f"{section}.{key}: {error} (write {{{{ and }}}} for literal braces)") \
                from None
        unknown = sorted(names - set(PLACEHOLDERS))
        if unknown:
            raise self.error(section, key, f"{section}.{key} uses {{{unknown[0]}}}; the placeholders are "
                                           + ", ".join("{" + p + "}" for p in PLACEHOLDERS))


def load_spec(path: str) -> Design:
    """The design a spec file describes; a KilltestError naming the line for anything wrong in it."""
    spec = SpecFile(path)
    for section, table in spec.data.items():
        if not isinstance(table, dict):
            raise spec.error("", section, f"unknown top-level key {section!r}; a spec has [design] and [store]"
                                          " tables, and may start with extends = \"other.toml\"")
        if section not in SECTIONS:
            raise spec.error(section, None, f"unknown table [{section}]; a spec has [design] and [store]")
    design = spec.table("design", DESIGN_KEYS)
    name = spec.string(design, "design", "name", required=True)
    if not NAME.match(name):
        raise spec.error("design", "name", f"design.name {name!r} may hold only letters, digits, '.', '_' and '-'")
    claims = design.get("claims_idempotence", False)
    if not isinstance(claims, bool):
        raise spec.error("design", "claims_idempotence", "design.claims_idempotence must be true or false")
    control = design.get("control", False)
    if not isinstance(control, bool) or (control and claims):
        raise spec.error("design", "control", "design.control is true only for a design that claims no idempotence"
                                              " and must show what the kills do (the naive design)")
    side_effects = design.get("side_effects", False)
    if not isinstance(side_effects, bool):
        raise spec.error("design", "side_effects", "design.side_effects must be true or false")
    module = spec.string(design, "design", "module")
    command = spec.strings(design, "design", "command")
    if (module is None) == (not command):
        raise spec.error("design", None, "[design] needs exactly one of module = \"package.module\" (a Python"
                                         " design) or command = [\"program\", \"arg\", ...] (any program)")
    if module is None and "args" in design:
        raise spec.error("design", "args", "design.args goes with module; put a command's arguments in command")
    env = design.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise spec.error("design", "env", "design.env must be a table of strings, for example { TZ = \"UTC\" }")
    for key, value in env.items():
        spec.check_placeholders("design", "env", value)
    spec_file = os.path.abspath(path)
    return Design(
        name=name, store=_store(spec), claims_idempotence=claims, control=control, module=module,
        args=spec.strings(design, "design", "args"), command_template=command,
        env=tuple(sorted(env.items())), commit_path=spec.strings(design, "design", "commit_path"),
        side_effects=side_effects, spec_file=spec_file)


def _store(spec: SpecFile) -> StoreSpec:
    store = spec.table("store", STORE_KEYS)
    kind = spec.string(store, "store", "kind", required=True)
    if kind not in STORE_KINDS:
        raise spec.error("store", "kind", f"store.kind {kind!r} is not one of {', '.join(STORE_KINDS)}")
    path = spec.string(store, "store", "path")
    records = spec.string(store, "store", "records")
    if kind in ("sqlite", "jsonl", "json_files") and path is None:
        raise spec.error("store", None, f"a {kind} store needs path = \"{{work_dir}}/...\"")
    if kind in ("sqlite", "postgres") and records is None:
        raise spec.error("store", None, f"a {kind} store needs records = \"SELECT key, field, ... FROM ...\"")
    if kind == "redis" and records is None:
        raise spec.error("store", None, "a redis store needs records = \"HASH\": the hash whose values are JSON records")
    if kind in ("jsonl", "json_files") and records is not None:
        raise spec.error("store", "records", f"a {kind} store has no query: each"
                                             f" {'line' if kind == 'jsonl' else 'file'} is one record")
    leases = spec.string(store, "store", "leases")
    if leases is not None and kind in ("jsonl", "json_files"):
        raise spec.error("store", "leases", "store.leases is a query, so it needs a sqlite or postgres store")
    counter = spec.string(store, "store", "counter")
    if counter is not None and kind not in ("sqlite", "postgres"):
        raise spec.error("store", "counter", "store.counter is a query, so it needs a sqlite or postgres store")
    files = spec.string(store, "store", "files")
    if files is not None:
        spec.check_placeholders("store", "files", files)
    return StoreSpec(kind=kind, path=path or "", records=records or "", counter=counter, files=files,
                     key=spec.string(store, "store", "key") or "sku", fields=_fields(spec, store),
                     written_at=spec.string(store, "store", "written_at"),
                     changed_at=spec.string(store, "store", "changed_at"), leases=leases,
                     spec_places=tuple((key, spec.where("store", key)) for key in store))


def _fields(spec: SpecFile, store: dict) -> tuple[tuple[str, str], ...]:
    """(site field, store column): a list names columns after the site's fields; a table maps them."""
    value = store.get("fields", ["price"])
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        pairs = [(v, v) for v in value]
    elif isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        pairs = list(value.items())
    else:
        raise spec.error("store", "fields", "store.fields is a list of the site's field names, or a table"
                                            " { site_field = \"store_column\" }")
    if not pairs:
        raise spec.error("store", "fields", "store.fields names no field, so no value could be checked")
    for site_field, _ in pairs:
        if site_field not in TRUTH_FIELDS:
            raise spec.error("store", "fields", f"store.fields names {site_field!r}, which the site does not show;"
                                                f" it shows: {', '.join(TRUTH_FIELDS)}")
    return tuple(pairs)
