"""The documentation site (mkdocs.yml, docs/) builds in strict mode: a broken link, a missing
page or a page left out of the navigation fails the build, and so this test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[test]')")


def build(config_file: Path, site_dir: Path) -> None:
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    config = load_config(config_file=str(config_file), site_dir=str(site_dir), strict=True)
    mkdocs_build(config)


def test_docs_build_in_strict_mode(tmp_path):
    build(REPO / "mkdocs.yml", tmp_path / "site")
    assert (tmp_path / "site" / "cli" / "index.html").is_file()
    assert (tmp_path / "site" / "plugins" / "index.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path):
    from mkdocs.exceptions import Abort

    copy = tmp_path / "repo"
    shutil.copytree(REPO / "docs", copy / "docs")
    shutil.copy(REPO / "mkdocs.yml", copy / "mkdocs.yml")
    page = copy / "docs" / "index.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n[gone](no-such-page.md)\n", encoding="utf-8")
    with pytest.raises(Abort):
        build(copy / "mkdocs.yml", tmp_path / "site")
