"""`python calibrate.py`: check the judge against the project's hand-labelled calibration cases (here, the
bundled example's). The same command as `whichstage calibrate`."""
if __name__ == "__main__":
    from whichstage.cli import COMMANDS, script

    script("calibrate.py", COMMANDS["calibrate"])
