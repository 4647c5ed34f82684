"""What a message may show: one line, and no secret. Standard library only; providers.py and live_calls.py
pass every name, URL and outside text through these before it reaches stderr, a report or a journal.

Every message is one line and holds no secret: no API key, no user:password@ of a URL, no query string
(where keys ride). Names and URLs from the environment go through printable/shown_url; text from outside
(a server's message, a transport's error) through outside_text.
"""
import os
import re
from urllib.parse import parse_qsl, quote

KEY_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY")  # Google's, in the order google_key reads them
HOSTED_KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")  # provider_settings.HOSTED's
URL_VARIABLES = ("GOOGLE_GEMINI_BASE_URL", "OLLAMA_HOST", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


def printable(text: str) -> str:
    """`text` as is when every character of it prints, else its repr(): a newline or a control character in a
    model name or URL never reaches a message raw."""
    return text if text.isprintable() else repr(text)


def split_url(url: str) -> tuple[str, str, str]:
    """scheme:// (or ""), user:password (or ""), and the rest. The userinfo ends at the last '@', so a password
    holding '/', '?' or '@' unencoded is still all of it (a base URL has no '@' past its host)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    userinfo, at, rest = rest.rpartition("@")
    return scheme + sep, userinfo if at else "", rest


def shown_url(url: str) -> str:
    """A URL as messages show it: no user:password@, no query or fragment, escaped when unprintable."""
    scheme, _, rest = split_url(url)
    return printable(scheme + re.split(r"[?#]", rest, maxsplit=1)[0].rstrip("/"))


def secrets() -> list[str]:
    """Values no message may show: the API keys (those named here and any *_API_KEY, which LangChain's other
    providers read), and the userinfo and query values of the URL variables."""
    named = (*KEY_VARIABLES, *HOSTED_KEY_VARIABLES)
    found = [value for variable, value in os.environ.items() if variable in named or variable.endswith("_API_KEY")]
    for variable in URL_VARIABLES:
        raw = os.environ.get(variable, "")
        userinfo = split_url(raw)[1]
        found += [userinfo, *userinfo.split(":", 1)]
        found += [value for _, value in parse_qsl(raw.partition("?")[2].partition("#")[0], keep_blank_values=True)]
    return sorted({s for s in (f.strip() for f in found) if len(s) >= 4}, key=len, reverse=True)


def outside_text(text) -> str:
    """Text a server or a transport wrote, fit for a message: one line (whitespace collapsed, any other
    unprintable character escaped), with every secret (as is, escaped or percent-encoded), any URL's
    user:password@ and the value of any key-like query parameter replaced by ***, and a quoted fragment of
    a secret too (httpx: "Invalid port: 'PA'" for a password holding '/')."""
    text = " ".join(str(text).split())
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    hidden = secrets()
    for secret in hidden:
        for form in dict.fromkeys((secret, repr(secret)[1:-1], repr(secret.encode())[2:-1], quote(secret, safe=""))):
            text = text.replace(form, "***")
    text = re.sub(r"(?<=://)[^\s/?#]*@", "", text)
    text = re.sub(r"(?i)([?&](?:key|api[_-]?key|token|access_token|password|secret)=)[^&#\s'\"]*", r"\1***", text)
    return re.sub(r"(['\"])([^'\"]+)\1",
                  lambda m: "'***'" if any(m.group(2) in s for s in hidden) else m.group(0), text)
