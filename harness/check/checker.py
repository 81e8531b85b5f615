"""Judge one run from its history and the site's ground truth; plain data out.

The history holds everything: starts, kills, requests, and the records the store held at the end.
`check_run` counts the figures (run_figures.py), then composes the named checks (named_checks.py)
into one verdict: valid, invalid or unknown, with a finding and a message per broken promise.
"""

from __future__ import annotations

from killtest.fixture_site.catalog import Catalog
from killtest.harness.check.categories import sort_records
from killtest.harness.check.drift import catalog_versions, served_to_final_crawl, site_change_times
from killtest.harness.check.kill_phases import coverage_gap, killed_starts
from killtest.harness.check.liveness import stalled_starts
from killtest.harness.check.named_checks import Evidence, compose
from killtest.harness.check.run_figures import count_figures
from killtest.harness.check.verdict import DesignTraits, RunVerdict
from killtest.harness.history import History
from killtest.harness.promises import Promise


def check_run(design: DesignTraits, run: int, history: History, catalog: Catalog) -> RunVerdict:
    """Count rows, records, requests and kills, and list every promise the design broke."""
    versions = catalog_versions(catalog, history)
    final = versions[-1]  # the store must match the site at the end
    records = sort_records(history, final.truth(), site_change_times(history), served_to_final_crawl(versions, history))
    verdict = count_figures(design.name, run, history, versions, records)
    composed = compose(Evidence(design, verdict, history, final, records))
    side_effects = composed.results.get("side_effects")
    if design.side_effects and side_effects is not None:
        verdict.side_effects = side_effects.figures
    verdict.stalled_starts = [pace.to_json() for pace in stalled_starts(history, verdict)]
    killed = killed_starts(history, {product.path for version in versions for product in version.products})
    verdict.killed_starts, verdict.coverage_gap = [start.to_json() for start in killed], coverage_gap(killed)
    verdict.findings = [finding.value for finding, _ in composed.findings]
    # Each problem names the design's promise it broke, so a reader of any output knows what was claimed;
    # a run that proved nothing says so in its own words (killtest.harness.promises.Promise.PROVES_SOMETHING).
    verdict.problems = [message if finding.promise is Promise.PROVES_SOMETHING else
                        f"{message} (broke {finding.promise.value})" for finding, message in composed.findings]
    verdict.checks = {name: result.validity.value for name, result in composed.results.items()}
    verdict.validity = composed.validity.value
    verdict.valid = composed.validity.value == "valid"
    return verdict
