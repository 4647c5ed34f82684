"""A run raises the garbage collector's thresholds and restores them once its reports are freed: restored while
the rows are alive, the collection the default thresholds start at once rescans every row (docs/measurements.md)."""
import gc


def row_alive() -> bool:
    """Whether a report row (a dict with a case's first failing stage and expected tools) is still alive."""
    return any(type(o) is dict and "first_failure" in o and "expected_tools" in o for o in gc.get_objects())


def test_a_run_restores_the_collector_only_after_its_rows_are_freed(here, monkeypatch):
    from whichstage import evaluate

    callers, restored = gc.get_threshold(), []
    real = gc.set_threshold

    def noted(*thresholds):
        if thresholds == callers:  # set back
            restored.append(row_alive())
        real(*thresholds)

    monkeypatch.setattr(gc, "set_threshold", noted)
    assert evaluate.main(["--quiet"]) == 0
    assert restored == [False]
