"""A spec file as TOML tables plus its text: `extends` merged, `set_args` applied, and every key's line.

harness/design/specfile.py says what the keys mean; this module only reads the file, so that each
mistake found later can name `FILE:LINE` (in the spec, or in the spec it extends).
"""

from __future__ import annotations

import os
import re
import string
import sys

from killtest.harness.design.model import PLACEHOLDERS
from killtest.harness.errors import KilltestError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 takes the same parser from PyPI
    import tomli as tomllib


class SpecFile:
    """The parsed TOML and its text, so that every error can name a line.

    `extends = "other.toml"` (a path relative to the spec) starts from another spec's tables and
    replaces the keys this one sets: a design that differs from another in one line says only that.
    `set_args` is applied here, to the merged tables, so a spec extending this one inherits the result.
    """

    def __init__(self, path: str, extended_by: tuple[str, ...] = ()) -> None:
        self.path = path
        self.base: SpecFile | None = None
        # (section, key, placeholder) for every placeholder a checked string uses, in the order checked:
        # load_spec refuses one the design's runs could not fill (specfile.py, `_check_fillable`).
        self.used: list[tuple[str, str, str]] = []
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
        self._set_args()

    def _set_args(self) -> None:
        """Apply this spec's `design.set_args` to the args (or command) it holds or inherits."""
        design = self.data.get("design")
        if not isinstance(design, dict) or "set_args" not in design:
            return
        changes = design.pop("set_args")
        if not isinstance(changes, dict) or not all(flag and (isinstance(value, str) or value is True)
                                                    for flag, value in changes.items()):
            raise self.error("design", "set_args", "design.set_args is a table { \"--flag\" = \"value\" }, or"
                                                   " \"--flag\" = true for a flag without a value")
        target = "args" if "args" in design else "command" if "command" in design else None
        if target is None:
            raise self.error("design", "set_args", "design.set_args changes design.args or design.command, and"
                                                   " neither this spec nor the one it extends gives them")
        words = design[target]
        if not isinstance(words, list) or not all(isinstance(word, str) for word in words):
            raise self.error("design", target, f"design.{target} must be a list of strings")
        for flag, value in changes.items():
            if isinstance(value, str):
                self.check_placeholders("design", "set_args", value)
            words = set_argument(words, flag, value)
        design[target] = words

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

    def required_string(self, table: dict, section: str, key: str) -> str:
        value = self.string(table, section, key, required=True)
        assert value is not None  # string() has refused a missing one
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
        self.used += [(section, key, name) for name in sorted(names)]
        unknown = sorted(names - set(PLACEHOLDERS))
        if unknown:
            raise self.error(section, key, f"{section}.{key} uses {{{unknown[0]}}}; the placeholders are "
                                           + ", ".join("{" + p + "}" for p in PLACEHOLDERS))


def set_argument(words: list[str], flag: str, value: str | bool) -> list[str]:
    """`words` with `flag` set to `value` as `design.set_args` says (see the module docstring)."""
    words = list(words)
    for index, word in enumerate(words):
        if word == flag:
            if value is True:
                return words  # the flag is there already
            if index + 1 < len(words):
                words[index + 1] = str(value)
            else:
                words.append(str(value))
            return words
        if value is not True and word.startswith(flag + "="):
            words[index] = f"{flag}={value}"
            return words
    return words + ([flag] if value is True else [flag, str(value)])
