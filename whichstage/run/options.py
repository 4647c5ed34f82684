"""A live run's options, in one frozen value: what `record` is asked to do (cli/run.py builds it from the
command line, api.py from its keywords)."""
import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

from whichstage.calls.options import DEFAULT_CONCURRENCY
from whichstage.model.dicts import CaseSetDict


@dataclass(frozen=True)
class RunOptions:
    """`model` under test; `concurrency` calls in flight; `rerecord` pays every entry again; `quiet` shows no
    progress; `split` is the report's; `repeats` runs of each case; `cases` a subset of the case set (--case);
    `shard` (I, N) records into the shard's own recording; `plan` calls nothing and says what would be called;
    `batch` sends the judge's calls through its Batch API; `judge` overrides DOCS_JUDGE; `reuse` names the judge
    of a recording whose traces and rankings this run reuses, read only (a second judge pays for its verdicts
    alone)."""
    model: str
    concurrency: int = DEFAULT_CONCURRENCY
    rerecord: bool = False
    quiet: bool = False
    split: str = "dev"
    repeats: Optional[int] = None
    cases: Optional[CaseSetDict] = None
    shard: Optional[tuple[int, int]] = None
    plan: bool = False
    batch: bool = False
    judge: Optional[str] = None
    reuse: Optional[str] = None

    def but(self, **changes: Any) -> "RunOptions":
        """The same options with `changes`."""
        return dataclasses.replace(self, **changes)
