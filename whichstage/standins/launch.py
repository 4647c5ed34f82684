"""`whichstage standin PROVIDER [--project DIR] [--port N]`: a stand-in provider server on 127.0.0.1, answering
through the offline backends with the project's tools in mind, until Ctrl-C. It prints its base URL and the
variables that point a live run at it, so a team can rehearse a provider run with no key and no cost.

The stand-in's `rules` model is told the tools' roles (a real model reads only the tools' descriptions), which
are the project's: DIR's, not the current folder's.
"""
import argparse
import importlib
import sys
import threading
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from whichstage._util import console
from whichstage._util.exits import EXIT_BAD_INPUT, EXIT_INTERRUPTED

PROG = "whichstage standin"
DUMMY_KEY = "stand-in"  # any key but a rejected one is taken


@dataclass(frozen=True)
class Provider:
    """A stand-in (the module whichstage.standins.<its key in PROVIDERS>): the provider's name in messages, the
    variables its clients read for the base URL and the key (None: it takes none), and the models it serves by
    DOCS_* variable (an offline name where the provider has no such model)."""
    shown: str
    url_variable: str
    key_variable: Optional[str]
    models: dict[str, str]


PROVIDERS = {
    "gemini": Provider("Gemini", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_API_KEY",
                       {"DOCS_MODEL": "gemini-standin-chat", "DOCS_EMBEDDER": "gemini-standin-embed",
                        "DOCS_JUDGE": "gemini-standin-judge"}),
    "openai": Provider("OpenAI", "OPENAI_BASE_URL", "OPENAI_API_KEY",
                       {"DOCS_MODEL": "openai:gpt-4.1-mini", "DOCS_EMBEDDER": "openai:text-embedding-3-small",
                        "DOCS_JUDGE": "openai:gpt-4.1-mini"}),
    "anthropic": Provider("Anthropic", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY",
                          {"DOCS_MODEL": "anthropic:claude-haiku-4-5", "DOCS_EMBEDDER": "hash",  # no embeddings API
                           "DOCS_JUDGE": "anthropic:claude-haiku-4-5"}),
    "ollama": Provider("Ollama", "OLLAMA_HOST", None,
                       {"DOCS_MODEL": "ollama:standin-chat", "DOCS_EMBEDDER": "ollama:standin-embed",
                        "DOCS_JUDGE": "ollama:standin-judge"}),
}


def served(provider: Provider) -> list[str]:
    """The names the stand-in answers to: its models' names as the provider knows them."""
    from whichstage.providers.names import is_offline, model_of

    return list(dict.fromkeys(model_of(name) for name in provider.models.values() if not is_offline(name)))


@contextmanager
def started(name: str, roles: Optional[dict] = None, project: Optional[Path] = None,
            port: int = 0) -> Iterator[tuple[str, dict[str, str]]]:
    """The stand-in of provider `name` running on `port` (0: a free one) until the block ends, its rules model
    told `roles` (default: those of the project in `project`); its base URL and the variables to set."""
    from whichstage.standins.ollama import bundled_roles

    provider = PROVIDERS[name]
    serve = importlib.import_module(f"whichstage.standins.{name}").serve
    roles = bundled_roles(project or Path.cwd()) if roles is None else roles
    with serve(models=served(provider), roles=roles, port=port) as standin:
        variables = {provider.url_variable: standin.url,
                     **({provider.key_variable: DUMMY_KEY} if provider.key_variable else {}), **provider.models}
        yield standin.url, variables


def main(argv: Optional[list[str]] = None) -> int:
    """`whichstage standin ARGS`: its exit code (2 for bad input, 130 once stopped by Ctrl-C)."""
    parser = argparse.ArgumentParser(prog=PROG, description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("provider", metavar="PROVIDER", help=f"one of {', '.join(PROVIDERS)}")
    parser.add_argument("--project", metavar="DIR", default=".", help="the project folder (default: the current one)")
    parser.add_argument("--port", metavar="N", type=int, default=0, help="the port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    if args.provider not in PROVIDERS:
        print(f"{PROG}: {args.provider!r} is not a provider (valid: {', '.join(PROVIDERS)})", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not 0 <= args.port <= 65535:
        print(f"{PROG}: --port {args.port}: not a port (1 to 65535, or 0 for a free one)", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return serve_until_stopped(args.provider, Path(args.project).absolute(), args.port)
    except KeyboardInterrupt:
        print(f"{PROG}: stopped", file=sys.stderr)
        return EXIT_INTERRUPTED


def serve_until_stopped(name: str, folder: Path, port: int) -> int:
    """Start the stand-in, say where it is and what to set, and serve until Ctrl-C (KeyboardInterrupt)."""
    from whichstage.model.errors import InputError

    with ExitStack() as running:
        try:
            url, variables = running.enter_context(started(name, project=folder, port=port))
        except InputError as e:
            print(f"{PROG}: {e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except OSError as e:  # the port is taken, say
            print(f"{PROG}: --port {port}: cannot listen on 127.0.0.1:{port}: {e.strerror or e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        said = console.write_stdout("\n".join([
            f"{PROVIDERS[name].shown} stand-in for {folder} at {url} until Ctrl-C; to run through it, set:",
            *(f"export {variable}={value}" for variable, value in variables.items())]), command=PROG)
        if said is not None:
            return said
        threading.Event().wait()  # the server answers on its own thread
    return 0
