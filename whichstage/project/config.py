"""A project: a folder with `evals.toml` naming its agent, cases, pages, records and the role of each tool.

`load(folder)` reads and checks `evals.toml` (unknown keys refused, one line naming file and key) and returns
a `Project`; corpus.py reads the pages and records it names. Nothing here imports the agent: `agent.py`
builds it and reads its tools.
"""
import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from whichstage._util import jsontext as json_text
from whichstage.project.criteria import score_threshold
from whichstage.model.errors import InputError
from whichstage.project.paths import CONFIG, fail, files_of, inside, outside
from whichstage.model.stages import IN_CODE, OVERALL, RECHECK_WITHIN, SCALED, STAGES, THRESHOLD, TOLERANCE

ROLES = ("retriever", "lookup", "action")
TOP_KEYS = ("agent", "cases", "calibration", "k", "pages", "sources", "rank", "tools", "criteria", "checks",
            "threshold", "thresholds", "tolerance", "tolerances", "recheck_within")
TOOL_KEYS = {"retriever": ("role", "ids", "page", "page_pattern"), "lookup": ("role", "records", "key"),
             "action": ("role",)}
SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


@dataclass(frozen=True)
class ToolRole:
    """What evals.toml says of one tool: `retriever` (its output is ranked pages), `lookup` (it reads the
    record of `records` that its `key` argument names) or `action` (it has side effects: never run, proposed)."""
    name: str
    role: str
    records: Optional[str] = None
    key: Optional[str] = None
    ids: Optional[str] = None
    page: Optional[str] = None  # a retriever of chunks: the dotted path to each chunk's page
    page_pattern: Optional[str] = None  # ... or a regular expression over each chunk's id

    def keyed(self) -> dict:
        """The role as a trace's key holds it: without the page rule, which says how a trace is read, not
        what the agent did (declaring one re-reads the recorded traces, re-pays none)."""
        return {k: v for k, v in vars(self).items() if k not in ("page", "page_pattern")}


@dataclass
class Project:
    folder: Path
    agent: str
    cases: str = "cases.json"
    calibration: Optional[str] = None
    k: int = 3
    pages: Union[str, list[str], None] = None  # a JSON file, or globs of markdown files
    sources: list[str] = field(default_factory=list)
    rank: Optional[str] = None
    roles: dict[str, ToolRole] = field(default_factory=dict)
    criteria: list = field(default_factory=list)  # its own judged criteria (project/criteria.py), in order
    checks: list[str] = field(default_factory=list)  # "module:function" specs, run in the behaviour stage
    threshold: float = THRESHOLD  # a judged stage's default threshold
    thresholds: dict[str, float] = field(default_factory=dict)  # a judged stage's own, from [thresholds]
    tolerance: float = TOLERANCE  # the baseline gate: how far a judged stage's pass rate may drop
    tolerances: dict[str, float] = field(default_factory=dict)  # a stage's own, from [tolerances]
    recheck_within: float = RECHECK_WITHIN  # a failing judged verdict this near its threshold is judged again

    @property
    def config(self) -> Path:
        return self.folder / CONFIG

    def path(self, relative: str, key: str) -> Path:
        """The file evals.toml names at `key`, refused (naming the key) when it is missing, and when it is a link
        to a file outside the project folder."""
        path = inside(self.folder, self.folder / relative)
        if not path.exists():
            raise fail(key, f"{relative!r}: file not found in {self.folder}")
        return path

    def module_file(self, spec: str, key: Optional[str] = None) -> Path:
        """The file of a 'module:function' spec's module inside the project folder; `key` names the spec's
        evals.toml key in the error."""
        module = spec.split(":")[0].replace(".", "/")
        for candidate in (self.folder / f"{module}.py", self.folder / module / "__init__.py"):
            if candidate.is_file():
                return candidate
        key = key or ("agent" if spec == self.agent else "rank")
        raise InputError(f"{CONFIG}: {key}: no module {spec.split(':')[0]!r} in {self.folder} "
                         f"(looked for {module}.py)")

    def source_files(self) -> list[Path]:
        """The files the agent's behaviour depends on: `sources` (globs allowed), else the factory's module and
        the rank function's."""
        own = list(dict.fromkeys(self.module_file(spec) for spec in (self.agent, self.rank) if spec))
        own = [inside(self.folder, path) for path in own]  # a module linked from outside is refused
        if not self.sources:
            return own
        checks = {self.module_file(spec, "checks") for spec in self.checks} - set(own)
        return [path for path in files_of(self.folder, self.sources, "sources") if path not in checks]

    def sources_sha(self) -> str:
        """One hash of every source file's path (relative to the project) and bytes."""
        digest = hashlib.sha256()
        for path in self.source_files():
            digest.update(path.relative_to(self.folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()[:12]

    def role_of(self, tool: str) -> str:
        return self.roles[tool].role if tool in self.roles else "tool"

    def retrievers(self) -> list[str]:
        return [name for name, r in self.roles.items() if r.role == "retriever"]

    def page_rule(self) -> Optional[ToolRole]:
        """The first retriever that maps chunks to pages (`page` or `page_pattern`): how the ladder reads a
        rank function that ranks chunks."""
        return next((r for r in self.roles.values() if r.role == "retriever" and (r.page or r.page_pattern)), None)

    def threshold_of(self, stage: str) -> float:
        """The score at or above which a judged stage passes: a criterion's own, its [thresholds] entry, else
        `threshold`; THRESHOLD for a stage that scores 1 or 0 (facts, the behaviour judgements)."""
        own = next((c.threshold for c in self.criteria if c.name == stage), None)
        if own is not None:
            return own
        # the behaviour judgements and facts score 1 or 0: a lower threshold would only let a failure pass
        return self.thresholds.get(stage, self.threshold) if stage in SCALED else THRESHOLD

    def actions(self) -> list[str]:
        return [name for name, r in self.roles.items() if r.role == "action"]


def expect(value: Any, kind: Union[type, tuple[type, ...]], key: str, what: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise fail(key, f"expected {what}, got {value!r}")
    return value


def function_spec(config: dict, key: str) -> str:
    value = expect(config[key], str, key, 'a string "module:function"')
    if not SPEC.match(value):
        raise fail(key, f'{value!r} is not "module:function"')
    return value


def load(folder: Path) -> Project:
    """Read `folder/evals.toml`; any problem raises InputError naming the file and the key."""
    folder = Path(folder).absolute()
    path = folder / CONFIG
    if not folder.is_dir():
        raise InputError(f"{folder}: no such project folder")
    text = ""
    try:
        text = path.read_text(encoding="utf-8-sig")
        config = tomllib.loads(text)
    except FileNotFoundError:
        raise InputError(f"{CONFIG}: file not found in {folder} (pass --project DIR, or start a project with "
                         "`whichstage init DIR`)") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{CONFIG}: not valid TOML: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{CONFIG}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    except ValueError as e:  # an integer longer than Python converts
        raise InputError(f"{CONFIG}: {json_text.long_integer(text) or e}") from None
    unknown = [k for k in config if k not in TOP_KEYS]
    if unknown:
        raise fail(unknown[0], f"unknown key (valid: {', '.join(TOP_KEYS)})")
    if "agent" not in config:
        raise fail("agent", "missing: name the factory as agent = \"module:function\"")
    project = Project(folder=folder, agent=function_spec(config, "agent"))
    for key in ("cases", "calibration"):
        if key in config:
            setattr(project, key, relative_path(config[key], key))
    if "pages" in config:
        pages = config["pages"]
        project.pages = relative_path(pages, "pages") if isinstance(pages, str) else \
            paths(pages, "pages", "a JSON file, a glob of markdown files or a list of globs")
        if not project.pages:
            raise fail("pages", "an empty list: name the markdown files as globs, or leave pages out")
    if "k" in config:
        project.k = expect(config["k"], int, "k", "a whole number")
        if project.k < 1:
            raise fail("k", "must be at least 1")
    if "rank" in config:
        project.rank = function_spec(config, "rank")
    if "sources" in config:
        sources = config["sources"]
        project.sources = paths([sources] if isinstance(sources, str) else sources, "sources", "a list of paths")
    tools = expect(config.get("tools", {}), dict, "tools", "tables [tools.NAME]")
    for name, table in tools.items():
        project.roles[name] = tool_role(name, expect(table, dict, f"tools.{name}", "a table"))
    if "checks" in config:
        project.checks = check_specs(config["checks"])
    if "threshold" in config:
        project.threshold = score_threshold(config["threshold"], "threshold")
    if "thresholds" in config:
        project.thresholds = stage_thresholds(config["thresholds"])
    if "criteria" in config:
        from whichstage.project import criteria

        project.criteria = criteria.parse(config["criteria"], project.threshold)
    if "tolerance" in config:
        project.tolerance = share_of(config["tolerance"], "tolerance")
    if "tolerances" in config:
        project.tolerances = stage_tolerances(config["tolerances"], [c.name for c in project.criteria])
    if "recheck_within" in config:
        project.recheck_within = distance(config["recheck_within"], "recheck_within")
    return project


def share_of(value: Any, key: str) -> float:
    """A tolerance: a number from 0 to 1, the share of a stage's cases its pass rate may drop by."""
    expect(value, (int, float), key, "a number from 0 to 1")
    if not 0 <= value <= 1:
        raise fail(key, f"{value!r} is not from 0 to 1 (a share of the cases: 0.1 lets a pass rate drop 10 points)")
    return float(value)


def distance(value: Any, key: str) -> float:
    """A distance between scores: a number from 0 to 1 (0 turns what it bounds off)."""
    expect(value, (int, float), key, "a number from 0 to 1")
    if not 0 <= value <= 1:
        raise fail(key, f"{value!r} is not from 0 to 1 (a distance between scores: 0.1 rechecks a verdict within "
                        f"0.1 of its threshold, 0 none)")
    return float(value)


def stage_tolerances(value: Any, criteria: list[str]) -> dict[str, float]:
    """`[tolerances]`: a tolerance per judged stage (or `overall`); a stage decided in code has none."""
    table = expect(value, dict, "tolerances", "a table [tolerances] of stage = number")
    valid = [s for s in (*STAGES, *criteria, OVERALL) if s not in IN_CODE]
    for stage in table:
        if stage in IN_CODE:
            raise fail(f"tolerances.{stage}", f"decided in code: zero tolerance, each case held (valid: "
                       f"{', '.join(valid)})")
        if stage not in valid:
            raise fail(f"tolerances.{stage}", f"not a judged stage (valid: {', '.join(valid)})")
    return {stage: share_of(v, f"tolerances.{stage}") for stage, v in table.items()}


def check_specs(value: Any) -> list[str]:
    """`checks`: a "module:function" spec, or a list of them, each once."""
    specs = [value] if isinstance(value, str) else expect(value, list, "checks", 'a list of "module:function"')
    for i, spec in enumerate(specs):
        key = f"checks[{i}]" if not isinstance(value, str) else "checks"
        function_spec({key: spec}, key)
        if spec in specs[:i]:
            raise fail(key, f"{spec!r} is listed twice")
    return specs


def stage_thresholds(value: Any) -> dict[str, float]:
    """`[thresholds]`: a threshold per judged stage with a scaled score (SCALED)."""
    table = expect(value, dict, "thresholds", "a table [thresholds] of stage = number")
    unknown = [stage for stage in table if stage not in SCALED]
    if unknown:
        why = "scores 1 or 0, so it has no threshold" if unknown[0] == "facts" else "not a judged stage"
        raise fail(f"thresholds.{unknown[0]}", f"{why} (valid: {', '.join(SCALED)})")
    return {stage: score_threshold(v, f"thresholds.{stage}") for stage, v in table.items()}


def relative_path(value: Any, key: str) -> str:
    """A path or glob evals.toml names: a string, inside the project folder."""
    expect(value, str, key, "a path relative to the project folder")
    if outside(value):
        raise fail(key, f"{value!r} is outside the project folder: name a path inside it, relative to it")
    return value


def paths(value: Any, key: str, what: str) -> list[str]:
    """A list of paths or globs, each checked as relative_path checks one."""
    return [relative_path(v, f"{key}[{i}]") for i, v in enumerate(expect(value, list, key, what))]


def tool_role(name: str, table: dict) -> ToolRole:
    at = f"tools.{name}"
    role = table.get("role")
    valid = TOOL_KEYS[role] if role in ROLES else tuple(dict.fromkeys(k for keys in TOOL_KEYS.values() for k in keys))
    unknown = [k for k in table if k not in valid]
    if unknown:  # first: a misspelt `role` is this key, not a missing role
        kind = f"{'an' if role[0] in 'aeiou' else 'a'} {role}" if role in ROLES else "a tool"
        raise fail(f"{at}.{unknown[0]}", f"unknown key for {kind} (valid: {', '.join(valid)})")
    if role not in ROLES:
        raise fail(f"{at}.role", f"{'missing' if role is None else repr(role)}: must be one of {', '.join(ROLES)}")
    if role == "lookup":
        for key in ("records", "key"):
            if key not in table:
                raise fail(f"{at}.{key}", "missing: a lookup names its records file and the argument that "
                           "picks a record")
            expect(table[key], str, f"{at}.{key}", "a string")
        relative_path(table["records"], f"{at}.records")
        return ToolRole(name, role, records=table["records"], key=table["key"])
    ids, pattern = pattern_of(table, f"{at}.ids"), pattern_of(table, f"{at}.page_pattern")
    return ToolRole(name, role, ids=ids, page=page_path(table, at), page_pattern=pattern)


def pattern_of(table: dict, key: str) -> Optional[str]:
    """The regular expression a tool's key names, checked, or None."""
    value = table.get(key.rsplit(".", 1)[1])
    if value is None:
        return None
    expect(value, str, key, "a Python regular expression")
    try:
        re.compile(value)
    except re.error as e:
        raise fail(key, f"not a regular expression: {e}") from None
    return value


DOTTED = re.compile(r"^[\w-]+(?:\.[\w-]+)*$")


def page_path(table: dict, at: str) -> Optional[str]:
    """A retriever's `page`: the dotted path to a chunk's page (`metadata.source`), never with page_pattern."""
    value = table.get("page")
    if value is None:
        return None
    if "page_pattern" in table:
        raise fail(f"{at}.page", "set with page_pattern: a chunk's page is read by one rule, keep one of them")
    expect(value, str, f"{at}.page", 'a dotted path such as "metadata.source"')
    if not DOTTED.match(value):
        raise fail(f"{at}.page", f"{value!r} is not a dotted path such as \"metadata.source\" (for a regular "
                   "expression over the chunk's id, use page_pattern)")
    return value
