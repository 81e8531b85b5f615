"""Design: what a scraper under test is, read from its TOML spec, and how its store is read back.

Rule: this room describes designs and reads their stores; it never starts a process, a site or a
server and never judges a run. It imports only the floor (errors and the other floor
modules) and fixture_site's data (the catalog's field names), nothing from faults, running, check,
report, servers, bench or cli. Nothing is read at import: the built-in specs are read when a
design is first looked up, and the store kinds when a store is first checked or read.

- model.py: the Design, its StoreSpec and Launch, the placeholders a spec may use
- specfile.py: load_spec, what every key means (SPEC_KEYS, the source of the reference table),
  the one-line `FILE:LINE:` errors; spec_toml.py: the TOML with its lines, `extends` and `set_args`
- registry.py: the built-in designs of scrapers/ (built_in_designs, design_named), read lazily
- stores/: the store kinds, one module each (sqlite, jsonl, json_files, postgres, redis); each
  says what its spec needs, where its store lives and which private server it needs, and how its
  records, leases and counter are read. Adding a kind is one module there, its test, its doc line.
"""
