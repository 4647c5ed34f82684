"""The attribute names the readers use are the conventions' own: OpenLLMetry's, which its package (not in the
`traces` extra) names, are held to it here; and a replay imports neither conventions' package."""
import subprocess
import sys
from pathlib import Path

from traced import made, notes  # noqa: F401  (fixtures)
from whichstage.traces import otlp

ROOT = Path(__file__).parents[2]


def test_openllmetry_names_are_its_packages():
    from opentelemetry.semconv_ai import SpanAttributes

    for name in ("TRACELOOP_SPAN_KIND", "TRACELOOP_ENTITY_NAME", "TRACELOOP_ENTITY_INPUT", "TRACELOOP_ENTITY_OUTPUT",
                 "TRACELOOP_ASSOCIATION_PROPERTIES"):
        assert getattr(otlp, name) == getattr(SpanAttributes, name)


def test_the_conventions_packages_are_imported_only_by_an_import(notes):
    code = ("import sys, whichstage.run.pipeline, whichstage.traces.importing; print(any(m.startswith(('openinference', 'opentelemetry.semconv')) for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=notes, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": ""}, check=True).stdout
    assert out.strip() == "False"


def test_an_import_without_the_traces_extra_says_how_to_install_it(made, notes, monkeypatch, capsys):
    from traced import one_line, whichstage_cli
    from whichstage.providers import backend_versions

    monkeypatch.setattr(backend_versions, "package_version",
                        lambda p: "not installed" if p == "openinference-semantic-conventions" else "1")
    assert whichstage_cli("import", str(made["openinference"])) == 2
    assert "needs openinference-semantic-conventions: install whichstage with its traces extra" in \
        one_line(capsys.readouterr().err)
