"""A project's case set exported as a peer's file and imported from one (`whichstage cases`): DeepEval's goldens
or Ragas' samples (whichstage/project/peer_cases.py says how each field maps). An import is checked whole as the
case set is on load (against the schema, the pages and the agent's tools) before anything is written; a bad row
is refused in one line naming the file, its line or row, and the field. A row without a reference is a draft:
it goes to the drafts file beside the cases file (DRAFTS), with the placeholder reference the case set refuses,
until a person writes the right answer and moves it into the case set."""
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, cast

from whichstage._util.files import shown, write_atomic
from whichstage.model.errors import InputError
from whichstage.project import case_files, peer_cases
from whichstage.project.config import Project
from whichstage.project.validate import REFERENCE_PLACEHOLDER, Validated, checked_cases, read

DRAFTS = ".drafts"  # cases.json's drafts are cases.drafts.json


def drafts_path(project: Project) -> Path:
    """The file that holds the project's draft cases: its cases file's name with .drafts before the suffix."""
    cases = project.folder / project.cases
    return cases.with_name(f"{cases.stem}{DRAFTS}{cases.suffix}")


def page_texts(project: Project) -> dict[str, str]:
    """The project's pages' texts by id (the ideal context a peer's row carries)."""
    from whichstage.project.corpus import read_pages

    return {page["id"]: page["text"] for page in read_pages(project, Validated(project.folder))}


def case_set(project: Project) -> dict:
    """The project's case set as its file holds it (no defaults filled in), checked against the schema."""
    path = project.path(project.cases, "cases")
    cases = read(path, project.cases)
    Validated(project.folder).check(path, "CaseSet", cases, project.cases)
    return cases


def export_cases(project: Project, path: Path, fmt: Optional[str] = None, split: str = "all") -> int:
    """Write the project's cases of `split` (dev, holdout or all) to `path` as `fmt` (peer_cases.FORMATS; by
    default DeepEval's, CSV for a .csv file), atomically; how many were written."""
    fmt = case_files.format_of(Path(path), fmt)
    texts = page_texts(project)
    chosen = [c for c in case_set(project)["cases"] if split == "all" or c.get("split", "dev") == split]
    write_atomic(Path(path), case_files.rows_text((peer_cases.cells(c, texts, fmt) for c in chosen), fmt))
    return len(chosen)


@dataclass
class Imported:
    """What an import did: the cases added, updated (same id, other content) and unchanged, the drafts written,
    the context passages that named no page, and the files written."""
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    drafts: list[str] = field(default_factory=list)
    unmatched: int = 0
    written: list[Path] = field(default_factory=list)

    def text(self, cases_label: str, drafts_label: str) -> str:
        """One line: 'cases.json: 2 added, 1 updated, 35 unchanged; 1 draft in cases.drafts.json ...'."""
        line = f"{cases_label}: {len(self.added)} added, {len(self.updated)} updated, {len(self.unchanged)} unchanged"
        if self.drafts:
            line += (f"; {len(self.drafts)} draft{'s' if len(self.drafts) > 1 else ''} (no reference) in "
                     f"{drafts_label}: write each one's reference, then move it into {cases_label}")
        if self.unmatched:
            line += f"; {self.unmatched} context passage{'s' if self.unmatched > 1 else ''} matched no page, left out"
        return line + ("" if self.written else "; nothing to write")


def read_cases(path: Path, label: str, fmt: Optional[str], texts: dict[str, str],
               unmatched: list[str]) -> tuple[str, list[tuple[str, dict]]]:
    """The file's format and its rows as cases, each with where its row is; a draft's reference is None. Two
    rows naming one id in their metadata are refused; an id made from a row's name is made unique ('-2')."""
    fmt, rows = case_files.read_rows(path, label, fmt)
    found: list[tuple[str, dict]] = []
    seen: dict[str, str] = {}
    for number, (where, row) in enumerate(rows, start=1):
        def fail(column: str, message: str, where: str = where) -> InputError:
            return InputError(f"{label}: {where}: {column}: {message}")

        case = peer_cases.from_row(row, texts, fmt, fail, unmatched, number)
        cid = case["id"]
        if isinstance(cid, str) and cid in seen:
            if peer_cases.own_of(row, fmt, fail) is not None:
                raise InputError(f"{label}: {where} ({cid}): id: the same id as {seen[cid]}")
            suffix = 2
            while f"{cid}-{suffix}" in seen:
                suffix += 1
            case["id"] = cid = f"{cid}-{suffix}"
        seen[str(cid)] = where
        found.append((where, case))
    return fmt, found


def merged(existing: list[dict], imported: list[dict], replace: bool, done: Imported) -> list[dict]:
    """The case list after an import: the imported cases alone (`replace`), else the existing ones with each
    imported case in its id's place, and the new ones after; each keeps its id's field order where there was one."""
    before = {c.get("id"): c for c in existing}
    incoming = {c["id"]: peer_cases.ordered(c, before.get(c["id"])) for c in imported}
    for cid, case in incoming.items():
        (done.added if cid not in before else done.unchanged if before[cid] == case else done.updated).append(cid)
    if replace:
        return list(incoming.values())
    return [incoming.get(c.get("id"), c) for c in existing] + [c for cid, c in incoming.items() if cid not in before]


def checked(cases: dict, where_of: dict[int, str], label: str, into: str, check: Callable[[dict], Any]) -> None:
    """`check` the case set; a refusal of an imported case names its row in the imported file instead."""
    try:
        check(cases)
    except InputError as e:
        found = re.match(rf"^{re.escape(into)}: cases\[(\d+)\]", str(e))
        if found is None or int(found.group(1)) not in where_of:
            raise
        raise InputError(f"{label}: {where_of[int(found.group(1))]}{str(e)[found.end():]}") from None


def import_cases(project: Project, path: Path, fmt: Optional[str] = None, replace: bool = False) -> Imported:
    """Import a peer's file into the project's cases file (and its drafts file), checked whole first."""
    from whichstage.agent import factory as agent
    from whichstage.project.corpus import read_pages, read_records

    label, done, unmatched = shown(Path(path)), Imported(), cast(list[str], [])
    pages = read_pages(project, Validated(project.folder))
    texts = {page["id"]: page["text"] for page in pages}
    fmt, rows = read_cases(Path(path), label, fmt, texts, unmatched)
    done.unmatched = len(unmatched)
    cases_path, current = project.path(project.cases, "cases"), case_set(project)
    complete = [(where, c) for where, c in rows if c.get("reference") is not None]
    drafts = [(where, {**c, "reference": REFERENCE_PLACEHOLDER}) for where, c in rows if c.get("reference") is None]
    kept = {c.get("id") for c in current["cases"]} - ({c["id"] for _, c in complete} if replace else set())
    for where, draft in drafts:
        if draft["id"] in kept:
            raise InputError(f"{label}: {where} ({draft['id']}): {peer_cases.REFERENCE[peer_cases.peer_of(fmt)[0]]}: "
                             f"empty, and {project.cases} holds a case of this id: a draft replaces no case")
    new_cases = merged(current["cases"], [c for _, c in complete], replace, done)
    described = agent.describe(project, pages, read_records(project))
    tools, retrievers = described.parameters(), project.retrievers()
    page_ids = set(texts)

    def check_set(label_of: str, at: Path) -> Callable[[dict], Any]:
        return lambda cases: checked_cases(cases, at, label_of, page_ids, tools, retrievers, Validated(project.folder))

    index = {c["id"]: i for i, c in enumerate(new_cases)}
    updated_set = {**current, "cases": new_cases}
    checked(updated_set, {index[c["id"]]: where for where, c in complete}, label, project.cases,
            check_set(project.cases, cases_path))
    draft_file = drafts_path(project)
    existing = read(draft_file, draft_file.name)["cases"] if draft_file.exists() else []
    finished = {c["id"] for _, c in complete}  # a draft imported with its reference is a case now
    draft_cases = merged([c for c in existing if c.get("id") not in finished], [c for _, c in drafts], False,
                         Imported())
    if drafts:
        done.drafts = [c["id"] for _, c in drafts]
        stand_in = [{**c, "reference": "draft"} if c.get("reference") == REFERENCE_PLACEHOLDER else c
                    for c in draft_cases]
        rows_at = {c["id"]: where for where, c in drafts}
        at = {i: rows_at[c["id"]] for i, c in enumerate(stand_in) if c.get("id") in rows_at}
        checked({**current, "cases": stand_in}, at, label, draft_file.name, check_set(draft_file.name, draft_file))
    if list(map(list, new_cases)) != list(map(list, current["cases"])) or new_cases != current["cases"]:
        write_atomic(cases_path, json.dumps(updated_set, indent=2, ensure_ascii=False) + "\n")
        done.written.append(cases_path)
    if draft_cases != existing:
        if draft_cases:
            write_atomic(draft_file, json.dumps({**current, "cases": draft_cases}, indent=2, ensure_ascii=False)
                         + "\n")
        else:
            draft_file.unlink()
        done.written.append(draft_file)
    return done
