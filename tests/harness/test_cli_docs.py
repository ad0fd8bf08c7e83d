"""docs/cli.md is generated from the command-line app and must not go stale."""

from __future__ import annotations

from harness.cli_docs import DOC_PATH, help_blocks, main, render


def test_committed_cli_reference_matches_the_app():
    assert DOC_PATH.read_text(encoding="utf-8") == render(), (
        "docs/cli.md is stale: run `python -m harness.cli_docs`")


def test_every_command_has_a_section():
    import typer

    from harness.cli.main import build_app
    from harness.app import Harness

    root = typer.main.get_command(build_app(Harness.load(load_entrypoints=False)))
    text = render()
    for name, command in root.commands.items():
        assert f"## `harness {name}`" in text
        for sub in (getattr(command, "commands", None) or {}):
            assert f"### `harness {name} {sub}`" in text
            assert f"harness {name} {sub} [OPTIONS]" in text


def test_help_paragraphs_are_unwrapped_and_examples_kept_verbatim():
    text = ("Run [bold]one[/bold] thing,\nwrapped in the source.\n\n"
            "\b\nExamples:\n  harness run --case a\n  harness run --case b\n\n"
            "harness report  (results/ -> results/report/)\n\nA \\[matrix] table.")
    assert help_blocks(text) == [
        "Run one thing, wrapped in the source.",
        "```\nExamples:\n  harness run --case a\n  harness run --case b\n```",
        "```\nharness report  (results/ -> results/report/)\n```",
        "A [matrix] table.",
    ]


def test_check_flags_a_stale_page(tmp_path, monkeypatch, capsys):
    import harness.cli_docs as cli_docs

    stale = tmp_path / "cli.md"
    stale.write_text("# old\n", encoding="utf-8")
    monkeypatch.setattr(cli_docs, "DOC_PATH", stale)
    assert main(["--check"]) == 1
    assert "is stale" in capsys.readouterr().err
    assert main([]) == 0 and main(["--check"]) == 0
