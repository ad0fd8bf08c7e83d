"""The interface of a log format; plugins register instances via ``register_log_formats``."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import Any

from harness.models.logs import ParsedLog, StepRecord


class LogParser(ABC):
    """Stateful line-by-line parser: constant memory whatever the size of the log."""

    @abstractmethod
    def feed(self, line: str) -> StepRecord | None:
        """Consume one line; return the step it completed, if any."""

    @abstractmethod
    def finish(self) -> ParsedLog:
        """Everything parsed so far."""


class LogFormat(ABC):
    """A family of log lines, e.g. Megatron-LM iteration lines.

    A format names itself, its unit, the framework that writes it and its default aggregation
    method, says whether a line is one of its own (``detect``), and names the class of its
    line-by-line parser (``parser``), which ``new_parser`` builds with the format's name and
    unit. It declares them in its class statement, its docstring being its description::

        class MyFormat(LogFormat, name="myfw", unit="samples/s", parser=MyParser):
            \"\"\"MyFw step lines: 'step N ... X samples/s'\"\"\"

            def detect(self, line): ...

    Class attributes of the same names (``name = "myfw"``, ``description = ...``) work too.
    """

    name: str = ""
    description: str = ""
    unit: str | None = None
    framework: str | None = None
    default_method: str = "mean-after-warmup"
    #: The parser class; built as ``parser(format_name=name, default_unit=unit, **hints)``.
    parser: type[LogParser] | None = None

    def __init_subclass__(cls, *, name: str | None = None, unit: str | None = None,
                          framework: str | None = None, default_method: str | None = None,
                          parser: type[LogParser] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = {"name": name, "unit": unit, "framework": framework,
                    "default_method": default_method, "parser": parser}
        for field, value in declared.items():
            if value is not None:
                setattr(cls, field, value)
        if "description" not in cls.__dict__ and cls.__doc__:
            # the docstring's lines joined into one (spacing within a line kept as written)
            cls.description = " ".join(line.strip() for line in inspect.cleandoc(cls.__doc__).splitlines())

    @abstractmethod
    def detect(self, line: str) -> bool:
        """True when this single line is characteristic of the format."""

    def new_parser(self, **hints: Any) -> LogParser:
        """A fresh parser; hints carry what the log may not say (seq_len, gpus, batch size)."""
        if self.parser is None:
            raise NotImplementedError(f"log format {self.name!r} names no parser class")
        return self.parser(format_name=self.name, default_unit=self.unit, **hints)

    def parse_file(self, path, **hints: Any) -> ParsedLog:
        parser = self.new_parser(**hints)
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                parser.feed(line)
        return parser.finish()
