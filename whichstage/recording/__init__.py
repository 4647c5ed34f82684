"""The recording of paid calls ("cassette"), in which every entry carries the hashes of exactly what it read:
format (the line-per-entry file), journal (what a live run paid for, as it goes), lock (one writer at a time;
it loads portalocker, which a replay need not), store (lookup and save: `Cassette`, `Mode`), requests (the
requests a live run's calls sent, kept beside the entries and served instead of paid again; loaded by a live
run only), transport (the HTTP layer that keys and serves them). Its files are written and read through
_util/files.py. Each name is imported from its own module; this package re-exports none."""
