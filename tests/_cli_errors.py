"""The command line's error contract, shared by the CLI tests: one line, exit status 2."""

import pytest

from sege_cvx.cli import main


def one_line_error(capsys, argv, *, quiet_stdout: bool = False) -> str:
    """Run ``sege-cvx argv``; check it ends with one line ``sege-cvx: error: ...`` on stderr,
    exit status 2 and no traceback (and, with ``quiet_stdout``, nothing on stdout); return it."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sege-cvx: error: "), captured.err
    assert "Traceback" not in captured.err + captured.out
    if quiet_stdout:
        assert captured.out == ""
    return lines[0]
