"""The command-line options of every command that records live calls: --live, --rerecord, --concurrency and
--quiet, and their checks."""
from whichstage.calls.pool import DEFAULT_CONCURRENCY, MAX_CONCURRENCY


def add_live_options(parser, calls: str) -> None:
    """--live, --rerecord, --concurrency and --quiet, the same for every command that records `calls`."""
    parser.add_argument("--live", action="store_true", help=f"make the {calls} that are not recorded yet")
    parser.add_argument("--rerecord", action="store_true", help=f"with --live: make every one of the {calls} again")
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY,
                        help=f"{calls} in flight at once (default {DEFAULT_CONCURRENCY}, at most {MAX_CONCURRENCY})")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def check_live_options(parser, args) -> None:
    if not 1 <= args.concurrency <= MAX_CONCURRENCY:
        parser.error(f"--concurrency must be from 1 to {MAX_CONCURRENCY}")
    if args.rerecord and not args.live:
        parser.error("--rerecord goes with --live")

