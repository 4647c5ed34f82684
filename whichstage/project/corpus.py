"""What a project's agent reads, as evals.toml names it: the pages (a JSON list, or markdown files with YAML
front matter, one page a file) and each lookup tool's records."""
import glob
import json
import re
from pathlib import Path
from typing import cast

from whichstage._util import jsontext as json_text
from whichstage.model.errors import InputError
from whichstage.project.validate import read
from whichstage.project.config import Project
from whichstage.project.paths import files_of

HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def read_pages(project: Project, validated) -> list[dict]:
    """The pages as dicts: `id`, `text`, optional `title` and `planted`, and any other metadata. `pages` is a
    JSON list of pages, or globs of markdown files (one page per file)."""
    spec = project.pages
    if spec is None:
        return []
    if isinstance(spec, str) and spec.endswith(".json") and not glob.has_magic(spec):
        one_file = True
        path = project.path(spec, "pages")
        pages = read(path, spec)
        validated.check(path, "Pages", {"pages": pages}, label=spec)
    else:
        one_file = False
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
    lines, fenced = text.splitlines(), False
    out: list[str] = []
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
    found: dict[str, dict] = {}
    by_file: dict[str, dict] = {}
    for name, role in project.roles.items():
        if role.role != "lookup":
            continue
        file = cast(str, role.records)  # a lookup always names its records file (config.tool_role)
        if file not in by_file:
            records = read(project.path(file, f"tools.{name}.records"), file)
            if not isinstance(records, dict):
                raise InputError(f"{file}: expected a JSON object of records by key")
            bad = next((k for k, v in records.items() if not isinstance(v, dict)), None)
            if bad is not None:
                raise InputError(f"{file}: {bad}: expected a JSON object (a record)")
            by_file[file] = records
        found[name] = by_file[file]
    return found
