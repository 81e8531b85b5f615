"""Read a design spec: a small TOML file that describes any scraper, in any language, to killtest.

    [design]
    name = "my-scraper"
    does_not_promise = ["bounded_requests"]   # held to every other promise (harness/promises.py)
    command = ["node", "{spec_dir}/scraper.js", "--site", "{base_url}", "--db", "{store}"]

    [store]
    kind = "sqlite"
    path = "{work_dir}/records.sqlite"
    records = "SELECT sku, price, first_seen, last_changed FROM products"
    key = "sku"
    fields = ["price"]

Every mistake is one line that names the file and the line to fix. The placeholders are listed in
harness/design/model.py, every key with its meaning in SPEC_KEYS below (the reference docs are
generated from it), the store kinds in harness/design/stores/.

`extends = "other.toml"` (a path relative to the spec, at the top) starts from another spec's
[design] and [store] tables and replaces the keys this one sets. To change one argument of the
list it inherits without copying the list, a child gives `set_args`:

    extends = "queue_bullmq.toml"
    [design]
    name = "queue-bullmq-2h"
    set_args = { "--lock-ms" = "120000", "--renew-ms" = "30000" }

Each `"FLAG" = "VALUE"` replaces the word after the first FLAG in the inherited `args` (or `command`,
for a design without args), or rewrites a `FLAG=OLD` word to `FLAG=VALUE`; a FLAG the list does not
hold is appended with its value. `"FLAG" = true` appends a flag that takes no value (such as
`"--trust-the-set" = true`), unless the list already holds it. Changes apply in the order written,
to the child's own `args` if it gives some; every argument the child does not name stays as the
base spec has it, so an argument the base gains later reaches every child.
"""

from __future__ import annotations

import os
import re

from killtest.fixture_site.catalog import TRUTH_FIELDS
from killtest.harness.design.model import SERVER_PLACEHOLDERS, Design, StoreSpec
from killtest.harness.design.site_spec import SITE_KEYS, read_site
from killtest.harness.design.spec_toml import SpecFile, set_argument
from killtest.harness.design.stores import kind_of
from killtest.harness.errors import KilltestError
from killtest.harness.promises import IDEMPOTENCE, WAIVABLE, Promise, promise_named, waivable_names

__all__ = ["DESIGN_KEYS", "SPEC_KEYS", "STORE_KEYS", "SpecFile", "load_spec", "set_argument"]

# Every key a spec's [design] and [store] tables may hold, with its meaning in one line: the source of
# the keys a spec is checked against and of the reference table in the docs, so the two cannot drift.
# The section "" holds the keys written at the top of the file, before any table.
SPEC_KEYS: dict[str, dict[str, str]] = {
    "": {
        "extends": "the path of another spec, relative to this one, whose [design] and [store] tables this one"
                   " starts from",
    },
    "design": {
        "name": "the design's name (letters, digits, '.', '_' and '-'); required",
        "does_not_promise": "the promises the design does not make, by name (see the promises table); every"
                            " other one is held. Left out: the design is held to every promise",
        "claims_idempotence": "the older switch, still read when does_not_promise is not given: false waives"
                              " no_duplicates, bounded_requests, truthful_changes and releases_leases; true waives"
                              " nothing",
        "control": "true for the control (the naive design): it promises nothing and must show what kills do",
        "module": "a Python design: the module run as `python -m MODULE ARGS` on killtest's interpreter, found in"
                  " the spec's folder, then the folder killtest runs in (give module or command)",
        "args": "a Python design's arguments, with placeholders",
        "command": "any other program: its argv, with placeholders, run in the spec's folder with the environment"
                   " killtest was given, nothing of killtest's added (give module or command)",
        "set_args": "a table { \"--flag\" = \"value\" } changing the args (or command) a spec extends:"
                    " replaces the flag's value or appends it; = true appends a flag without a value",
        "env": "environment variables for the design's process: a table of strings, with placeholders",
        "packages": "a command design's Python packages at exact pins ([\"scrapy==2.19.0\"]): built once, on first"
                    " use, into an env of their own (~/.cache/killtest/designs/), whose interpreter {python} then"
                    " names; never installed beside killtest or the user's own packages",
        "commit_path": "functions of the design's module where a crash matters most; explore kills at each line",
        "side_effects": "true when the design downloads files, sends webhooks or keeps a counter to check",
    },
    "store": {
        "kind": "which store kind reads the store: a module of harness/design/stores/ (sqlite, redis, ...)",
        "path": "the store's file or folder, usually under {work_dir}; kinds kept in a file need it",
        "records": "the query (sqlite, postgres), or the Redis hash of JSON records, giving key and fields",
        "key": "the column or JSON field holding the product's natural key (default sku)",
        "fields": "the site's fields the store holds: a list of names, or a table { site_field = \"column\" }"
                  " (default [\"price\"])",
        "written_at": "the column holding the design's time.time() of a record's first write",
        "changed_at": "the column holding the time.time() of the last change the design claims",
        "leases": "a query (or Redis list or set) of the paths claimed but not committed",
        "counter": "a query of one number the design keeps: how many products it holds",
        "files": "the folder the design downloads files to, with placeholders",
    },
}
# [servers]: the private servers the design keeps state in besides its store, each a table of its settings
# ({} for now); a run gives each one fresh, its address in the server's placeholder.
SPEC_KEYS["servers"] = {
    "redis": "declares a private Redis (redis = {}) the design keeps state in, whatever its store (a queue"
             " while its records go to a file): each run gets it flushed, its URL as {redis_url}",
    "postgres": "declares a private PostgreSQL (postgres = {}): each run gets a fresh database on it, its URL as"
                " {postgres_dsn}",
}
SPEC_KEYS["site"] = SITE_KEYS  # a recorded site (harness/design/site_spec.py)
DESIGN_KEYS = set(SPEC_KEYS["design"])
STORE_KEYS = set(SPEC_KEYS["store"])
# [zoo]: the scenario that exposes a zoo design's bug (harness/faults/zoo_scenarios.py)
SECTIONS = {"design", "store", "zoo", "site", "servers"}
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


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
    name = spec.required_string(design, "design", "name")
    if not NAME.match(name):
        raise spec.error("design", "name", f"design.name {name!r} may hold only letters, digits, '.', '_' and '-'")
    claims = design.get("claims_idempotence", True)
    if not isinstance(claims, bool):
        raise spec.error("design", "claims_idempotence", "design.claims_idempotence must be true or false")
    control = design.get("control", False)
    if not isinstance(control, bool):
        raise spec.error("design", "control", "design.control must be true or false")
    waived = _waived(spec, design, claims, control)
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
    for value in env.values():
        spec.check_placeholders("design", "env", value)
    packages = spec.strings(design, "design", "packages")
    unpinned = [p for p in packages if "==" not in p or p.count("==") != 1 or not p.split("==")[1].strip()]
    if unpinned or (packages and module is not None):
        raise spec.error("design", "packages", "design.packages goes with command (a module design runs on"
                                               " killtest's interpreter) and pins each package exactly, as"
                                               f" \"scrapy==2.19.0\"{': not ' + repr(unpinned[0]) if unpinned else ''}")
    spec_file = os.path.abspath(path)
    read_site(spec)  # a [site] table is checked now, so its mistakes are one line naming it
    args, commit_path = spec.strings(design, "design", "args"), spec.strings(design, "design", "commit_path")
    store = _store(spec)
    servers = _servers(spec, store)
    _check_fillable(spec, store, servers)
    return Design(
        name=name, store=store, claims_idempotence=not waived & IDEMPOTENCE, does_not_promise=waived,
        control=control, module=module,
        args=args, command_template=command, env=tuple(sorted(env.items())), commit_path=commit_path,
        side_effects=side_effects, spec_file=spec_file, packages=packages, servers=servers)


def _servers(spec: SpecFile, store: StoreSpec) -> tuple[str, ...]:
    """The servers `[servers]` declares, in the spec's order; the store's own server is not one of them."""
    table = spec.table("servers", set(SERVER_PLACEHOLDERS), required=False)
    own = kind_of(store.kind).server
    for name, settings in table.items():
        if settings != {}:
            raise spec.error("servers", name, f"servers.{name} is a table of its settings, and it has none yet:"
                                              f" write {name} = {{}}")
        if name == own:
            raise spec.error("servers", name, f"the {store.kind} store already lives in a private {name}, whose"
                                              f" address is {{dsn}}: leave out servers.{name}")
    return tuple(table)


def _check_fillable(spec: SpecFile, store: StoreSpec, servers: tuple[str, ...]) -> None:
    """Refuse a placeholder the design's runs would have nothing to fill with, at the line that uses it:
    {dsn} beside a store kept in a file, a server's address beside a spec that does not declare it."""
    fillable = {placeholder for name, placeholder in SERVER_PLACEHOLDERS.items() if name in servers}
    if kind_of(store.kind).server is not None:
        fillable.add("dsn")
    for section, key, name in spec.used:
        if name == "dsn" and name not in fillable:
            raise spec.error(section, key, f"{section}.{key} uses {{dsn}}, but a {store.kind} store lives in a file,"
                                           " so no server's address fills it; a design keeping state in a server"
                                           " declares it ([servers] redis = {}) and uses {redis_url}"
                                           " (postgres: {postgres_dsn})")
        server = next((s for s, placeholder in SERVER_PLACEHOLDERS.items() if placeholder == name), None)
        if server is not None and name not in fillable:
            fix = (f"its {server} store's address is {{dsn}}" if kind_of(store.kind).server == server
                   else f"declare it: [servers] {server} = {{}}")
            raise spec.error(section, key, f"{section}.{key} uses {{{name}}}, but the spec declares no {server}"
                                           f" server; {fix}")


def _waived(spec: SpecFile, design: dict, claims: bool, control: bool) -> frozenset[Promise]:
    """The promises the spec waives: none by default; all for a control; `does_not_promise` by name,
    or, in an older spec without it, what `claims_idempotence = false` always meant."""
    if control:
        if "does_not_promise" in design or design.get("claims_idempotence") is True:
            raise spec.error("design", "control", "a control (control = true) promises nothing: leave out"
                                                  " does_not_promise and claims_idempotence")
        return WAIVABLE
    if "does_not_promise" not in design:
        return frozenset() if claims else IDEMPOTENCE
    names = design["does_not_promise"]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise spec.error("design", "does_not_promise", "design.does_not_promise is a list of promise names, for"
                                                       " example [\"bounded_requests\"]; the names:"
                                                       f" {', '.join(waivable_names())}")
    waived = set()
    for name in names:
        promise = promise_named(name)
        if promise is None:
            raise spec.error("design", "does_not_promise", f"design.does_not_promise names {name!r}, which is not a"
                                                           f" promise a design can waive; the names:"
                                                           f" {', '.join(waivable_names())}")
        waived.add(promise)
    return frozenset(waived)


def _store(spec: SpecFile) -> StoreSpec:
    store = spec.table("store", STORE_KEYS)
    name = spec.required_string(store, "store", "kind")
    try:
        kind = kind_of(name)
    except KilltestError as error:
        raise spec.error("store", "kind", str(error)) from None
    path = spec.string(store, "store", "path")
    records = spec.string(store, "store", "records")
    leases = spec.string(store, "store", "leases")
    counter = spec.string(store, "store", "counter")
    files = spec.string(store, "store", "files")
    # The kind says which keys its spec needs and which it cannot use: a needed key missing is the
    # [store] table's mistake, a refused key given is its own line's.
    for key, rule in kind.spec_rules.items():
        if rule.needed and key not in store:
            raise spec.error("store", None, rule.message)
        if not rule.needed and key in store:
            raise spec.error("store", key, rule.message)
    return StoreSpec(kind=name, path=path or "", records=records or "", counter=counter, files=files,
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
