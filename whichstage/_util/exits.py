"""The commands' exit codes (EPILOG in whichstage/cli/run.py says what each means)."""
EXIT_REGRESSED, EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_TERMINATED = 1, 2, 3, 130, 143
