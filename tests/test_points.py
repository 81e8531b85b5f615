"""The kill-point family: every kind parses its text, prints it back, validates itself and is registered."""

import re
from types import SimpleNamespace

import pytest

from killtest.harness.design.registry import design_named
from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import Fired, KillPoint, StartOptions, kinds, parse_point
from killtest.harness.faults.points.after_store_write import AfterStoreWrite
from killtest.harness.faults.points.first_request import AfterFirstRequest
from killtest.harness.faults.points.line import AtLine, anchor_for, resolve_anchor
from killtest.harness.faults.points.pause import Pause
from killtest.harness.faults.points.power_cut import PowerCut
from killtest.harness.faults.points.redeploy import Redeploy
from killtest.harness.faults.points.request import AtRequest
from killtest.harness.faults.points.server_restart import ServerRestart
from killtest.harness.faults.points.store_write import AtStoreWrite
from killtest.harness.faults.points.timed import AfterDelay
from killtest.harness.faults.schedule import parse_schedule, validate_schedule

ONE_OF_EACH = {"t0.4": AfterDelay(0.4), "t0.3@2": AfterDelay(0.3, worker=2), "r5": AtRequest(5),
               "r5+": AtRequest(5, after_response=True), "d0.5:0.1": Redeploy(0.5, 0.1),
               "d0.2:0@1": Redeploy(0.2, 0.0, worker=1), "s0.5": ServerRestart(0.5),
               "l:scrapers/idempotent.py:127:2": AtLine("scrapers/idempotent.py", 127, 2),
               "l:scrapers/idempotent.py:complete+8:2": AtLine("scrapers/idempotent.py", 127, 2), "w5": AtStoreWrite(5),
               "f0.4": AfterFirstRequest(0.4), "f0.4:8": AfterFirstRequest(0.4, 8.0)}


def complete_line() -> int:
    return next(n for n, line in enumerate(open("scrapers/idempotent.py"), 1) if line.startswith("def complete("))


def test_every_kind_is_registered_by_its_own_prefix():
    registered = {kind.PREFIX: kind for kind in kinds()}
    assert registered == {"t": AfterDelay, "r": AtRequest, "d": Redeploy, "s": ServerRestart, "l:": AtLine,
                          "w": AtStoreWrite, "p": Pause, "x": PowerCut, "f": AfterFirstRequest,
                          "aw": AfterStoreWrite}
    assert all(isinstance(kind.parse(text), KillPoint) for text, kind in
               [("t1", AfterDelay), ("r1", AtRequest), ("d1:0", Redeploy), ("s1", ServerRestart),
                ("l:scrapers/idempotent.py:1:1", AtLine), ("w1", AtStoreWrite), ("f1", AfterFirstRequest)])


@pytest.mark.parametrize("text", ONE_OF_EACH)
def test_each_kind_parses_its_text_and_prints_it_back(text):
    point = parse_point(text)
    assert point == ONE_OF_EACH[text]
    assert point.spec == text
    assert parse_point(point.spec) == point


def test_a_line_point_named_by_function_and_offset_is_the_absolute_line_below_the_def():
    point = parse_point("l:scrapers/idempotent.py:complete+8:2")
    assert point.line == complete_line() + 8 and point.hit == 2
    assert point.spec == "l:scrapers/idempotent.py:complete+8:2"  # it replays as it was written
    assert point.start_options() == StartOptions(kill_at_line=(point.start_options().kill_at_line[0],
                                                               complete_line() + 8, 2))
    assert parse_point("l:scrapers/idempotent.py:complete:1").line == complete_line()


def test_a_method_is_named_with_its_class_and_a_marker_by_its_comment(tmp_path, monkeypatch):
    import killtest.harness.faults.points.line as line_kind

    monkeypatch.setattr(line_kind, "PROJECT_ROOT", str(tmp_path))
    (tmp_path / "spider.py").write_text("class Spider:\n    def parse(self):\n        a = 1\n        return a\n\n"
                                        "def parse():\n    b = 2  # killtest: store-b\n    return b\n\n"
                                        "class A:\n    def run(self):\n        pass\n\n"
                                        "class B:\n    def run(self):\n        pass\n")
    with pytest.raises(KilltestError, match="2 functions named 'run'; name one as Class.method"):
        resolve_anchor("spider.py", "run+1", "l:spider.py:run+1:1")
    assert resolve_anchor("spider.py", "B.run+1", "x") == 16
    assert resolve_anchor("spider.py", "parse+1", "x") == 7  # the module's own function, not the method
    assert resolve_anchor("spider.py", "Spider.parse+1", "x") == 3
    assert resolve_anchor("spider.py", "store-b+1", "x") == 8
    with pytest.raises(KilltestError, match="outside the marker 'store-b'"):
        resolve_anchor("spider.py", "store-b+2", "x")
    assert anchor_for("spider.py", 3) == "Spider.parse+1"
    assert anchor_for("spider.py", 1) is None


def test_explore_names_lines_by_function_and_offset():
    assert anchor_for("scrapers/idempotent.py", complete_line() + 8) == "complete+8"


def test_a_design_lets_a_line_point_leave_out_its_file():
    point = parse_point("l:complete+8:3", design_named("idempotent"))
    assert point == AtLine("scrapers/idempotent.py", complete_line() + 8, 3)
    assert point.spec == "l:scrapers/idempotent.py:complete+8:3"


@pytest.mark.parametrize("text, message", [
    ("l:scrapers/idempotent.py:compleet+3:2", "has no function or '# killtest: compleet' marker named 'compleet'"),
    ("l:scrapers/idempotent.py:complete+99:2", "complete+99 is outside def complete"),
    ("l:scrapers/nowhere.py:complete+1:2", "cannot read scrapers/nowhere.py"),
])
def test_a_line_point_that_names_no_line_is_a_one_line_error(text, message):
    with pytest.raises(KilltestError, match=re.escape(message)) as error:
        parse_schedule(f"r5,{text}")
    assert "\n" not in str(error.value) and text in str(error.value)


def test_the_error_for_a_bad_point_lists_every_registered_form():
    with pytest.raises(KilltestError) as error:
        parse_point("q7")
    for kind in kinds():
        assert kind.FORM in str(error.value)
    assert "t, d or p points may end with @<worker>" in str(error.value)


def design(name="d", store="sqlite", module="killtest.scrapers.idempotent"):
    return SimpleNamespace(name=name, store=SimpleNamespace(kind=store), module=module)


@pytest.mark.parametrize("schedule, designs, workers, message", [
    ("t0.3@3", [design()], 2, "kill point t0.3@3 names worker 3, but each start has 2; give --workers 3 or more"),
    ("d0.3:0.1@2", [design()], 1, "names worker 2, but each start has 1"),
    ("s0.5", [design(store="postgres"), design("files", store="jsonl")], 1,
     "kill point s0.5 restarts the store's server, but design 'files' keeps a jsonl store with no server"),
    ("l:scrapers/idempotent.py:127:1", [design("node", module=None)], 1,
     "design 'node' is not a Python module, so its lines cannot be traced"),
])
def test_validation_refuses_a_point_the_designs_cannot_take(schedule, designs, workers, message):
    with pytest.raises(KilltestError, match=re.escape(message)):
        validate_schedule(parse_schedule(schedule), designs, workers)


def test_validation_passes_points_that_fit():
    validate_schedule(parse_schedule("t0.3@2,r5,s0.5,l:scrapers/idempotent.py:127:1"),
                      [design(store="postgres"), design("r", store="redis")], 2)


def test_the_runner_refuses_a_server_restart_without_a_server_to_restart():
    with pytest.raises(KilltestError, match="design 'd' has no store server to restart"):
        ServerRestart(0.5).check_runnable(design(), 1, can_restart_store=False)
    ServerRestart(0.5).check_runnable(design(), 1, can_restart_store=True)


class FakeTarget:
    def __init__(self):
        self.calls = []

    def kill(self):
        self.calls.append("kill")
        return -9

    def redeploy(self, grace_s):
        self.calls.append(f"redeploy {grace_s:g}")
        return 0

    def restart_worker(self, worker, grace_s):
        self.calls.append(f"restart worker {worker} grace {grace_s}")
        return -9, 4242

    def restart_store(self):
        self.calls.append("restart store")
        return 0.25


@pytest.mark.parametrize("text, calls, fired", [
    ("t0.4", ["kill"], Fired("SIGKILL", -9)),
    ("t0.4@2", ["restart worker 2 grace None"], Fired("SIGKILL", -9, False, {"worker": 2}, 4242)),
    ("d0.4:0.1", ["redeploy 0.1"], Fired("SIGTERM", 0)),
    ("d0.4:0.1@1", ["restart worker 1 grace 0.1"], Fired("SIGTERM", -9, False, {"worker": 1}, 4242)),
    ("s0.4", ["restart store", "kill"], Fired("SIGKILL", -9, fields={"server_restart_s": 0.25})),
])
def test_a_timed_point_waits_its_delay_then_acts_on_the_start(text, calls, fired):
    point, target = parse_point(text), FakeTarget()
    assert point.wait_s == 0.4
    assert point.fire(target) == fired
    assert target.calls == calls


def test_exact_points_fire_by_themselves():
    assert AtRequest(5).wait_s is None and AtLine("f.py", 3, 1).wait_s is None


@pytest.mark.fault("r")
@pytest.mark.parametrize("repeat", range(3))
def test_a_kill_at_the_first_request_lands_though_the_start_asks_before_it_is_watched(repeat, tmp_path):
    """r1 on a pre-forked start: the start asks for its first page at once, before the runner has told the
    trigger which start it is; the request waits for it, so the kill lands every time (it missed about
    six times in seven when the trigger skipped a due request of an unknown start)."""
    from killtest.api import explore

    # One job: no multiprocessing manager, whose resource tracker would outlive the test as its child.
    result = explore("zoo-done-before-record", only="r1", out=str(tmp_path), listing_pages=2, per_page=3, jobs=1)
    landed = [o["landed"] for o in result.data["outcomes"]]
    assert landed == [True], result.data["outcomes"]
