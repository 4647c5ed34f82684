"""The one typed model of what the harness reads and writes: `inputs` (a case set, pages, calibration cases),
`trace` (a recorded agent run and a judged verdict), `report` (a row, a report, a baseline), and `errors`
(a validation error as one line naming the field). Its pydantic modules are imported only where something is
validated; a replay reads recorded values with whichstage.model.replay_check instead (see its docstring)."""
