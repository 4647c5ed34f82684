"""A run raises the garbage collector's thresholds and restores them once its reports are freed: restored while
the rows are alive, the collection the default thresholds start at once rescans every row (docs/measurements.md)."""
import gc


def rows_alive() -> list[dict]:
    """The report rows alive now (dicts with a case's first failing stage and expected tools)."""
    return [o for o in gc.get_objects() if type(o) is dict and "first_failure" in o and "expected_tools" in o]


def test_a_run_restores_the_collector_only_after_its_rows_are_freed(here, monkeypatch):
    from whichstage.cli import run as evaluate

    gc.collect()
    earlier = rows_alive()  # another test's, in this process: held, so no row of the run takes their ids
    known = {id(row) for row in earlier}
    callers, restored = gc.get_threshold(), []
    real = gc.set_threshold

    def noted(*thresholds):
        if thresholds == callers:  # set back
            restored.append(any(id(row) not in known for row in rows_alive()))
        real(*thresholds)

    monkeypatch.setattr(gc, "set_threshold", noted)
    assert evaluate.main(["--quiet"]) == 0
    assert restored == [False]
