"""`python evaluate.py`: evaluate the project in the current folder (here, the bundled tracker example) stage by
stage and name each case's first failure; `--live` records. The same command as `whichstage run`."""
if __name__ == "__main__":
    from whichstage.cli import COMMANDS, script

    script("evaluate.py", COMMANDS["run"])
