"""The `whichstage` console script: its subcommands are the scripts' commands, its messages name what the user
typed, and the project is the current folder."""
import pytest

from whichstage import cli


def test_without_a_command_it_runs_the_project_in_the_current_folder(here, capsys):
    assert cli.main(["--case", "backup"]) == 0
    assert "\n| backup | search_docs |" in capsys.readouterr().out


def test_a_folder_without_evals_toml_is_refused_in_one_line_naming_the_command(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("whichstage run: evals.toml: file not found in ")
    assert "whichstage init DIR" in err


def test_the_scripts_keep_their_own_names_in_messages(tmp_path, monkeypatch, capsys):
    from whichstage.cli import run as evaluate

    monkeypatch.chdir(tmp_path)
    cli.main(["run"])
    capsys.readouterr()
    assert evaluate.main([]) == 2  # after the console script ran in this process
    assert capsys.readouterr().err.startswith("evaluate.py: evals.toml: ")


def test_an_unknown_command_lists_the_valid_ones(capsys):
    assert cli.main(["frob"]) == 2
    assert capsys.readouterr().err == ("whichstage: 'frob' is not a command (valid: run, show, init, merge, "
                                       "calibrate, compare, ask, standin, cases, import)\n")


@pytest.mark.parametrize("command, script", [("calibrate", "calibrate"), ("compare", "compare")])
def test_each_command_is_its_scripts_command(command, script, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main([command, "--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: whichstage {command} ")


def test_run_help_names_every_provider_that_batches(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    batch = " ".join(capsys.readouterr().out.split("\n  --batch", 1)[1].split("\n  --")[0].split())
    assert "Batch API (Gemini, OpenAI or Anthropic)" in batch


def test_show_is_run_with_show(here, capsys):
    assert cli.main(["show", "backup"]) == 0
    assert "backup" in capsys.readouterr().out.splitlines()[0]


def test_show_without_a_case_is_refused_naming_what_is_missing(capsys):
    assert cli.main(["show"]) == 2
    assert capsys.readouterr().err == "whichstage show: name the case: whichstage show ID [run's options]\n"


def test_help_to_an_unwritable_stdout_is_one_line(monkeypatch, capsys):
    class Full:
        def write(self, text):
            raise OSError(28, "No space left on device")

        def flush(self):
            pass
    monkeypatch.setattr("sys.stdout", Full())
    assert cli.main(["--help"]) == 2
    assert capsys.readouterr().err == "whichstage: stdout: cannot write: No space left on device\n"


def test_init_names_the_next_command_as_the_user_called_it(tmp_path, capsys):
    from whichstage.cli import init

    assert cli.main(["init", str(tmp_path / "a")]) == 0
    assert "whichstage run --project " in capsys.readouterr().out
    assert init.main([str(tmp_path / "b")]) == 0
    assert "python evaluate.py --project " in capsys.readouterr().out
