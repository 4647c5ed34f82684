"""`python assistant.py [--project DIR] "question"`: run a project's agent once and print its trace as JSON,
with the pages each retriever call returned as the harness reads them."""
import argparse
import json
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent  # the default project: the bundled tracker example


def main(argv: Optional[list[str]] = None, description: str = __doc__) -> int:
    from harness.providers import DEFAULT_EMBEDDER, DEFAULT_MODEL

    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"""models, named as in evaluate.py --help:
  DOCS_MODEL     the agent's model (default {DEFAULT_MODEL})
  DOCS_EMBEDDER  the embedder (default {DEFAULT_EMBEDDER})
  offline: DOCS_MODEL=rules DOCS_EMBEDDER=hash python assistant.py "..."

exit codes: 0 done, 2 bad input or a model that cannot be reached, 3 the run failed""")
    parser.add_argument("question", help="the question to ask, in quotes")
    parser.add_argument("--project", metavar="DIR", help="the project folder (default: the bundled example)")
    args = parser.parse_args(argv)
    from cassette import printable_stdout
    from harness import project as projects
    from harness import providers
    from harness import agent
    from harness.dataset import InputError
    from harness.entries import Inputs
    from harness.inputs import load_inputs
    from harness.trace import Unreadable

    printable_stdout()
    model, embedder = providers.chat_model_name(), providers.embedder_name()
    try:
        loaded = load_inputs(projects.load(Path(args.project) if args.project else ROOT))
        providers.preflight([model, embedder])
        from harness.capture import run

        inputs = Inputs(loaded, model, embedder, providers.judge_name())
        trace = run(agent.builder(inputs, model, embedder)(None), args.question)
    except (providers.ProviderError, InputError) as e:
        print(f"assistant.py: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the agent's own failure, in one line
        print(f"assistant.py: the agent failed: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}",
              file=sys.stderr)
        return 3
    try:
        view = inputs.view(trace)
        trace["searches"], trace["context"] = view["searches"], view["context"]
    except Unreadable as e:
        trace["unreadable"] = str(e)
    print(json.dumps(trace, indent=2))
    return 0
