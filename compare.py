"""`python compare.py A.json B.json`: diff two runs case by case, with the exact McNemar test. The same
command as `whichstage compare`."""
if __name__ == "__main__":
    from whichstage.cli import COMMANDS, script

    script("compare.py", COMMANDS["compare"])
