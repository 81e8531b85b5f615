"""`l:<file>:<where>:<hit>`: SIGKILL at the hit-th execution of one line, inside the scraper's own
process, by a tracer the harness starts there (harness/faults/tracer.py; exact; Python designs only).

`<where>` names the line by a function (or a marker) and an offset, so an edit above the line does not
re-aim the point: `l:scrapers/idempotent.py:complete+3:2` is 3 lines below `def complete`, at its 2nd
execution. A method is `Class.method`; a marker is a comment `# killtest: NAME` on the line, and
`NAME+K` is K lines below it. An absolute line, `l:scrapers/idempotent.py:127:2`, still works. The
point is resolved to an absolute line when the schedule is parsed; an unknown name or an offset
outside its function is a one-line error. Files are relative to the project root.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from killtest.harness.design.model import PROJECT_ROOT
from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import DesignLike, PointKind, StartOptions, register

ANCHOR = re.compile(r"^(?P<name>[A-Za-z_][\w.\-]*)(?:\+(?P<offset>\d+))?$")
MARKER = re.compile(r"#\s*killtest:\s*(?P<name>[\w.\-]+)")



def shown_path(source_file: str) -> str:
    """How a line point names its file: relative to killtest's own tree for a built-in design (the same
    text in a checkout and an install), absolute for a user's design, so a replay line works from anywhere."""
    relative = os.path.relpath(source_file, PROJECT_ROOT)
    return source_file if relative.startswith(os.pardir) else relative

@register
@dataclass(frozen=True)
class AtLine(PointKind):
    path: str  # relative to the project root
    line: int
    hit: int = 1  # 1-based execution count of that line in the start
    # `complete+3` when the point was named by a function or marker: what it prints as. Two points at
    # the same line are the same point however they were named.
    anchor: str | None = field(default=None, compare=False)

    PREFIX = "l:"
    FORM = "l:<file>:<line or function+offset>:<hit>"
    EXAMPLES = ("l:scrapers/idempotent.py:complete+3:1",)
    ORDER = 50

    @classmethod
    def parse(cls, text: str, design: DesignLike | None = None) -> AtLine:
        parts = text[len(cls.PREFIX):].rsplit(":", 2)
        if len(parts) == 2 and design is not None and design.module is not None:
            parts = [shown_path(design.source_file), *parts]  # `l:complete+3:2`: the design's file
        path, where, hit_text = parts  # ValueError when a part is missing
        hit = int(hit_text)
        if not path or hit < 1:
            raise ValueError(text)
        if where.isdigit() or where.lstrip("-").isdigit():
            line = int(where)
            if line < 1:
                raise ValueError(text)
            return cls(path, line, hit)
        if not ANCHOR.match(where):
            raise ValueError(text)
        return cls(path, resolve_anchor(path, where, text), hit, anchor=where)

    @property
    def spec(self) -> str:
        return f"l:{self.path}:{self.anchor or self.line}:{self.hit}"

    def validate(self, designs: Sequence[DesignLike], workers: int) -> None:
        for design in designs:
            if design.module is None:
                raise KilltestError(f"kill point {self.spec}: design {design.name!r} is not a Python module, so its"
                                    " lines cannot be traced; use request (r5) or timed (t0.4) kill points")

    @property
    def needs_own_start(self) -> bool:
        return True  # the tracer is how its start is spawned

    def start_options(self, values: Mapping[str, str] | None = None) -> StartOptions:
        return StartOptions(kill_at_line=(os.path.join(PROJECT_ROOT, self.path), self.line, self.hit))


def resolve_anchor(path: str, where: str, text: str) -> int:
    """The absolute line `NAME[+K]` names in `path`; a one-line KilltestError when it names none."""
    found = ANCHOR.match(where)
    assert found is not None
    name, offset = found["name"], int(found["offset"] or 0)
    source, tree = _read(path, text)
    functions = functions_in(tree)
    matches = [node for qualname, node in functions.items() if qualname == name]
    matches = matches or [node for qualname, node in functions.items() if qualname.rsplit(".", 1)[-1] == name]
    if len(matches) > 1:
        raise KilltestError(f"kill point {text!r}: {path} has {len(matches)} functions named {name!r};"
                            " name one as Class.method or outer.inner")
    if matches:
        first, last = matches[0].lineno, matches[0].end_lineno or matches[0].lineno
        what = f"def {name}"
    else:
        marked = [n for n, line in enumerate(source.splitlines(), 1)
                  if (m := MARKER.search(line)) and m["name"] == name]
        if not marked:
            raise KilltestError(f"kill point {text!r}: {path} has no function or '# killtest: {name}' marker named"
                                f" {name!r}; its functions: {', '.join(functions) or 'none'}")
        first = marked[0]
        around = [node for node in functions.values() if node.lineno <= first <= (node.end_lineno or node.lineno)]
        last = min((node.end_lineno or node.lineno for node in around), default=len(source.splitlines()))
        what = f"the marker {name!r}"
    if first + offset > last:
        raise KilltestError(f"kill point {text!r}: {name}+{offset} is outside {what} (lines {first}-{last} of"
                            f" {path}: offsets 0-{last - first})")
    return first + offset


def anchor_for(path: str, line: int) -> str | None:
    """`function+offset` for an absolute line of `path`: the innermost function holding it, None outside any."""
    _, tree = _read(path, f"l:{path}:{line}")
    holding = [(qualname, node) for qualname, node in functions_in(tree).items()
               if node.lineno <= line <= (node.end_lineno or node.lineno)]
    if not holding:
        return None
    qualname, node = max(holding, key=lambda item: item[1].lineno)
    simple = qualname.rsplit(".", 1)[-1]
    unique = sum(1 for q in functions_in(tree) if q.rsplit(".", 1)[-1] == simple) == 1
    return f"{simple if unique else qualname}+{line - node.lineno}"


def functions_in(tree: ast.AST) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function and method of a module by its dotted name (`complete`, `Spider.parse`, `outer.inner`)."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.setdefault(prefix + child.name, child)
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _read(path: str, text: str) -> tuple[str, ast.Module]:
    try:
        with open(os.path.join(PROJECT_ROOT, path), encoding="utf-8") as src:
            source = src.read()
        return source, ast.parse(source)
    except OSError as error:
        raise KilltestError(f"kill point {text!r}: cannot read {path}: {error.strerror}") from None
    except SyntaxError as error:
        raise KilltestError(f"kill point {text!r}: {path}:{error.lineno}: {error.msg}") from None
