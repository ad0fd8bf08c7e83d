"""LogFormat: a format's fields declared in its class statement or as class attributes."""

from __future__ import annotations

from harness.logformat import LogFormat
from harness.logformats.megatron import MegatronFormat, MegatronParser
from harness.logparse.recorder import RecordingParser


class StepParser(RecordingParser):
    def feed(self, line):
        return self.record(step=int(line.split()[1]), throughput=1.0)


class DeclaredFormat(LogFormat, name="declared", unit="samples/s", framework="myfw",
                     default_method="harness", parser=StepParser):
    """MyFw step lines: 'step N  X samples/s'
    (two spaces kept as written)"""

    def detect(self, line: str) -> bool:
        return line.startswith("step ")


class AttributeFormat(LogFormat):
    """Not the description: the class sets one."""

    name = "attributes"
    description = "set as a class attribute"
    parser = StepParser

    def detect(self, line: str) -> bool:
        return False


def test_the_class_statement_declares_the_fields_and_the_docstring_describes():
    fmt = DeclaredFormat()
    assert (fmt.name, fmt.unit, fmt.framework, fmt.default_method, fmt.parser) == (
        "declared", "samples/s", "myfw", "harness", StepParser)
    assert fmt.description == "MyFw step lines: 'step N  X samples/s' (two spaces kept as written)"
    parser = fmt.new_parser()
    assert (parser.format_name, parser.default_unit) == ("declared", "samples/s")


def test_class_attributes_work_as_before_and_undeclared_fields_keep_their_defaults():
    fmt = AttributeFormat()
    assert (fmt.name, fmt.description, fmt.unit, fmt.framework, fmt.default_method) == (
        "attributes", "set as a class attribute", None, None, "mean-after-warmup")


def test_a_subclass_keeps_what_it_does_not_declare_again():
    class Renamed(MegatronFormat, name="renamed"):
        pass

    assert Renamed.name == "renamed" and MegatronFormat.name == "megatron"
    assert Renamed.description == MegatronFormat.description and Renamed.parser is MegatronParser
