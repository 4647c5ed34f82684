"""A project: a folder with `evals.toml` naming its agent, cases, pages, records and the role of each tool.

`load(folder)` reads and checks `evals.toml` (unknown keys refused, one line naming file and key) and returns
a `Project`; `read_pages` and `read_records` read the corpus and the lookup records it names. Nothing here
imports the agent: `agent.py` builds it and reads its tools.
"""
import glob
import hashlib
import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from whichstage import json_text
from whichstage.criteria import score_threshold
from whichstage.dataset import InputError, read
from whichstage.stages import JUDGED, THRESHOLD

CONFIG = "evals.toml"
# The judged stages whose score is a share; facts (every expected fact stated, or not) and the behaviour
# judgements score 1 or 0, and a lower threshold could only let a failure pass.
SCALED = [stage for stage in JUDGED if stage != "facts"]
ROLES = ("retriever", "lookup", "action")
TOP_KEYS = ("agent", "cases", "calibration", "k", "pages", "sources", "rank", "tools", "criteria", "checks",
            "threshold", "thresholds")
TOOL_KEYS = {"retriever": ("role", "ids", "page", "page_pattern"), "lookup": ("role", "records", "key"),
             "action": ("role",)}
SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


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
    criteria: list = field(default_factory=list)  # judged criteria of its own (whichstage/criteria.py), in order
    checks: list[str] = field(default_factory=list)  # "module:function" specs, run in the behaviour stage
    threshold: float = THRESHOLD  # a judged stage's default threshold
    thresholds: dict[str, float] = field(default_factory=dict)  # a judged stage's own, from [thresholds]

    @property
    def config(self) -> Path:
        return self.folder / CONFIG

    def path(self, relative: str) -> Path:
        """A file evals.toml names, refused when it is a link to a file outside the project folder."""
        return inside(self.folder, self.folder / relative)

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


# Written by the harness, at the top of the project: a glob never matches a file in them.
OUTPUTS = ("runs", "recordings", "baselines", ".cache")
# Installed packages: a wildcard never walks into them, nor into a Python environment (a folder holding
# pyvenv.cfg); `*` and `**` already skip hidden folders (.venv, .git, .tox).
PACKAGES = ("node_modules", "site-packages", "__pycache__")


def files_of(folder: Path, patterns: list[str], key: str) -> list[Path]:
    """The files the globs match, each once, in the patterns' order; a glob that matches none is refused."""
    files: dict[Path, None] = {}
    for i, pattern in enumerate(patterns):
        found = files_matching(folder, pattern)
        if not found:
            raise fail(f"{key}[{i}]" if len(patterns) > 1 else key, f"{pattern!r} matches no file in {folder}"
                       + (f" ({', '.join(OUTPUTS)} are never read)" if is_output(pattern) else ""))
        files.update(dict.fromkeys(found))
    return list(files)


def files_matching(folder: Path, pattern: str) -> list[Path]:
    """The files a glob (`**` allowed) matches under `folder`, sorted: none the harness writes (OUTPUTS), none in
    an environment or packages folder the pattern does not name, and none that links outside the folder."""
    named, seen = set(Path(pattern).parts), {}

    def installed(up: Path) -> bool:
        if up not in seen:
            seen[up] = up.name not in named and (up.name in PACKAGES or (folder / up / "pyvenv.cfg").is_file())
        return seen[up]

    found = []
    for relative in sorted(Path(p) for p in glob.glob(pattern, root_dir=folder, recursive=True)):
        if not is_output(relative) and not any(map(installed, relative.parents[:-1])) \
                and (folder / relative).is_file():
            found.append(inside(folder, folder / relative))
    return found


def is_output(relative: Union[str, Path]) -> bool:
    parts = Path(relative).parts
    return bool(parts) and parts[0] in OUTPUTS


def outside(relative: str) -> bool:
    """A path or glob of evals.toml that leaves the project folder: absolute, or up through '..'."""
    return Path(relative).is_absolute() or os.path.normpath(relative).split(os.sep)[0] == ".."


def inside(folder: Path, path: Path) -> Path:
    """`path`, refused (one line naming it) when it resolves outside `folder`: a link to a file elsewhere."""
    target = path.resolve()
    if not target.is_relative_to(folder.resolve()):
        raise InputError(f"{Path(os.path.relpath(path, folder)).as_posix()}: a link to {target}, outside the project "
                         "folder: only files inside it are read")
    return path


def fail(key: str, message: str) -> InputError:
    return InputError(f"{CONFIG}: {key}: {message}")


def expect(value: Any, kind: type, key: str, what: str) -> Any:
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
        raise InputError(f"{CONFIG}: file not found in {folder} (start a project with `python evaluate.py "
                         "init DIR`)") from None
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
        from whichstage import criteria

        project.criteria = criteria.parse(config["criteria"], project.threshold)
    return project


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


# ---- the corpus and the records --------------------------------------------------------------------------

def read_pages(project: Project, validated) -> list[dict]:
    """The pages as dicts: `id`, `text`, optional `title` and `planted`, and any other metadata. `pages` is a
    JSON list of pages, or globs of markdown files (one page per file)."""
    spec = project.pages
    if spec is None:
        return []
    one_file = isinstance(spec, str) and spec.endswith(".json") and not glob.has_magic(spec)
    if one_file:
        path = project.path(spec)
        pages = read(path, spec)
        validated.check(path, "Pages", {"pages": pages}, label=spec)
    else:
        pages = markdown_pages(project, [spec] if isinstance(spec, str) else spec)
    seen = set()
    for i, page in enumerate(pages):
        at = f"{spec}: pages[{i}] ({page['id']})." if one_file else f"{page['id']}: "  # a page is a file
        if page["id"] in seen:
            raise InputError(f"{at}id: duplicate id")
        seen.add(page["id"])
        planted = page.get("planted", [])
        stray = [p for p in ([planted] if isinstance(planted, str) else planted) if p not in page["text"]]
        if stray:
            raise InputError(f"{at}planted: not in the page's text: {stray[0][:60]!r}")
    return pages


def markdown_pages(project: Project, patterns: list[str]) -> list[dict]:
    return [markdown_page(path, path.relative_to(project.folder).as_posix())
            for path in sorted(files_of(project.folder, patterns, "pages"))]


def markdown_page(path: Path, page_id: str) -> dict:
    """One markdown file as a page: YAML front matter as metadata, the first heading as its title."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{page_id}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    meta: dict = {}
    if text.startswith("---\n") or text.startswith("---\r\n"):
        end = re.search(r"^---\s*$", text[4:], re.M)
        if end is None:
            raise InputError(f"{page_id}: front matter: no closing '---' line")
        import yaml

        try:
            meta = yaml.safe_load(text[4:4 + end.start()]) or {}
        except (yaml.YAMLError, ValueError) as e:  # ValueError: a date like 2024-13-01, a too long integer
            said = None if isinstance(e, yaml.YAMLError) else json_text.long_integer(text)
            said = said or f"not valid YAML: {' '.join(str(e).split())[:200]}"
            raise InputError(f"{page_id}: front matter: {said}") from None
        if not isinstance(meta, dict):
            raise InputError(f"{page_id}: front matter: expected key: value lines")
        meta = json.loads(json.dumps(meta, default=str))  # dates and the like as text: metadata is JSON
        text = text[4 + end.end():].lstrip("\r\n")
    for key in ("id", "text"):
        if key in meta:
            raise InputError(f"{page_id}: front matter: {key}: set by the file (its path and its body)")
    planted = meta.get("planted", [])
    planted = [planted] if isinstance(planted, str) else planted
    if not isinstance(planted, list) or not all(isinstance(p, str) and p for p in planted):
        raise InputError(f"{page_id}: front matter: planted: expected a sentence or a list of sentences")
    if not text.strip():
        raise InputError(f"{page_id}: the page has no text")
    text = unwrapped(text)
    heading = next((m.group(1) for m in map(HEADING.match, text.splitlines()) if m), None)
    title = heading or meta.get("title") or path.stem
    return {**meta, "id": page_id, "title": str(title), "text": text, **({"planted": planted} if planted else {})}


BLOCK = re.compile(r"^\s*(?:#|[-*+]\s|\d+[.)]\s|>|```|~~~|\||<)|^\s{4}")


def unwrapped(text: str) -> str:
    """Markdown as it reads: the soft line breaks inside a paragraph as spaces, so a sentence wrapped over
    two lines is one sentence. Headings, list items, quotes, tables and fenced code keep their lines."""
    lines, out, fenced = text.splitlines(), [], False
    for line in lines:
        starts_block = bool(BLOCK.match(line))
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        joinable = out and out[-1].strip() and line.strip() and not starts_block and not fenced \
            and not BLOCK.match(out[-1]) and not out[-1].endswith("  ")
        if joinable:
            out[-1] = f"{out[-1].rstrip()} {line.strip()}"
        else:
            out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def read_records(project: Project) -> dict[str, dict]:
    """Each lookup tool's records: a JSON object whose keys are strings and whose values are objects."""
    found, by_file = {}, {}
    for name, role in project.roles.items():
        if role.role != "lookup":
            continue
        if role.records not in by_file:
            records = read(project.path(role.records), role.records)
            if not isinstance(records, dict):
                raise InputError(f"{role.records}: expected a JSON object of records by key")
            bad = next((k for k, v in records.items() if not isinstance(v, dict)), None)
            if bad is not None:
                raise InputError(f"{role.records}: {bad}: expected a JSON object (a record)")
            by_file[role.records] = records
        found[name] = by_file[role.records]
    return found

