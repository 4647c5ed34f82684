"""A project's inputs, loaded and checked: its cases, pages and records, and its agent's tools.

`load_inputs(project)` reads the pages and records evals.toml names (whichstage/project/config.py), reads the agent's
tools (whichstage/agent/factory.py) and checks the cases against all of them (whichstage/project/validate.py).
"""
from typing import Optional

from whichstage.model.dicts import CaseSetDict
from whichstage.agent import factory as agent
from whichstage.project import checks as own_checks
from whichstage.project.corpus import read_pages, read_records
from whichstage.project.validate import Validated, load_cases
from whichstage.project.config import Project


class Loaded:
    """A project's inputs, loaded and checked: cases, pages, records by lookup tool, and the agent's tools."""

    def __init__(self, project, cases: CaseSetDict, pages: list[dict], records: dict[str, dict], described,
                 checks: Optional[list] = None):
        self.project, self.cases, self.pages, self.records, self.described = project, cases, pages, records, described
        self.checks = checks or []  # the project's own checks, imported (whichstage.project.checks)


def load_inputs(project: Project) -> Loaded:
    """The project's cases, pages and records, validated, and its agent's tools (whichstage.agent.factory.describe)."""
    validated = Validated(project.folder)
    pages = read_pages(project, validated)
    records = read_records(project)
    described = agent.describe(project, pages, records)
    cases = load_cases(project.path(project.cases, "cases"), project.cases, {p["id"] for p in pages},
                       described.parameters(), project.retrievers(), validated)
    validated.save()
    return Loaded(project, cases, pages, records, described, own_checks.load(project))
