"""CLI finish: rich help panels, -h, completion, readable placeholders, literal brackets."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from harness.cli.main import build_app
from harness.cli.metavars import readable_metavar


def invoke(*args: str) -> str:
    result = CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    return result.output


def test_dash_h_shows_rich_help_panels_with_readable_placeholders():
    text = invoke("run", "-h")
    assert "Usage: harness run" in text or "Usage: root run" in text
    assert "╭─ Options" in text  # rich_markup_mode panels
    assert "<list[str]>" not in text and "<str>" not in re.sub(r"\s+", " ", text.split("--help")[0])
    assert "KEY=VALUE" in text and re.search(r"--batch-size\s+N\b", text)
    assert "<fp32|fp16|bf16|fp8>" in text  # choices stay listed
    results_text = invoke("results", "show", "-h")
    assert "RUN_ID" in results_text and "{run_id}" not in results_text


def test_shell_completion_is_offered():
    assert "--install-completion" in invoke("--help")


def test_compare_help_examples_are_on_separate_lines():
    lines = [line.strip(" │") for line in invoke("compare", "-h").splitlines()]
    examples = [line for line in lines if line.startswith("harness compare ")]
    assert len(examples) == 4
    assert all(line.count("harness compare") == 1 for line in examples)


def test_list_formats_prints_brackets_literally():
    text = invoke("list", "formats")
    assert "[Train][Epoch" in text and "Epoch[E] Batch [B]" in text


def test_sweep_help_keeps_its_brackets():
    assert "[matrix]" in invoke("sweep", "-h")


def test_readable_metavar_by_shape():
    class Flag:
        is_flag, name = True, "json"

    class ClickLikeChoice:
        is_flag, name, type = False, "scale", type("Choice", (), {"choices": ["full", "smoke"]})()

    class ClickLikeInt:
        is_flag, name, type = False, "nproc", type("IntParamType", (), {})()

    assert readable_metavar(Flag()) == ""
    assert readable_metavar(ClickLikeChoice()) is None
    assert readable_metavar(ClickLikeInt()) == "N"


def _command_paths(group, prefix=()):
    for name, command in sorted((getattr(group, "commands", None) or {}).items()):
        yield (*prefix, name)
        yield from _command_paths(command, (*prefix, name))


def test_no_help_page_shows_a_python_type_or_braces_as_a_placeholder():
    import typer.main

    root = typer.main.get_command(build_app())
    paths = list(_command_paths(root))
    assert ("results", "show") in paths and ("compare",) in paths
    for path in paths:
        text = invoke(*path, "-h")
        placeholders = re.findall(r"<(?:str|bool|int|float|path|list\[[a-z]+\])>|\{[A-Z_]+\}", text)
        assert placeholders == [], f"harness {' '.join(path)} -h shows {placeholders}"
    assert "Usage: root results show [OPTIONS] RUN_ID" in invoke("results", "show", "-h") or \
        "results show [OPTIONS] RUN_ID" in invoke("results", "show", "-h")


def test_list_without_a_subcommand_prints_every_list():
    text = invoke("list")
    for title, row in (("Cases:", "gpt3_125M"), ("Frameworks:", "pytorch"), ("Vendors:", "cpu"),
                       ("Log formats:", "megatron")):
        assert title in text and row in text.split(title, 1)[1]


def test_help_paragraphs_flow_instead_of_breaking_where_the_source_wraps():
    from harness.cli.helptext import flowing

    text = "A summary wrapped\nin the source.\n\nExamples:\nharness run --case a\nharness run --case b"
    assert flowing(text) == ("A summary wrapped in the source.\n\n"
                             "Examples:\nharness run --case a\nharness run --case b")
    wide = CliRunner().invoke(build_app(), ["list", "-h"], env={"COLUMNS": "250"}).output
    assert "the frameworks that implement them; the headline cases first." in wide


def test_commands_are_top_level_functions_not_closures():
    import ast
    from pathlib import Path

    import harness.cli

    for path in Path(harness.cli.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef):
                nested = [inner.name for inner in ast.walk(node) if inner is not node
                          and isinstance(inner, ast.FunctionDef)
                          and any("command" in ast.unparse(d) or "callback" in ast.unparse(d)
                                  for d in inner.decorator_list)]
                assert nested == [], f"{path.name}: {node.name} defines commands {nested}"


def test_micro_batch_size_is_the_option_and_batch_size_its_alias(tmp_path):
    from harness.cli.main import main

    text = invoke("run", "-h")
    assert re.search(r"--micro-batch-size,--batch-size\s+N\b", text)
    for option in ("--micro-batch-size", "--batch-size"):
        out = tmp_path / option.strip("-")
        assert main(["sweep", "--case", "gpt3_125M", "--scale", "smoke", option, "2,4",
                     "--dry-run", "--output", str(out)]) == 0


def _cut_mid_sentence(page: str) -> list[str]:
    """Lines of a help page (outside its option panels) that stop mid-sentence although the
    terminal had room: the rest of the sentence on the next line, at the same indent (prose)
    or deeper (a wrapped cell of an indented table)."""
    lines = [line.rstrip() for line in page.splitlines()]
    cut = []
    for line, following in zip(lines, lines[1:]):
        if not line.strip() or not following.strip() or line.lstrip().startswith(("│", "╭", "╰")) \
                or following.lstrip().startswith(("│", "╭", "╰", "harness ")):
            continue
        if not re.search(r"[a-z0-9,;(]$", line):
            continue
        indent, next_indent = (len(text) - len(text.lstrip()) for text in (line, following))
        table_row = re.match(r"\s+\S+\s{2,}\S", following)
        if next_indent > indent or (next_indent == indent and following.lstrip()[0].islower()
                                    and not table_row and len(line) < 150):
            cut.append(f"{line!r} / {following.strip()!r}")
    return cut


def test_no_help_page_breaks_a_sentence_where_the_source_wraps():
    import typer.main

    assert _cut_mid_sentence("  a   first row of a table\n      that goes on") != []
    assert _cut_mid_sentence("A sentence cut\nin two.") != []
    assert _cut_mid_sentence("A sentence.\n  a   row\n  b   row") == []
    root = typer.main.get_command(build_app())
    for path in [(), *_command_paths(root)]:
        page = CliRunner().invoke(build_app(), [*path, "-h"], env={"COLUMNS": "250"}).output
        assert _cut_mid_sentence(page) == [], f"harness {' '.join(path)} -h"
