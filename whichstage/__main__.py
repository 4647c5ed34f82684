"""`python -m whichstage`: the `whichstage` command."""
from whichstage.cli import console_script

console_script()
