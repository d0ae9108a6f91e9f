"""The command line's everyday path (issue 23): the install that cannot pull in another project, `fedbench ui`'s
port check, `fedbench run`'s closing lines, `paper run`'s confirmation, `show --claims` and its filters, and the
help texts."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_distribution_is_not_the_package_index_fedbench():
    """Item 3: PyPI's `fedbench` 0.1.3 is another project; ours is `fedbench-repro`, imported and run as `fedbench`."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "fedbench-repro"
    assert project["scripts"] == {"fedbench": "fedbench.cli:main"}
    assert "ray" in project["optional-dependencies"]
    readme = (ROOT / "README.md").read_text()
    assert "pip install -e '.[ray]'" in readme and "pip install 'fedbench[ray]'" not in readme
